// Schemas of /webhooks (src/http/routes/webhooks.ts, docs/webhooks.md), and of what a delivery sends.
import { type TSchema, Type } from 'typebox';
import { CHANGES } from '../../domain/events/ports.js';
import { empty, json, LOCATION, requestBody, Uuid } from './common.js';
import { ElementEventData } from './events.js';
import { problems } from './problems.js';

const TAGS = ['Webhooks'];
const Change = Type.Union(CHANGES.map((c) => Type.Literal(c)));
const Time = Type.String({ description: 'ISO 8601, as element times are written.' });
const Nullable = (schema: TSchema) => Type.Union([schema, Type.Null()]);

const Delivery = Type.Object(
  {
    id: Uuid('The attempt.'),
    eventId: Type.String({ description: 'The webhook-id header: the same on every attempt of one event.' }),
    eventType: Type.String({ description: 'element.<change>, webhook.ping or webhook.reset.' }),
    attempted: Time,
    attempt: Type.Integer({ minimum: 1, description: 'The attempt number of this event.' }),
    status: Nullable(Type.Integer({ description: "The receiver's HTTP status; null when none came." })),
    error: Nullable(
      Type.Union(
        [
          'timeout',
          'connection-refused',
          'connection-reset',
          'tls',
          'redirect',
          'blocked-address',
          'dns',
          'network',
        ].map((e) => Type.Literal(e)),
      ),
    ),
    durationMs: Type.Integer({ minimum: 0 }),
    response: Nullable(Type.String({ description: 'The first KiB of the answer body.' })),
    nextRetry: Nullable(Time),
  },
  { additionalProperties: false, title: 'WebhookDelivery' },
);

const Webhook = Type.Object(
  {
    id: Uuid('The webhook.'),
    url: Type.String(),
    events: Type.Array(Change),
    watch: Type.Object(
      { id: Type.Optional(Type.Array(Type.String())), parent: Type.Optional(Type.String()) },
      { description: 'What it watches: ids, a parent, or (empty) everything its owner may read.' },
    ),
    description: Type.String(),
    enabled: Type.Boolean(),
    disabledReason: Nullable(Type.String()),
    created: Time,
    updated: Time,
    lastDelivery: Nullable(Delivery),
  },
  { additionalProperties: false, title: 'Webhook' },
);

const collection = (item: TSchema) =>
  Type.Object({
    type: Type.Literal('_PartialCollection'),
    id: Type.String(),
    totalItems: Type.Integer({ minimum: 0 }),
    links: Type.Object({
      first: Type.String(),
      previous: Nullable(Type.String()),
      next: Nullable(Type.String()),
      last: Type.String(),
    }),
    items: Type.Array(item),
  });

const Secret = Type.Object(
  { id: Uuid('The webhook.'), secret: Type.String({ description: 'whsec_…: shown only in this answer.' }) },
  { additionalProperties: false },
);

const WebhookParams = Type.Object({ id: Uuid('The webhook id.') });
const DeliveryParams = Type.Object({ id: Uuid('The webhook id.'), deliveryId: Uuid('A delivery of it.') });
const PageQuery = Type.Object({
  page: Type.Optional(Type.String({ description: 'From 1.' })),
  pageSize: Type.Optional(Type.String({ description: 'Clamped to pageSize.min..max.' })),
});

const CREATE_EXAMPLE = {
  url: 'https://hooks.example.org/trellis',
  events: ['created', 'changed'],
  description: 'CRM sync',
};

export const createWebhookSchema = {
  operationId: 'createWebhook',
  summary: 'Create a webhook: its secret is in this answer only',
  description:
    "Deliveries are Standard Webhooks 1.0 POSTs of the change feed's events (GET /events), decided for the caller at delivery. `events` defaults to every change; `id` (1 to 100) or `parent` narrows what is watched, as in GET /events. The URL's host must resolve to public addresses unless webhooks.allowedHosts lists it.",
  tags: TAGS,
  body: requestBody(
    Type.Object({
      url: Type.String({ description: 'http or https, without a user name or password.' }),
      events: Type.Optional(Type.Array(Change)),
      id: Type.Optional(Type.Array(Type.String({ format: 'uuid' }))),
      parent: Type.Optional(Type.String({ format: 'uuid' })),
      description: Type.Optional(Type.String({ maxLength: 1000 })),
    }),
    CREATE_EXAMPLE,
  ),
  response: {
    201: json('Created; Location names it.', Secret, { Location: LOCATION }),
    ...problems(400, 401, 404, 409),
  },
};

export const listWebhooksSchema = {
  operationId: 'listWebhooks',
  summary: "The caller's webhooks, oldest first",
  tags: TAGS,
  querystring: PageQuery,
  response: { 200: json('A page of webhooks.', collection(Webhook)), ...problems(400, 401) },
};

export const readWebhookSchema = {
  operationId: 'readWebhook',
  summary: 'One webhook, its state and its last delivery (never its secret)',
  tags: TAGS,
  params: WebhookParams,
  response: { 200: json('The webhook.', Webhook), ...problems(401, 404) },
};

export const updateWebhookSchema = {
  operationId: 'updateWebhook',
  summary: 'Change a webhook; enabling it again resumes delivery where it stopped',
  tags: TAGS,
  params: WebhookParams,
  body: requestBody(
    Type.Object({
      url: Type.Optional(Type.String()),
      events: Type.Optional(Type.Array(Change)),
      description: Type.Optional(Type.String({ maxLength: 1000 })),
      enabled: Type.Optional(Type.Boolean()),
    }),
    { enabled: true },
  ),
  response: { 200: json('The webhook as it is now.', Webhook), ...problems(400, 401, 404) },
};

export const deleteWebhookSchema = {
  operationId: 'deleteWebhook',
  summary: 'Delete a webhook and its delivery log',
  tags: TAGS,
  params: WebhookParams,
  response: { 204: empty('Deleted.'), ...problems(401, 404) },
};

export const rotateSecretSchema = {
  operationId: 'rotateWebhookSecret',
  summary: 'A new secret, shown once; the old one signs beside it for webhooks.secretOverlapInSeconds',
  tags: TAGS,
  params: WebhookParams,
  response: { 200: json('The new secret.', Secret), ...problems(401, 404) },
};

export const deliveriesSchema = {
  operationId: 'listWebhookDeliveries',
  summary: 'The delivery attempts of a webhook, newest first',
  tags: TAGS,
  params: WebhookParams,
  querystring: PageQuery,
  response: { 200: json('A page of attempts.', collection(Delivery)), ...problems(400, 401, 404) },
};

export const redeliverSchema = {
  operationId: 'redeliverWebhookDelivery',
  summary: "Send a logged delivery's event again, now",
  tags: TAGS,
  params: DeliveryParams,
  response: { 200: json('The new attempt.', Delivery), ...problems(401, 404) },
};

export const pingSchema = {
  operationId: 'pingWebhook',
  summary: 'Send a webhook.ping event now',
  tags: TAGS,
  params: WebhookParams,
  response: { 200: json('The attempt.', Delivery), ...problems(401, 404) },
};

/** The body of every delivery (OpenAPI 3.1 `webhooks`). */
export const DeliveryBody = Type.Object(
  {
    type: Type.String({ description: 'element.<change>, webhook.ping or webhook.reset.' }),
    timestamp: Type.String({ description: 'When the change was written (ISO 8601, UTC).' }),
    data: Type.Union([ElementEventData, Type.Object({ webhook: Type.String(), cursor: Type.Optional(Type.String()) })]),
  },
  { title: 'WebhookEvent' },
);
