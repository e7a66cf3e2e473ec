// Schemas of the element endpoints: `/`, `/<id>`, and the collections `/<id>/parents|children|related`.
import { Type } from 'typebox';
import {
  ALLOW,
  CONDITIONAL_HEADERS,
  Collection,
  ELEMENT_EXAMPLE,
  Element,
  ETAG,
  empty,
  FreeFormObject,
  IdParams,
  json,
  LOCATION,
  notModified,
  requestBody,
  Uuid,
} from './common.js';
import { problems } from './problems.js';

const TAGS = ['Elements'];

const PageQuery = Type.Object({
  page: Type.Optional(Type.String({ pattern: '^-?\\d+$', description: 'The page, from 1 (an integer; clamped).' })),
  pageSize: Type.Optional(
    Type.String({ pattern: '^-?\\d+$', description: 'Elements per page (an integer; clamped to pageSize.min..max).' }),
  ),
});

const ConditionalHeaders = Type.Object(CONDITIONAL_HEADERS);

const COLLECTION_ETAG = {
  ETag: {
    ...ETAG,
    'x-required': false,
    description: `${ETAG.description} Omitted when the collection has more elements than cache.etagUpperLimitInCollectionEndpoints.`,
  },
};

const COLLECTION_EXAMPLE = {
  type: '_PartialCollection',
  id: '/',
  totalNodes: 1,
  links: { first: '/', previous: null, next: null, last: '/' },
  nodes: [ELEMENT_EXAMPLE],
  relations: [],
};

const collectionResponses = (anchored: boolean) => ({
  200: json('One page of the collection.', Collection, COLLECTION_ETAG, COLLECTION_EXAMPLE),
  304: notModified(COLLECTION_ETAG),
  ...problems(400, 401, ...(anchored ? [404] : []), 412),
});

export const indexSchema = {
  operationId: 'getIndex',
  summary: 'The nodes the caller reaches in one hop (owned, its groups, shared with it)',
  tags: TAGS,
  querystring: PageQuery,
  headers: ConditionalHeaders,
  response: collectionResponses(false),
};

/** GET (and HEAD) of a collection under an element. */
export const collectionSchema = (operationId: string, summary: string) => ({
  operationId,
  summary,
  tags: TAGS,
  params: IdParams,
  querystring: PageQuery,
  headers: ConditionalHeaders,
  response: collectionResponses(true),
});

const NewElement = requestBody(
  Type.Object(
    {
      type: Type.String({
        description: "The element type (a letter, then letters, digits, '_' or '-'); User, Token, Upload are reserved.",
      }),
      data: Type.Optional(FreeFormObject('Its properties; names starting with _ and the reserved ones are refused.')),
      start: Type.Optional(Uuid('For a relation: the start element (with end).')),
      end: Type.Optional(Uuid('For a relation: the end element (with start).')),
    },
    { additionalProperties: true },
  ),
  { type: 'Document', data: { name: 'Report' } },
);

const CREATED = { 201: empty('Created; Location names the new element.', { Location: LOCATION }) };

export const createSchema = {
  operationId: 'createElement',
  summary: 'Create a node (owned by the caller), or a relation (with start and end)',
  tags: TAGS,
  headers: ConditionalHeaders,
  body: NewElement,
  response: { ...CREATED, ...problems(400, 401, 404, 412) },
};

export const createChildSchema = {
  operationId: 'createChild',
  summary: 'Create a child node of a node (owned by it)',
  tags: TAGS,
  params: IdParams,
  headers: ConditionalHeaders,
  body: NewElement,
  response: { ...CREATED, ...problems(400, 401, 404, 412) },
};

const ELEMENT_ALLOW = ALLOW('GET, HEAD, PUT, PATCH (with UPDATE), DELETE (with DELETE; never on a User node)');

export const readSchema = {
  operationId: 'getElement',
  summary: 'Read an element',
  tags: TAGS,
  params: IdParams,
  headers: ConditionalHeaders,
  response: {
    200: json('The element.', Element, { ETag: ETAG, Allow: ELEMENT_ALLOW }, ELEMENT_EXAMPLE),
    304: notModified({ ETag: ETAG, Allow: ELEMENT_ALLOW }),
    ...problems(400, 401, 404, 412),
  },
};

const Properties = (nullRemoves: boolean) =>
  requestBody(
    FreeFormObject(
      nullRemoves
        ? 'The properties to set; null removes a property. Other properties are kept.'
        : 'All the client properties of the element (not wrapped in data): the ones not given are removed.',
    ),
    nullRemoves ? { name: 'Renamed', draft: null } : { name: 'Report', pages: 12 },
  );

const updateSchema = (operationId: string, summary: string, nullRemoves: boolean) => ({
  operationId,
  summary,
  tags: TAGS,
  params: IdParams,
  headers: ConditionalHeaders,
  body: Properties(nullRemoves),
  response: { 204: empty('Changed.'), ...problems(400, 401, 404, 412) },
});

export const replaceSchema = updateSchema('replaceElement', "Replace an element's properties", false);
export const patchSchema = updateSchema('patchElement', "Change some of an element's properties", true);

export const deleteSchema = {
  operationId: 'deleteElement',
  summary: 'Delete an element (with its file and the relations at it)',
  tags: TAGS,
  params: IdParams,
  headers: ConditionalHeaders,
  response: { 204: empty('Deleted.'), ...problems(400, 401, 403, 404, 412) },
};

/** WebDAV's methods on an element: answered 501, not part of the interface (hidden from the document). */
export const webDavSchema = { hide: true, params: IdParams };
