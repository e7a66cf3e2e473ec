// An upload's start: POST/PUT `/<elementId>/file` with `Upload-Complete: ?0` creates the upload row and stores the
// body as its first chunk.
import { BlobLimitError, PartialAppendError } from '../../blob/blob-store.js';
import { notFound, Problem } from '../../errors.js';
import { type ElementId, newId } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import type { Conditions } from '../elements/conditions.js';
import { checkFileTarget, type FileWriteMode, isClientAbort } from '../files/files.js';
import type { Upload } from './ports.js';
import type { UploadContext } from './upload-context.js';
import type { RequestControl, StartRequest } from './upload-requests.js';
import { chunkTooLarge, inProgress, interrupted, tooLarge, type UploadState } from './upload-state.js';

/** A start once its target is checked: the fields it stores, and how it talks to its client. */
interface Started {
  fields: StartRequest;
  conditions: Conditions;
  control: RequestControl;
  announce: ((state: UploadState) => boolean) | undefined;
}

/**
 * Creates the upload (the caller needs UPDATE on the element; the mode (POST: 409 when a file exists) and
 * If-Match/If-None-Match are checked against its current file now, and again against the file the completion would
 * replace) and stores the body as its first chunk. `announce` is called once the upload exists, before the body is
 * read (the 104 interim response); it says whether the client was told. A body that breaks off keeps its bytes when
 * the client was told where the upload is, and removes the upload otherwise.
 */
export async function startUpload(
  ctx: UploadContext,
  caller: Caller,
  elementId: ElementId,
  mode: FileWriteMode,
  body: AsyncIterable<Uint8Array>,
  started: Started,
): Promise<UploadState> {
  const limits = ctx.settings.file;
  const { length, contentLength } = started.fields;
  if (length !== null && length > limits.maxFileSizeInBytes) throw tooLarge(limits.maxFileSizeInBytes);
  if (contentLength !== undefined && contentLength > limits.uploadMaxChunkSizeInBytes)
    throw chunkTooLarge(limits.uploadMaxChunkSizeInBytes);
  if (length !== null && contentLength !== undefined && contentLength > length)
    throw new Problem(
      'bad-content',
      `The first chunk (${contentLength} bytes) is longer than the Upload-Length (${length}).`,
    );
  const target = await ctx.elements.require(ctx.tx.direct, caller, elementId, 'UPDATE');
  checkFileTarget(target, mode, started.conditions);
  // Before the upload exists: a refused start leaves nothing behind.
  const release = ctx.files.uploadSlots.take();
  try {
    return await startTaken(ctx, caller, elementId, body, started);
  } finally {
    release();
  }
}

async function startTaken(
  ctx: UploadContext,
  caller: Caller,
  elementId: ElementId,
  body: AsyncIterable<Uint8Array>,
  { fields, conditions, control, announce }: Started,
): Promise<UploadState> {
  const lease = newId();
  const upload = await createUpload(ctx, caller, elementId, fields, conditions, lease);
  const { leave } = await ctx.inFlight.enter(upload.id, control.abort);
  const renewal = ctx.keepLease(upload.id, lease, control);
  try {
    const announced = announce?.(ctx.stateOf(upload)) ?? false;
    const size = await firstChunk(ctx, caller, upload, lease, body, fields.length, announced);
    const row = await ctx.store.commitAppend(ctx.tx.direct, upload.id, lease, size, size);
    if (!row) throw await ctx.leaseLost(caller, upload.id);
    return ctx.stateOf(row);
  } finally {
    renewal.stop();
    await ctx.store.releaseLease(ctx.tx.direct, upload.id, lease);
    leave();
  }
}

/** The upload's row, leased to the starting request. */
async function createUpload(
  ctx: UploadContext,
  caller: Caller,
  elementId: ElementId,
  { length, expected, extension }: StartRequest,
  conditions: Conditions,
  lease: string,
): Promise<Upload> {
  const now = ctx.clock.now();
  try {
    return await ctx.store.insertUpload(ctx.tx.direct, {
      id: newId(),
      elementId,
      userId: caller.userId,
      length,
      extension,
      expectedSha256: expected,
      leaseToken: lease,
      leaseUntil: ctx.leaseUntil(),
      created: now,
      expires: new Date(now.getTime() + ctx.settings.file.uploadExpiresInSecondsAfterFirstRequest * 1000),
      ifMatch: conditions.ifMatch ?? null,
      ifNoneMatch: conditions.ifNoneMatch ?? null,
    });
  } catch (error) {
    if (ctx.tx.failureOf(error) === 'missing-reference') throw notFound(); // the element was deleted meanwhile
    throw error;
  }
}

/**
 * Streams the first chunk; returns its size. A body that breaks off after the client was told where the upload is
 * (`announced`) keeps its bytes (committed here); otherwise the upload goes, and so it does when a limit is broken.
 */
async function firstChunk(
  ctx: UploadContext,
  caller: Caller,
  upload: Upload,
  lease: string,
  body: AsyncIterable<Uint8Array>,
  length: number | null,
  announced: boolean,
): Promise<number> {
  const limits = ctx.settings.file;
  const maxBytes = Math.min(limits.uploadMaxChunkSizeInBytes, limits.maxFileSizeInBytes, length ?? Infinity);
  try {
    return await ctx.stream(upload, body, maxBytes);
  } catch (error) {
    const kept = error instanceof PartialAppendError ? error.total : 0;
    if (announced && (error instanceof PartialAppendError || isClientAbort(error))) {
      // The client knows where the upload is (104): it can ask for the offset and go on from there.
      const row = await ctx.store.commitAppend(ctx.tx.direct, upload.id, lease, kept, kept);
      if (!row) throw await ctx.leaseLost(caller, upload.id);
      throw inProgress(interrupted(kept), ctx.stateOf(row));
    }
    // Nobody was told about the upload, or its first chunk broke a limit: it goes.
    await ctx.drop(upload.id);
    if (error instanceof BlobLimitError)
      throw maxBytes === limits.uploadMaxChunkSizeInBytes
        ? chunkTooLarge(maxBytes)
        : length !== null && maxBytes === length
          ? new Problem('bad-content', `The first chunk is longer than the Upload-Length (${length}).`)
          : tooLarge(limits.maxFileSizeInBytes);
    if (error instanceof PartialAppendError || isClientAbort(error)) throw interrupted(0);
    throw error;
  }
}
