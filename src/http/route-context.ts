// Set-ups shared by the route plugins (each applies to the encapsulated plugin it is called in).

import { Problem } from '../errors.js';
import { isUuid } from '../values.js';
import type { App } from './types.js';
import { legacyCompleteness } from './upload-replies.js';

/** A path segment `:id` that is not a UUID names nothing: 404 before anything else (no authentication needed). */
export function rejectNonUuidIds(app: App): void {
  // Callback style rather than async: this runs on every request, and an async hook costs a promise and a tick.
  app.addHook('onRequest', (request, _reply, done) => {
    const id = (request.params as { id?: string }).id;
    done(
      id !== undefined && !isUuid(id)
        ? new Problem('not-found', `No resource at ${request.url.split('?')[0]}.`)
        : undefined,
    );
  });
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
