// The limits an append is held to: those of one request (chunk sizes, the number of chunks) and those of the whole
// file (the maximum size, the declared length). Breaking either appends nothing and leaves the upload as it was.
import { Problem } from '../../errors.js';
import type { Upload } from './ports.js';
import type { UploadContext } from './upload-context.js';
import type { AppendRequest } from './upload-requests.js';
import { chunkTooLarge, inProgress, tooLarge, type UploadState } from './upload-state.js';

export interface AppendRules {
  complete: boolean;
  /** The upload's length: as stored, or announced by this request. */
  declared: number | null;
  /** A length this request announces for an upload that had none (stored with the bytes it commits). */
  announced: number | null;
  /** Throws the problem of a chunk of `size` bytes, if any. */
  chunkRules(size: number): void;
  /** The problem of a file of `total` bytes (`ended`: the whole of it), if any. */
  wholeFileRule(total: number, ended: boolean): Problem | null;
  /** How many more bytes the file may have. */
  wholeFileRoom: number;
  /** The most this request may append. */
  maxBytes: number;
}

/**
 * The rules of `request` on `upload`, after refusing what its fields break already: another length than the one
 * declared, a Content-Length over a limit.
 */
export function appendRules(
  ctx: UploadContext,
  upload: Upload,
  request: AppendRequest,
  state: UploadState,
): AppendRules {
  const limits = ctx.settings.file;
  const { complete, length: requestLength, contentLength } = request;
  const { offset } = upload;
  const maxChunks = 10 ** limits.uploadChunkDigitsLength;
  if (upload.length !== null && requestLength !== null && requestLength !== upload.length)
    throw inProgress(
      new Problem('bad-content', `The upload's Upload-Length is ${upload.length}; it cannot be changed.`),
      state,
    );
  // A length announced only now (the draft allows it on any append) is fixed from this append on: it is stored
  // with the bytes the append commits, and later appends are held against it.
  const declared = upload.length ?? requestLength;
  const announced = upload.length === null ? requestLength : null;

  // Limits of one request: breaking them appends nothing and leaves the upload as it was.
  const chunkRules = (size: number) => {
    if (size > limits.uploadMaxChunkSizeInBytes) throw chunkTooLarge(limits.uploadMaxChunkSizeInBytes);
    if (!complete && size > 0 && size < limits.uploadMinChunkSizeInBytes)
      throw new Problem(
        'bad-content',
        `A chunk that does not complete the upload must have at least ${limits.uploadMinChunkSizeInBytes} bytes (min-append-size); this one has ${size}.`,
      );
    if (size > 0 && upload.chunks >= maxChunks)
      throw new Problem(
        'bad-content',
        `The upload already has the maximum of ${maxChunks} chunks; complete it with an empty request.`,
      );
  };
  // Limits of the whole file: breaking them appends nothing either, completing or not (the spec's table: "in
  // progress | 400. Nothing is merged"); the stored chunks stay, so the client can go on from the offset (send the
  // rest, or complete with an empty request). Only a digest mismatch discards them (upload-completion.ts).
  const wholeFileRule = (total: number, ended: boolean): Problem | null => {
    if (total > limits.maxFileSizeInBytes) return tooLarge(limits.maxFileSizeInBytes);
    if (declared !== null && (ended ? total !== declared : total > declared))
      return new Problem('bad-content', `The upload would have ${total} bytes, but its Upload-Length is ${declared}.`);
    return null;
  };

  if (contentLength !== undefined) {
    try {
      chunkRules(contentLength);
    } catch (error) {
      throw error instanceof Problem ? inProgress(error, state) : error;
    }
    const violation = wholeFileRule(offset + contentLength, complete);
    if (violation) throw inProgress(violation, state);
  }

  const wholeFileRoom = Math.min(limits.maxFileSizeInBytes - offset, declared !== null ? declared - offset : Infinity);
  const maxBytes = Math.min(limits.uploadMaxChunkSizeInBytes, wholeFileRoom);
  return { complete, declared, announced, chunkRules, wholeFileRule, wholeFileRoom, maxBytes };
}
