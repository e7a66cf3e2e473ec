// Schema of GET /principals: the people and groups a signed-in user can share with.
import { Type } from 'typebox';
import { json, Uuid } from './common.js';
import { problems } from './problems.js';

const Principal = Type.Object(
  {
    id: Uuid('The User or group node.'),
    type: Type.String({ description: "The node's type: User, or a group's type (usually Group)." }),
    name: Type.Union([Type.String(), Type.Null()], { description: "Its 'name' property when a string, else null." }),
  },
  { additionalProperties: false },
);

export const principalsSchema = {
  operationId: 'findPrincipals',
  summary: 'Find the people and groups to share with, by exact identifier or name, or name them by id',
  description:
    'Exactly one of identifier or id. identifier: the User whose registration identifier it is (compared as log-in compares it) and the Users and groups (nodes some element IS_IN_GROUP in) whose name it is, trimmed, without case; at most 10. id (1 to 100, repeated): those of the ids that are Users or groups, in the order given. Signed-in users only (a token), a fixed number of look-ups per user and window (register.principalLookup). Identifiers are never returned.',
  tags: ['Users and tokens'],
  querystring: Type.Object({
    identifier: Type.Optional(Type.String({ description: 'An exact registration identifier or name.' })),
    id: Type.Optional(
      Type.Union([Type.String({ format: 'uuid' }), Type.Array(Type.String({ format: 'uuid' }))], {
        description: 'A User or group id; repeat the parameter for more (at most 100).',
      }),
    ),
  }),
  response: {
    200: json('The principals found (none: an empty list).', Type.Object({ items: Type.Array(Principal) }), undefined, {
      items: [{ id: '5f0c2a8e-3b1d-4c6e-9a7f-1e2d3c4b5a69', type: 'User', name: 'Alice' }],
    }),
    ...problems(400, 401, 429),
  },
};
