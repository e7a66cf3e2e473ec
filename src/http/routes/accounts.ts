// User endpoints: /register, /token, /change-password, /me. Each translates HTTP into one Accounts call.

import { caller, conditionsOf, created, JSON_TYPE, noContent, sendJson } from '../reply.js';
import { operation, resource } from '../resource.js';
import type { RouteDeps } from '../route-deps.js';
import {
  changePasswordSchema,
  createTokenSchema,
  deleteTokenSchema,
  meSchema,
  readTokenSchema,
  registerSchema,
} from '../schemas/accounts.js';
import type { App } from '../types.js';

export default async function accountRoutes(app: App, { services }: RouteDeps) {
  const { accounts } = services;

  // These take their credentials from the body; an Authorization header plays no part in them.
  const credentialsInBody = { config: { authorization: 'ignored' as const } };

  resource(app, '/register', {
    POST: operation(
      registerSchema,
      async (request, reply) => created(reply, `/${await accounts.register(request.body, request.ip)}`),
      credentialsInBody,
    ),
  });

  resource(app, '/token', {
    POST: operation(
      createTokenSchema,
      async (request, reply) => {
        const { token, id } = await accounts.createToken(request.body, request.ip);
        return reply
          .code(201)
          .header('location', `/${id}`)
          .type(JSON_TYPE)
          .send(JSON.stringify({ type: '_TokenResponse', token }));
      },
      credentialsInBody,
    ),
    GET: operation(readTokenSchema, async (request, reply) =>
      sendJson(reply, await accounts.currentToken(await caller(services, request), conditionsOf(request))),
    ),
    DELETE: operation(deleteTokenSchema, async (request, reply) => {
      await accounts.deleteCurrentToken(await caller(services, request));
      return noContent(reply);
    }),
  });

  resource(app, '/change-password', {
    POST: operation(
      changePasswordSchema,
      async (request, reply) => {
        await accounts.changePassword(request.body, request.ip);
        return noContent(reply);
      },
      credentialsInBody,
    ),
  });

  resource(app, '/me', {
    GET: operation(meSchema, async (request, reply) =>
      sendJson(reply, await accounts.me(await caller(services, request), conditionsOf(request))),
    ),
  });
}
