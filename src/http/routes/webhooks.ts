// /webhooks: each endpoint parses its path ids and makes one call into the domain's Webhooks.
import type { FastifyReply } from 'fastify';
import type { PageRequest } from '../../domain/elements/collections.js';
import { notFound } from '../../errors.js';
import { type ElementId, parseElementId } from '../../values.js';
import { caller, JSON_TYPE, noContent } from '../reply.js';
import { operation, resource } from '../resource.js';
import type { RouteDeps } from '../route-deps.js';
import {
  createWebhookSchema,
  deleteWebhookSchema,
  deliveriesSchema,
  listWebhooksSchema,
  pingSchema,
  readWebhookSchema,
  redeliverSchema,
  rotateSecretSchema,
  updateWebhookSchema,
} from '../schemas/webhooks.js';
import type { App } from '../types.js';

/** A path id; anything else is a webhook that does not exist. */
function idOf(text: unknown): ElementId {
  const id = parseElementId(text);
  if (id === null) throw notFound();
  return id;
}

const send = (reply: FastifyReply, status: number, body: unknown) =>
  reply.code(status).type(JSON_TYPE).send(JSON.stringify(body));

export default async function webhookRoutes(app: App, { services }: RouteDeps) {
  const { webhooks } = services;
  const params = (request: { params: unknown }) => request.params as { id: string; deliveryId?: string };

  resource(app, '/webhooks', {
    POST: operation(createWebhookSchema, async (request, reply) => {
      const created = await webhooks.create(await caller(services, request), request.body);
      reply.header('location', `/webhooks/${created.id}`);
      return send(reply, 201, created);
    }),
    GET: operation(listWebhooksSchema, async (request, reply) =>
      send(reply, 200, await webhooks.list(await caller(services, request), request.query as PageRequest)),
    ),
  });
  resource(app, '/webhooks/:id', {
    GET: operation(readWebhookSchema, async (request, reply) => {
      const who = await caller(services, request);
      return send(reply, 200, await webhooks.get(who, idOf(params(request).id)));
    }),
    PATCH: operation(updateWebhookSchema, async (request, reply) => {
      const who = await caller(services, request);
      return send(reply, 200, await webhooks.update(who, idOf(params(request).id), request.body));
    }),
    DELETE: operation(deleteWebhookSchema, async (request, reply) => {
      await webhooks.remove(await caller(services, request), idOf(params(request).id));
      return noContent(reply);
    }),
  });
  resource(app, '/webhooks/:id/secret', {
    POST: operation(rotateSecretSchema, async (request, reply) => {
      const who = await caller(services, request);
      const id = idOf(params(request).id);
      return send(reply, 200, { id, ...(await webhooks.rotate(who, id)) });
    }),
  });
  resource(app, '/webhooks/:id/deliveries', {
    GET: operation(deliveriesSchema, async (request, reply) => {
      const who = await caller(services, request);
      const id = idOf(params(request).id);
      return send(reply, 200, await webhooks.deliveries(who, id, request.query as PageRequest));
    }),
  });
  resource(app, '/webhooks/:id/deliveries/:deliveryId/redeliver', {
    POST: operation(redeliverSchema, async (request, reply) => {
      const who = await caller(services, request);
      const { id, deliveryId } = params(request);
      return send(reply, 200, await webhooks.redeliver(who, idOf(id), idOf(deliveryId)));
    }),
  });
  resource(app, '/webhooks/:id/ping', {
    POST: operation(pingSchema, async (request, reply) => {
      const who = await caller(services, request);
      return send(reply, 200, await webhooks.ping(who, idOf(params(request).id)));
    }),
  });
}
