// Schemas of the user endpoints: /register, /token, /change-password, /me.
import { Type } from 'typebox';
import { TOKEN_PATTERN } from '../../domain/accounts/tokens.js';
import {
  CONDITIONAL_HEADERS,
  Element,
  ETAG,
  empty,
  FreeFormObject,
  json,
  LOCATION,
  notModified,
  requestBody,
} from './common.js';
import { problems } from './problems.js';

const TAGS = ['Users and tokens'];

const Identifier = Type.String({
  minLength: 1,
  description: 'The registration identifier (stored in the property register.uniqueIdentifier, default email).',
});
const Secret = (description: string) => Type.String({ minLength: 1, description });
/** These endpoints take their credentials from the body: no security requirement. */
const NO_SECURITY: Array<Record<string, string[]>> = [];

export const registerSchema = {
  operationId: 'register',
  summary: 'Register a user',
  tags: TAGS,
  security: NO_SECURITY,
  body: requestBody(
    Type.Object(
      {
        type: Type.Literal('User'),
        uniqueUserIdentifier: Identifier,
        password: Secret('At least register.minPasswordLength characters.'),
        data: Type.Optional(FreeFormObject("The user's other properties.")),
      },
      { additionalProperties: true },
    ),
    { type: 'User', uniqueUserIdentifier: 'ada@example.org', password: 'correct horse battery staple' },
  ),
  response: {
    201: empty('Registered; Location names the new User node.', { Location: LOCATION }),
    ...problems(400, 403, 429),
  },
};

const TokenResponse = Type.Object(
  {
    type: Type.Literal('_TokenResponse'),
    token: Type.String({
      pattern: TOKEN_PATTERN.source,
      description: 'Send it as Authorization: Bearer <token>. It is shown only in this response.',
    }),
  },
  { additionalProperties: false },
);

export const createTokenSchema = {
  operationId: 'createToken',
  summary: 'Log in: create a token from an identifier and a password',
  tags: TAGS,
  security: NO_SECURITY,
  body: requestBody(
    Type.Object(
      {
        type: Type.Literal('Token'),
        uniqueUserIdentifier: Identifier,
        password: Secret("The user's password."),
        lifetimeInSeconds: Type.Optional(
          Type.Integer({ description: 'Clamped to token.minLifetimeInSeconds..maxLifetimeInSeconds.' }),
        ),
        data: Type.Optional(FreeFormObject("The token's other properties.")),
      },
      { additionalProperties: true },
    ),
    { type: 'Token', uniqueUserIdentifier: 'ada@example.org', password: 'correct horse battery staple' },
  ),
  response: {
    201: json(
      'The token; Location names its Token node.',
      TokenResponse,
      { Location: LOCATION },
      {
        type: '_TokenResponse',
        token: 'secret-token:8TSv1Aga7Mzu4Kn7C2yMnD',
      },
    ),
    ...problems(400, 401, 429),
  },
};

const ConditionalHeaders = Type.Object(CONDITIONAL_HEADERS);

export const readTokenSchema = {
  operationId: 'getToken',
  summary: 'Read the Token node of the token sent (without the token itself)',
  tags: TAGS,
  headers: ConditionalHeaders,
  response: {
    200: json('The Token node.', Element, { ETag: ETAG }),
    304: notModified(),
    ...problems(400, 401, 403, 412),
  },
};

export const deleteTokenSchema = {
  operationId: 'deleteToken',
  summary: 'Log out: delete the token sent',
  tags: TAGS,
  response: { 204: empty('The token is deleted.'), ...problems(400, 401, 403) },
};

export const changePasswordSchema = {
  operationId: 'changePassword',
  summary: "Change a user's password (the current one in the body)",
  tags: TAGS,
  security: NO_SECURITY,
  body: requestBody(
    Type.Object(
      {
        type: Type.Literal('ActionChangePassword'),
        uniqueUserIdentifier: Identifier,
        currentPassword: Secret('The password now.'),
        newPassword: Secret('Another password, at least register.minPasswordLength characters.'),
      },
      { additionalProperties: true },
    ),
    {
      type: 'ActionChangePassword',
      uniqueUserIdentifier: 'ada@example.org',
      currentPassword: 'correct horse battery staple',
      newPassword: 'another long passphrase',
    },
  ),
  response: { 204: empty('Changed.'), ...problems(400, 401, 403, 429) },
};

export const meSchema = {
  operationId: 'getMe',
  summary: 'Read the User node of the caller (the anonymous user without a token)',
  tags: TAGS,
  headers: ConditionalHeaders,
  response: {
    200: json('The User node.', Element, { ETag: ETAG }),
    304: notModified(),
    ...problems(400, 401, 412),
  },
};
