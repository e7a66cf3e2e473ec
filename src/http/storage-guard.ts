// Writes refused while the disk is short of space (domain/capacity.ts): a request that changes state answers 507
// `insufficient-storage` before its body is read, reads (searches too) go on. An upload body already streaming is
// stopped as it arrives (watchedBody).
import type { FastifyRequest } from 'fastify';
import type { Capacity } from '../domain/capacity.js';
import { Problem } from '../errors.js';
import type { App } from './types.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A POST that changes nothing (a search): it goes on while the disk is short of space. */
    readsOnly?: true;
  }
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Whether a route changes state, and so is refused while the disk is short of space. Every write is: element
 * changes, files and uploads (a cancellation and a deletion too, since each writes to the database), registration
 * and tokens (a token is a row; a client holding one keeps reading).
 */
export const changesState = (method: string, config?: { readsOnly?: true }): boolean =>
  WRITE_METHODS.has(method) && config?.readsOnly !== true;

export function guardStorage(app: App, capacity: Capacity): void {
  if (!capacity.enabled) return;
  // preParsing runs after a route's own refusals (405, an id that is no UUID) and before any body is read or parsed.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    if (request.is404 || !changesState(request.method, request.routeOptions.config)) return done(null, payload);
    capacity.assertWritable().then(
      () => done(null, payload),
      (error: Error) => done(error),
    );
  });
}

/** Requests whose upload body was stopped for lack of space. */
const stoppedBodies = new WeakSet<FastifyRequest>();

/** The body of an upload request, stopped with a 507 should the disk run short of space while it streams. */
export const watchedBody = (
  request: FastifyRequest,
  body: AsyncIterable<Uint8Array>,
  capacity: Capacity,
): AsyncIterable<Uint8Array> => capacity.watch(body, () => stoppedBodies.add(request));

/**
 * The problem to answer once a body was stopped for lack of space. A direct upload fails with the 507 itself; an
 * append (or a resumable start) reports a body that broke off (400, with the upload's offset when the bytes that
 * arrived were kept), which the client learns as the 507 it is, with the same upload headers.
 */
export function stoppedForSpace(request: FastifyRequest, problem: Problem): Problem {
  if (!stoppedBodies.has(request) || problem.slug !== 'bad-content') return problem;
  const kept = problem.headers['upload-offset'] !== undefined;
  return new Problem(
    'insufficient-storage',
    kept
      ? 'The server ran short of disk space while the body arrived. The bytes that arrived were kept: resume at Upload-Offset once space is freed.'
      : 'The server ran short of disk space while the body arrived; nothing of it was stored.',
    {},
    problem.headers,
  );
}
