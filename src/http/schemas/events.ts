// Schema of GET /events, the change feed over Server-Sent Events (src/http/routes/events.ts, docs/events.md).
import { Type } from 'typebox';
import { CHANGES } from '../../domain/events/ports.js';
import { Element, header, type ResponseSpec, Uuid } from './common.js';
import { problems } from './problems.js';

const Change = Type.Union(
  CHANGES.map((c) => Type.Literal(c)),
  { description: 'What happened to the element; also the SSE event name.' },
);

/** The `data` of an element event. */
export const ElementEventData = Type.Object(
  {
    change: Change,
    id: Uuid('The element.'),
    kind: Type.Union([Type.Literal('node'), Type.Literal('relation')]),
    type: Type.String({ description: 'The element type.' }),
    etag: Type.Union([Type.String(), Type.Null()], {
      description: 'The ETag GET /<id> answered with after this change; null for a deletion.',
    }),
    element: Type.Optional({
      ...Element,
      description: 'The element as GET /<id> showed it after this change (not for a deletion).',
    }),
  },
  { additionalProperties: false, title: 'ElementEvent' },
);

/** The `data` of the feed's own events: ready, reset and access. */
export const FeedEventData = Type.Object(
  {
    change: Type.Optional(Type.Literal('access')),
    cursor: Type.Optional(
      Type.String({ description: 'ready, reset: the cursor the stream stands at (also its SSE id).' }),
    ),
    root: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: 'access: the watched node (`parent`), or null for the whole graph.',
      }),
    ),
    ids: Type.Optional(Type.Array(Type.String(), { description: 'access, `id` streams: the ids now readable.' })),
  },
  { additionalProperties: false, title: 'FeedEvent' },
);

const STREAM: ResponseSpec = {
  description:
    'A text/event-stream (WHATWG HTML, server-sent events). Every message has an `event:` name and JSON `data:`. ' +
    'Element events (created, changed, deleted, file-created, file-replaced, file-removed) carry an ElementEvent ' +
    '(#/components/schemas/ElementEvent) ' +
    'and an `id:` cursor; `ready` opens the stream with its cursor; `reset` says the cursor sent in Last-Event-ID ' +
    "is older than the retention window (refetch, then follow on from the reset's cursor); `access` says what the " +
    'caller may read under the watched root changed (ready, reset and access carry a FeedEvent). A comment line arrives every events.heartbeatInSeconds.',
  headers: { 'Cache-Control': header('no-store') },
  content: {
    'text/event-stream': {
      schema: Type.String({ description: 'Messages as `event: <name>\\nid: <cursor>\\ndata: <json>\\n\\n`.' }),
      example:
        'event: changed\nid: 1234-56\ndata: {"change":"changed","id":"...","kind":"node","type":"Doc","etag":"\\"...\\"","element":{}}\n\n',
    },
  },
};

export const eventsSchema = {
  operationId: 'followEvents',
  summary: 'Follow committed changes as Server-Sent Events',
  description:
    'Streams one event per committed change of an element the caller may read at delivery: `id` (repeatable) ' +
    'watches those elements and their files, `parent` a node, its children and the relations among them, neither ' +
    'everything the caller may read. A watched element the caller cannot read answers 404 as a missing one does. ' +
    'Send Last-Event-ID (EventSource does) to resume on any instance without loss or duplicates within ' +
    'events.retentionInSeconds. Past events.maxSubscribers 503, past events.maxSubscribersPerUser 429, both with ' +
    'Retry-After. A revoked or expired token ends the stream within a second.',
  tags: ['Events'],
  querystring: Type.Object({
    id: Type.Optional(
      Type.Union([Type.String({ format: 'uuid' }), Type.Array(Type.String({ format: 'uuid' }), { maxItems: 100 })], {
        description: 'An element to watch (repeatable, at most 100).',
      }),
    ),
    parent: Type.Optional(Type.String({ format: 'uuid', description: 'A node whose children to watch.' })),
  }),
  headers: Type.Object({
    'last-event-id': Type.Optional(Type.String({ description: 'The cursor (SSE id) of the last event received.' })),
  }),
  response: {
    200: STREAM,
    ...problems(400, 401, 404, 429, 503),
  },
};
