// Set-ups shared by the route plugins (each applies to the encapsulated plugin it is called in).

import type { FastifyRequest } from 'fastify';
import { Problem } from '../errors.js';
import { type ElementId, parseElementId } from '../values.js';
import type { App } from './types.js';
import { legacyCompleteness } from './upload-replies.js';

/** The element ids of requests whose path has `:id`, parsed once by parseElementIds. */
const elementIds = new WeakMap<FastifyRequest, ElementId>();

/**
 * Parses the path segment `:id` into an ElementId once, for elementIdOf; one that is not a UUID names nothing: 404
 * before anything else (no authentication needed).
 */
export function parseElementIds(app: App): void {
  // Callback style rather than async: this runs on every request, and an async hook costs a promise and a tick.
  app.addHook('onRequest', (request, _reply, done) => {
    const text = (request.params as { id?: string }).id;
    if (text === undefined) return done();
    const id = parseElementId(text);
    if (id === null) return done(new Problem('not-found', `No resource at ${request.url.split('?')[0]}.`));
    elementIds.set(request, id);
    done();
  });
}

/** The element id of the request's path (routes under parseElementIds only). */
export function elementIdOf(request: FastifyRequest): ElementId {
  const id = elementIds.get(request);
  if (id === undefined) throw new Error(`${request.url}: no element id was parsed for this route`);
  return id;
}

/**
 * Bodies of file and upload requests are streamed, never parsed: drop the JSON parsers and accept any
 * Content-Type (or none) without reading the body, so Fastify's bodyLimit does not apply and handlers read
 * `request.raw`. A request refused before its body was read (no access, too large, 409, 412) closes the connection
 * after the answer, with a bounded lingering close (connection-guard.ts), instead of reading (possibly gigabytes
 * of) a body nobody wants.
 */
export function streamBodies(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  app.addHook('onSend', legacyCompleteness);
}
