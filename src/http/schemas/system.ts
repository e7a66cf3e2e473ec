// Schemas of the system endpoints: the error documents, security.txt, the instance configuration, the graph structure.
import { Type } from 'typebox';
import type { ProblemSlug } from '../../errors.js';
import { PROBLEM_CONTENT_TYPE } from '../problems.js';
import { json } from './common.js';
import { problemSchema, problems } from './problems.js';

const TAGS = ['System'];

/** Served without credentials; a token that is sent must be valid (401 otherwise). */
const OPTIONAL_SECURITY: Array<Record<string, string[]>> = [{}, { bearer: [] }];

export const errorDocumentSchema = (slug: ProblemSlug, status: number) => ({
  operationId: `getError${slug.replace(/(^|-)([a-z])/g, (_m, _dash, c: string) => c.toUpperCase())}`,
  summary: `The canonical ${status} ${slug} problem`,
  tags: ['Problem types'],
  security: OPTIONAL_SECURITY,
  response: {
    200: {
      description: 'The problem every response of this type starts from.',
      content: { [PROBLEM_CONTENT_TYPE.split(';')[0]!]: { schema: problemSchema(slug) } },
    },
    ...problems(400, 401),
  },
});

export const securityTxtSchema = {
  operationId: 'getSecurityTxt',
  summary: 'The security disclosure file (RFC 9116)',
  tags: TAGS,
  security: OPTIONAL_SECURITY,
  response: {
    200: { description: 'The file.', content: { 'text/plain': { schema: Type.String() } } },
    ...problems(400, 401, 404),
  },
};

const Integer = Type.Integer({ minimum: 0 });

const InstanceConfiguration = Type.Object(
  {
    version: Type.Union([Type.String(), Type.Null()], { description: 'The interface version (null when hidden).' }),
    pageSize: Type.Object({ min: Integer, default: Integer, max: Integer }),
    register: Type.Object({
      enabled: Type.Boolean(),
      uniqueIdentifier: Type.String(),
      uniqueIdentifierRegex: Type.Union([Type.String(), Type.Literal(false)]),
    }),
    expression: Type.Object({ enabled: Type.Boolean(), maxLength: Integer }),
    file: Type.Object({
      maxFileSizeInBytes: Integer,
      uploadMinChunkSizeInBytes: Integer,
      uploadMaxChunkSizeInBytes: Integer,
      uploadChunkDigitsLength: Integer,
      uploadExpiresInSecondsAfterFirstRequest: Integer,
      expiredUploadCanBeDeletedAfterExpirationInSeconds: Integer,
    }),
  },
  { additionalProperties: false },
);

export const instanceConfigurationSchema = {
  operationId: 'getInstanceConfiguration',
  summary: "The instance's limits and settings that clients need",
  tags: TAGS,
  security: OPTIONAL_SECURITY,
  response: { 200: json('The configuration.', InstanceConfiguration), ...problems(400, 401, 403) },
};

const TypeNames = Type.Array(Type.String(), { description: 'Sorted.' });

export const graphStructureSchema = {
  operationId: 'getGraphStructure',
  summary: 'The node and relation types in use',
  tags: TAGS,
  security: OPTIONAL_SECURITY,
  response: {
    200: json(
      'The types.',
      Type.Object({ nodeTypes: TypeNames, relationTypes: TypeNames }, { additionalProperties: false }),
      undefined,
      { nodeTypes: ['Document', 'Group', 'User'], relationTypes: ['CREATED', 'OWNS'] },
    ),
    ...problems(400, 401),
  },
};
