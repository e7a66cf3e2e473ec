// Element endpoints and collections. Each handler authenticates and makes one call into the domain.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PageRequest } from '../../domain/elements/collections.js';
import type { CollectionKind } from '../../domain/elements/types.js';
import { Problem } from '../../errors.js';
import type { RouteDeps } from '../app.js';
import { caller, conditionsOf, created, noContent, sendJson } from '../reply.js';
import { type Handler, resource, WEBDAV_METHODS } from '../resource.js';
import { rejectNonUuidIds } from '../route-context.js';
import type { App } from '../types.js';

type WithId = FastifyRequest<{ Params: { id: string }; Querystring: PageRequest }>;

export default async function elementRoutes(app: App, { services }: RouteDeps) {
  const { elements, collections } = services;

  rejectNonUuidIds(app);

  const list = (kind: CollectionKind) => async (request: FastifyRequest, reply: FastifyReply) => {
    const r = request as WithId;
    const path = r.url.split('?')[0]!;
    const anchor = kind === 'index' ? null : r.params.id;
    const credentials = services.accounts.credentials(r.headers.authorization);
    const now = services.clock.now();
    return sendJson(
      reply,
      await collections.list(credentials, now, kind, anchor, path, r.query, r.url, conditionsOf(r)),
    );
  };

  resource(app, '/', {
    GET: list('index'),
    POST: async (request, reply) =>
      created(
        reply,
        `/${await elements.create(services.accounts.credentials(request.headers.authorization), request.body, undefined, conditionsOf(request))}`,
      ),
  });

  // WebDAV's methods on an element: 501 not-implemented (the spec's slug), as in the reference implementation, once
  // the credentials are known to be good; answered before any body would be parsed.
  const notImplemented: Handler = {
    options: {
      onRequest: async (request) => {
        await caller(services, request);
        throw new Problem('not-implemented', `${request.method} is not implemented on elements.`);
      },
    },
    handler: async () => {
      throw new Problem('not-implemented');
    },
  };

  resource(app, '/:id', {
    ...Object.fromEntries(WEBDAV_METHODS.map((method) => [method, notImplemented])),
    GET: async (request, reply) => {
      const r = request as WithId;
      const credentials = services.accounts.credentials(r.headers.authorization);
      const { rendered, notModified } = await elements.read(credentials, r.params.id, conditionsOf(r));
      return sendJson(reply, { ...rendered, notModified });
    },
    POST: async (request, reply) => {
      const r = request as WithId;
      return created(
        reply,
        `/${await elements.create(services.accounts.credentials(r.headers.authorization), r.body, r.params.id, conditionsOf(r))}`,
      );
    },
    PUT: async (request, reply) => {
      const r = request as WithId;
      await elements.update(
        services.accounts.credentials(r.headers.authorization),
        r.params.id,
        r.body,
        'replace',
        conditionsOf(r),
      );
      return noContent(reply);
    },
    PATCH: async (request, reply) => {
      const r = request as WithId;
      await elements.update(
        services.accounts.credentials(r.headers.authorization),
        r.params.id,
        r.body,
        'merge',
        conditionsOf(r),
      );
      return noContent(reply);
    },
    DELETE: async (request, reply) => {
      const r = request as WithId;
      await elements.delete(await caller(services, r), r.params.id, conditionsOf(r));
      return noContent(reply);
    },
  });

  resource(app, '/:id/parents', { GET: list('parents') });
  resource(app, '/:id/children', { GET: list('children') });
  resource(app, '/:id/related', { GET: list('related') });
}
