// An append: PATCH `/upload/<id>` at `Upload-Offset`, under the upload's lease (one request appends at a time, on
// any instance); with `Upload-Complete: ?1` it completes the upload (upload-completion.ts). A request that takes an
// upload over from one whose lease ran out writes to a new generation of its bytes (docs/decisions/
// 026-upload-generations.md).
import { BlobLimitError, PartialAppendError } from '../../blob/blob-store.js';
import { Problem } from '../../errors.js';
import { newId } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import { isClientAbort } from '../files/files.js';
import type { Upload, UploadAccess, UploadId } from './ports.js';
import { ReadBack } from './read-back.js';
import { type AppendRules, appendRules } from './upload-append-rules.js';
import { completeUpload, ReadingBack } from './upload-completion.js';
import { blobOf, type UploadContext } from './upload-context.js';
import type { AppendFields, AppendRequest, AppendResult, RequestControl } from './upload-requests.js';
import { chunkTooLarge, inProgress, interrupted, offsetMismatch, type UploadState } from './upload-state.js';

/** Appends the body at the request's offset; with `complete`, completes the upload. */
export async function appendToUpload(
  ctx: UploadContext,
  caller: Caller,
  id: UploadId,
  body: AsyncIterable<Uint8Array>,
  fields: AppendFields,
  control: RequestControl,
): Promise<AppendResult> {
  let upload = await ctx.usable(caller, id);
  // Malformed fields are refused before anything else happens to the upload (with its offset, like every
  // refusal that leaves it in progress); someone else's upload is a 404 whatever the fields say.
  if (fields instanceof Problem) throw inProgress(fields, ctx.stateOf(upload));
  const { leave, preempted } = await ctx.inFlight.enter(upload.id, control.abort);
  try {
    if (preempted) upload = await ctx.usable(caller, id, true);
    if (fields.offset !== upload.offset) throw offsetMismatch(upload.offset, fields.offset, ctx.stateOf(upload));
    // After a stalled request to this upload was ended (enter), so that its slot is free again.
    const release = ctx.files.uploadSlots.take();
    try {
      return await appendEntered(ctx, caller, upload, body, fields, control);
    } finally {
      release();
    }
  } finally {
    leave();
  }
}

/** The append, once this request is the one at work on the upload here and holds an upload slot. */
async function appendEntered(
  ctx: UploadContext,
  caller: Caller,
  upload: UploadAccess,
  body: AsyncIterable<Uint8Array>,
  request: AppendRequest,
  control: RequestControl,
): Promise<AppendResult> {
  const lease = newId();
  const { offset: provided } = request;
  const now = ctx.clock.now();
  const leased = await ctx.store.takeLease(
    ctx.tx.direct,
    upload.id,
    caller.userId,
    provided,
    lease,
    now,
    ctx.leaseUntil(),
  );
  if (!leased) throw await leaseRefused(ctx, caller, upload.id, provided);
  const renewal = ctx.keepLease(leased.id, lease, control);
  try {
    await ctx.checkStored(caller, leased, lease);
    const current = leased.takenOver ? await takeOver(ctx, caller, leased, lease) : leased;
    return await appendLeased(ctx, caller, current, lease, body, request, renewal);
  } finally {
    renewal.stop();
    await ctx.store.releaseLease(ctx.tx.direct, leased.id, lease); // a no-op once committed, completed or reset
  }
}

/** Why the lease could not be had: the offset moved meanwhile, or another request holds it. */
async function leaseRefused(ctx: UploadContext, caller: Caller, id: UploadId, provided: number): Promise<Problem> {
  const current = await ctx.usable(caller, id, true);
  if (current.offset !== provided) return offsetMismatch(current.offset, provided, ctx.stateOf(current));
  return inProgress(
    new Problem(
      'conflict',
      'Another request is appending to this upload right now; ask for the offset (HEAD) and go on from there.',
      {
        'expected-offset': current.offset,
        'provided-offset': provided,
      },
    ),
    ctx.stateOf(current),
  );
}

/**
 * Takes an upload over from a request whose lease ran out without being given back: that request may be frozen
 * or cut off from the database and still write. The committed bytes are copied into a new generation, which the
 * row names from now on, and the old one goes; whatever the late request writes lands where nothing refers to it.
 */
async function takeOver(ctx: UploadContext, caller: Caller, upload: Upload, lease: string): Promise<Upload> {
  const generation = newId();
  await ctx.orGone(caller, upload.id, lease, ctx.blobs.fork(blobOf(upload), generation, upload.offset));
  const row = await ctx.store.setGeneration(ctx.tx.direct, upload.id, lease, generation);
  if (!row) {
    await ctx.blobs.dropGeneration({ key: upload.id, generation });
    throw await ctx.leaseLost(caller, upload.id);
  }
  // Left to the upload's end or the sweep when this fails: nothing refers to it any more.
  await ctx.blobs.dropGeneration(blobOf(upload)).catch(() => {});
  return row;
}

async function appendLeased(
  ctx: UploadContext,
  caller: Caller,
  upload: Upload,
  lease: string,
  body: AsyncIterable<Uint8Array>,
  request: AppendRequest,
  renewal: { stop(): void },
): Promise<AppendResult> {
  const state = ctx.stateOf(upload);
  const rules = appendRules(ctx, upload, request, state);
  // A completion reads the committed bytes back while its own body streams in behind them.
  const reading = request.complete ? new ReadingBack(new ReadBack(ctx.blobs, blobOf(upload)), upload.offset) : null;
  const size = await streamAppend(ctx, caller, upload, lease, body, { rules, state }, reading);
  const total = upload.offset + size;
  renewal.stop(); // what is left is short; a late renewal must not end this request

  if (!request.complete) {
    const row = await ctx.store.commitAppend(ctx.tx.direct, upload.id, lease, total, size, rules.announced);
    if (!row) throw await ctx.leaseLost(caller, upload.id);
    return { complete: false, state: ctx.stateOf(row) };
  }
  const completing = { total, expected: request.expected, rules, state };
  return await completeUpload(ctx, caller, upload, lease, completing, reading!);
}

/**
 * Streams the body at the upload's offset; returns its size. A body that breaks off keeps what arrived (committed
 * here, with a problem that says so); a broken limit appends nothing.
 */
async function streamAppend(
  ctx: UploadContext,
  caller: Caller,
  upload: Upload,
  lease: string,
  body: AsyncIterable<Uint8Array>,
  { rules, state }: { rules: AppendRules; state: UploadState },
  reading: ReadingBack | null,
): Promise<number> {
  const { offset } = upload;
  try {
    return await ctx.stream(upload, body, rules.maxBytes, rules.chunkRules);
  } catch (error) {
    await reading?.stop();
    if (error instanceof PartialAppendError || isClientAbort(error)) {
      const kept = error instanceof PartialAppendError ? error.total : offset;
      const row = await ctx.store.commitAppend(ctx.tx.direct, upload.id, lease, kept, kept - offset, rules.announced);
      if (!row) throw await ctx.leaseLost(caller, upload.id);
      throw inProgress(interrupted(kept - offset), ctx.stateOf(row));
    }
    if (error instanceof BlobLimitError) {
      if (rules.maxBytes === rules.wholeFileRoom)
        throw inProgress(rules.wholeFileRule(offset + rules.maxBytes + 1, rules.complete)!, state);
      throw inProgress(chunkTooLarge(ctx.settings.file.uploadMaxChunkSizeInBytes), state);
    }
    if (error instanceof Problem) throw inProgress(error, state);
    throw await ctx.unlessGone(caller, upload.id, lease, error);
  }
}
