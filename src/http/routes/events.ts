// GET /events: the change feed as Server-Sent Events; the query and Last-Event-ID parsed here, one subscription of
// the domain's feed, its messages written by event-stream.ts.
import type { FastifyRequest } from 'fastify';
import { type Cursor, parseCursor } from '../../domain/events/cursor.js';
import type { Scope } from '../../domain/events/subscription.js';
import { badContent } from '../../errors.js';
import { type ElementId, parseElementId } from '../../values.js';
import { eventStream } from '../event-stream.js';
import { headerOf } from '../reply.js';
import { operation, resource } from '../resource.js';
import type { RouteDeps } from '../route-deps.js';
import { headOf } from '../schemas/common.js';
import { eventsSchema } from '../schemas/events.js';
import type { App } from '../types.js';

/** The most elements one stream may watch by id. */
const MAX_IDS = 100;

const listOf = (value: unknown): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(String);

function scopeOf(query: Record<string, unknown>): Scope {
  const ids = listOf(query.id);
  const parents = listOf(query.parent);
  if (ids.length > 0 && parents.length > 0) throw badContent('Watch either `id` or `parent`, not both.');
  if (parents.length > 1) throw badContent('Watch one `parent` per stream.');
  if (ids.length > MAX_IDS) throw badContent(`Watch at most ${MAX_IDS} ids per stream.`);
  const parsed = [...ids, ...parents].map((text) => {
    const id = parseElementId(text);
    if (id === null) throw badContent(`'${text}' is not an element id.`);
    return id;
  });
  if (parents.length === 1) return { kind: 'parent', id: parsed[0]! };
  return ids.length > 0 ? { kind: 'ids', ids: new Set<ElementId>(parsed) } : { kind: 'all' };
}

function resumeOf(request: FastifyRequest): Cursor | null {
  const text = headerOf(request, 'last-event-id');
  if (text === undefined || text === '') return null;
  const cursor = parseCursor(text.trim());
  if (cursor === null) throw badContent('Last-Event-ID is not a cursor of this feed.');
  return cursor;
}

export default async function eventRoutes(app: App, { services, config }: RouteDeps) {
  /** The credentials, scope and resume point of a request; bad credentials answer 401 before a bad query's 400. */
  const subscriptionOf = async (request: FastifyRequest) => {
    const credentials = services.accounts.credentials(request.headers.authorization);
    try {
      return { credentials, scope: scopeOf(request.query as Record<string, unknown>), resume: resumeOf(request) };
    } catch (problem) {
      await services.accounts.authenticate(request.headers.authorization);
      throw problem;
    }
  };
  resource(app, '/events', {
    // What GET would answer, without a stream: its headers, or its problem. Before GET, so that Fastify does not
    // add its own HEAD route, which would open a stream.
    HEAD: operation(headOf(eventsSchema), async (request, reply) => {
      const { credentials, scope, resume } = await subscriptionOf(request);
      await services.events.admit(credentials, scope, resume);
      return reply.code(200).header('cache-control', 'no-store').type('text/event-stream; charset=utf-8').send();
    }),
    GET: operation(eventsSchema, async (request, reply) => {
      const { credentials, scope, resume } = await subscriptionOf(request);
      const sink = eventStream(reply, config.settings.events.maxBufferedBytes);
      const sub = await services.events.subscribe(credentials, scope, resume, sink);
      reply.raw.on('close', () => services.events.unsubscribe(sub));
      return reply;
    }),
  });
}
