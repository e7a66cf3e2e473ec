// The HTTP side of resumable uploads shared by the two route files that touch them: `/<id>/file` (a POST/PUT with
// `Upload-Complete: ?0` starts one) and `/upload/<id>`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Capacity } from '../domain/capacity.js';
import type { RequestControl } from '../domain/uploads/upload-requests.js';
import { UploadInProgress, type UploadState } from '../domain/uploads/upload-state.js';
import { Problem } from '../errors.js';
import { sendInterim } from './interim.js';
import { headerOf } from './reply.js';
import { watchedBody } from './storage-guard.js';
import { interopVersion, progressFields, usesUploadIncomplete } from './upload-headers.js';

/** The announced draft interop version, when it is one we speak (see upload-headers.ts). */
export const interopOf = (request: FastifyRequest) => interopVersion(headerOf(request, 'upload-draft-interop-version'));

/**
 * The request body as an iterable that does not destroy the request when the reader stops early (a size limit
 * passed): the connection must survive long enough to carry the 400. It stops with a 507 should the disk run short
 * of space meanwhile (storage-guard.ts).
 */
export const bodyOf = (request: FastifyRequest, capacity: Capacity): AsyncIterable<Uint8Array> =>
  watchedBody(request, { [Symbol.asyncIterator]: () => request.raw.iterator({ destroyOnReturn: false }) }, capacity);

/**
 * Ending a request that a newer one to the same upload takes over: its connection is closed while its body is
 * still arriving. Once the whole body is in, closing would only lose the answer of a request that goes on with its
 * work (committing, completing) anyway; the newer request waits for it instead (UploadsInFlight).
 */
export const controlOf = (request: FastifyRequest): RequestControl => ({
  abort: () => {
    if (!request.raw.complete) request.raw.destroy();
  },
});

/**
 * `work`, its refusals that leave an upload in progress answered with the upload's fields (real clients read
 * Upload-Offset after each append, also after a failed one).
 */
export async function withProgress<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!(error instanceof UploadInProgress)) throw error;
    const { slug, detail, extensions, headers, state } = error;
    throw new Problem(slug, detail, extensions, { ...headers, ...progressFields(state) });
  }
}

/**
 * The 104 (Upload Resumption Supported) interim response with the upload's `Location` and `Upload-Limit`, for
 * clients that announced a draft interop version we speak. False when it could not be sent.
 */
export function announceUpload(reply: FastifyReply, state: UploadState): boolean {
  const { 'upload-limit': limit } = progressFields(state);
  return sendInterim(reply, 104, 'Upload Resumption Supported', {
    Location: uploadPath(state.id),
    'Upload-Limit': limit!,
  });
}

export const uploadPath = (id: string) => `/upload/${id}`;

/** The fields of an upload in progress on a final response. */
export function sendProgress(reply: FastifyReply, state: UploadState, status: 204, location?: string) {
  reply.headers(progressFields(state));
  if (location) reply.header('location', location);
  return reply.code(status).send();
}

/**
 * onSend hook: clients of interop 3 (draft-01) read `Upload-Incomplete`, the negation of `Upload-Complete`.
 */
export async function legacyCompleteness(request: FastifyRequest, reply: FastifyReply) {
  if (!usesUploadIncomplete(interopOf(request))) return;
  const complete = reply.getHeader('upload-complete');
  if (complete === '?0') reply.header('upload-incomplete', '?1');
  else if (complete === '?1') reply.header('upload-incomplete', '?0');
}
