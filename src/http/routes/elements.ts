// Element endpoints and collections. Each handler authenticates and makes one call into the domain.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PageRequest } from '../../domain/elements/collections.js';
import type { CollectionKind } from '../../domain/elements/types.js';
import { Problem } from '../../errors.js';
import type { Services } from '../../services.js';
import type { ElementId } from '../../values.js';
import { caller, conditionsOf, created, noContent, sendJson } from '../reply.js';
import { type Handler, operation, resource, WEBDAV_METHODS } from '../resource.js';
import { elementIdOf, parseElementIds } from '../route-context.js';
import type { RouteDeps } from '../route-deps.js';
import {
  collectionSchema,
  createChildSchema,
  createSchema,
  deleteSchema,
  indexSchema,
  patchSchema,
  readSchema,
  replaceSchema,
  webDavSchema,
} from '../schemas/elements.js';
import type { App } from '../types.js';

export default async function elementRoutes(app: App, { services }: RouteDeps) {
  const { elements } = services;
  const credentialsOf = (request: FastifyRequest) => services.accounts.credentials(request.headers.authorization);

  parseElementIds(app);
  const listPage = collectionPages(services);
  const webDav = notImplemented(services);

  resource(app, '/', {
    GET: operation(indexSchema, (request, reply) => listPage('index', null, request, request.query, reply)),
    POST: operation(createSchema, async (request, reply) =>
      created(
        reply,
        `/${await elements.create(credentialsOf(request), request.body, undefined, conditionsOf(request))}`,
      ),
    ),
  });

  resource(app, '/:id', {
    ...Object.fromEntries(WEBDAV_METHODS.map((method) => [method, webDav])),
    GET: operation(readSchema, async (request, reply) => {
      const { rendered, notModified, allow } = await elements.read(
        credentialsOf(request),
        elementIdOf(request),
        conditionsOf(request),
      );
      reply.header('allow', allow);
      return sendJson(reply, { ...rendered, notModified });
    }),
    POST: operation(createChildSchema, async (request, reply) =>
      created(
        reply,
        `/${await elements.create(credentialsOf(request), request.body, elementIdOf(request), conditionsOf(request))}`,
      ),
    ),
    PUT: operation(replaceSchema, async (request, reply) => {
      await elements.update(
        credentialsOf(request),
        elementIdOf(request),
        request.body,
        'replace',
        conditionsOf(request),
      );
      return noContent(reply);
    }),
    PATCH: operation(patchSchema, async (request, reply) => {
      await elements.update(credentialsOf(request), elementIdOf(request), request.body, 'merge', conditionsOf(request));
      return noContent(reply);
    }),
    DELETE: operation(deleteSchema, async (request, reply) => {
      await elements.delete(await caller(services, request), elementIdOf(request), conditionsOf(request));
      return noContent(reply);
    }),
  });

  const list = (kind: CollectionKind, operationId: string, summary: string) =>
    operation(collectionSchema(operationId, summary), (request, reply) =>
      listPage(kind, elementIdOf(request), request, request.query, reply),
    );
  resource(app, '/:id/parents', {
    GET: list('parents', 'getParents', 'The relations that grant access to an element, with their start elements'),
  });
  resource(app, '/:id/children', {
    GET: list('children', 'getChildren', 'The elements an element owns, with the OWNS relations'),
  });
  resource(app, '/:id/related', {
    GET: list(
      'related',
      'getRelated',
      'Every relation at an element, in both directions, with the elements at their other ends',
    ),
  });
}

/** Answers one page of a collection: the index (anchor null) or the parents, children or related of an element. */
function collectionPages(services: Services) {
  return async (
    kind: CollectionKind,
    anchor: ElementId | null,
    request: FastifyRequest,
    query: PageRequest,
    reply: FastifyReply,
  ) => {
    const path = request.url.split('?')[0]!;
    const credentials = services.accounts.credentials(request.headers.authorization);
    const now = services.clock.now();
    return sendJson(
      reply,
      await services.collections.list(credentials, now, kind, anchor, path, query, request.url, conditionsOf(request)),
    );
  };
}

/**
 * WebDAV's methods on an element: 501 not-implemented (the spec's slug), as in the reference implementation, once
 * the credentials are known to be good; answered before any body would be parsed.
 */
function notImplemented(services: Services): Handler {
  return operation(
    webDavSchema,
    async () => {
      throw new Problem('not-implemented');
    },
    {
      onRequest: async (request) => {
        await caller(services, request);
        throw new Problem('not-implemented', `${request.method} is not implemented on elements.`);
      },
    },
  );
}
