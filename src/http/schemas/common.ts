// Building blocks of the route schemas: ids, elements, collections, the headers responses carry, and the shape of a
// documented response. The route schemas describe each endpoint once: @fastify/swagger turns them into the OpenAPI
// document (openapi.ts) and the type provider types the handlers from them. Request content is parsed and validated
// by the domain (docs/api-schemas.md says why), so nothing here is compiled into a validator.
import { type TSchema, Type } from 'typebox';

/** A response as @fastify/swagger reads it: a description, the headers it sets, and its body by media type. */
export interface ResponseSpec {
  description: string;
  headers?: Record<string, HeaderSpec>;
  content?: Record<string, { schema: TSchema; example?: unknown }>;
  /** No body: @fastify/swagger writes no content for a response whose type is 'null'. */
  type?: 'null';
}

/** A response header: its schema, what it says, and whether every such response carries it. */
export interface HeaderSpec {
  type: 'string';
  description: string;
  pattern?: string;
  /** Read by openapi.ts, which turns it into the header object's `required`. */
  'x-required'?: boolean;
}

export const JSON_MEDIA = 'application/json';

export const header = (description: string, required = true, pattern?: string): HeaderSpec => ({
  type: 'string',
  description,
  ...(pattern ? { pattern } : {}),
  ...(required ? { 'x-required': true } : {}),
});

export const ETAG = header('A strong validator of the representation (send it in If-Match or If-None-Match).');
/** GET and HEAD of an element or its file: what this caller may do there (domain/elements/allowed-methods.ts). */
export const ALLOW = (writes: string) =>
  header(
    `The methods this caller may use on this path: GET, HEAD for a reader; ${writes} for one who may change it. It tells nothing the caller could not find out by trying each method.`,
  );
export const LOCATION = header('The path of the new or changed resource, relative to the service.');

/** A response with a JSON body. */
export const json = (
  description: string,
  schema: TSchema,
  headers?: Record<string, HeaderSpec>,
  example?: unknown,
): ResponseSpec => ({
  description,
  ...(headers ? { headers } : {}),
  content: { [JSON_MEDIA]: { schema, ...(example === undefined ? {} : { example }) } },
});

/** A response without a body. */
export const empty = (description: string, headers?: Record<string, HeaderSpec>): ResponseSpec => ({
  description,
  type: 'null',
  ...(headers ? { headers } : {}),
});

export const notModified = (headers: Record<string, HeaderSpec> = { ETag: ETAG }) =>
  empty('If-None-Match matched the current ETag: no body.', headers);

const EXAMPLE_ID = '5f0c2a8e-3b1d-4c6e-9a7f-1e2d3c4b5a69';

export const Uuid = (description: string) => Type.String({ format: 'uuid', description, examples: [EXAMPLE_ID] });

export const IdParams = Type.Object({
  id: Uuid('The element id (a UUID; letter case does not matter). Any other path segment answers 404.'),
});

const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 with a numeric offset.' });

/** Free-form JSON properties: any names (none starting with `_`), any JSON values. */
export const FreeFormObject = (description: string) => Type.Object({}, { additionalProperties: true, description });

const FileMeta = Type.Object(
  {
    contentLength: Type.Integer({ minimum: 0, description: 'Size in bytes.' }),
    extension: Type.String({ description: "From the upload's Content-Disposition filename; 'bin' if none." }),
    mimeType: Type.String({ description: 'Detected from the uploaded bytes.' }),
    hash: Type.Object({
      sha256: Type.Union([Type.String({ pattern: '^[0-9a-f]{64}$' }), Type.Null()], {
        description: 'Lowercase hex SHA-256; null for a file stored before hashes were kept.',
      }),
    }),
  },
  { description: 'The metadata of the file attached to an element.' },
);

const ElementData = Type.Object(
  {
    created: Timestamp,
    updated: Timestamp,
    hasFile: Type.Optional(Type.Literal(true)),
    file: Type.Optional(FileMeta),
  },
  {
    additionalProperties: true,
    description:
      "The element's properties: the client's, free-form, plus created, updated and (with a file) hasFile and file, set by the service.",
  },
);

export const Element = Type.Object(
  {
    type: Type.String({ description: 'The element type.' }),
    id: Uuid('The element id.'),
    start: Type.Optional(Uuid('A relation: the id of its start element.')),
    end: Type.Optional(Uuid('A relation: the id of its end element.')),
    data: ElementData,
    file: Type.Optional(FileMeta),
  },
  { additionalProperties: false, description: 'A node, or a relation (with start and end).' },
);

export const ELEMENT_EXAMPLE = {
  type: 'Document',
  id: EXAMPLE_ID,
  data: { name: 'Report', created: '2026-01-02T03:04:05+00:00', updated: '2026-01-02T03:04:05+00:00' },
};

const PathOrNull = Type.Union([Type.String(), Type.Null()]);

export const Collection = Type.Object(
  {
    type: Type.Literal('_PartialCollection'),
    id: Type.String({ description: 'The request path with its query string.' }),
    totalNodes: Type.Integer({ minimum: 0 }),
    links: Type.Object({ first: Type.String(), previous: PathOrNull, next: PathOrNull, last: Type.String() }),
    nodes: Type.Array(Element),
    relations: Type.Array(Element),
  },
  { additionalProperties: false },
);

/** Request headers of the conditional requests (If-Match, If-None-Match). */
export const CONDITIONAL_HEADERS = {
  'if-match': Type.Optional(
    Type.String({ description: 'Proceed only when an ETag listed (or *) is current: else 412.' }),
  ),
  'if-none-match': Type.Optional(
    Type.String({ description: 'On GET and HEAD 304 when an ETag listed (or *) matches; on other methods 412.' }),
  ),
};

/**
 * A JSON request body as documented. The handler hands it to the domain as it arrived (typed unknown): the domain
 * parses it and answers each violation with its own problem, in its order (credentials first), so no validator is
 * compiled from the schema.
 */
export const requestBody = (schema: TSchema, example: unknown) =>
  Type.Unsafe<unknown>({ ...schema, examples: [example] });

/** The schema of a HEAD route that runs a GET's handler: the GET's operation, answering without bodies. */
export function headOf<S extends { operationId?: string; summary?: string; response?: unknown }>(schema: S): S {
  const responses = Object.entries((schema.response ?? {}) as Record<string, ResponseSpec>);
  const response = Object.fromEntries(
    responses.map(([status, { content: _content, ...spec }]) => [status, { ...spec, type: 'null' }]),
  );
  // @fastify/swagger gives a HEAD route's operationId the suffix -head.
  return { ...schema, summary: `Headers only: ${schema.summary ?? ''}`, response };
}
