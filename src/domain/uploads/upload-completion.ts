// An upload's completion: the stored bytes are read back (their length and digest are what is answered and
// recorded, never what the request believes it wrote) and moved into place as the element's file, in the
// transaction that removes the upload (docs/decisions/026-upload-generations.md).
import { notFound, Problem } from '../../errors.js';
import type { Caller } from '../accounts/types.js';
import { checkFileTarget } from '../files/files.js';
import { detectMimeType } from '../files/mime-detect.js';
import type { FileMeta } from '../files/types.js';
import type { Upload } from './ports.js';
import type { ReadBack, StoredBytes } from './read-back.js';
import type { AppendRules } from './upload-append-rules.js';
import { blobOf, type UploadContext } from './upload-context.js';
import type { AppendResult } from './upload-requests.js';
import { inProgress, leaseLostProblem, type UploadState } from './upload-state.js';

/** A read-back of the committed bytes, started while the completing request's body streams in behind them. */
export class ReadingBack {
  private readonly prefix: Promise<{ value: boolean } | { error: unknown }>;

  constructor(
    private readonly readBack: ReadBack,
    committed: number,
  ) {
    // Never a rejection left unheard while the request is busy streaming.
    this.prefix = readBack.until(committed, false).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
  }

  /** Ends the read-back: the completion failed. */
  async stop(): Promise<void> {
    this.readBack.stop();
    await this.prefix;
  }

  /** The rest of the read-back: all `total` bytes, or null when the store does not hold them. */
  async all(total: number): Promise<StoredBytes | null> {
    const first = await this.prefix;
    if ('error' in first) throw first.error;
    if (!first.value || !(await this.readBack.until(total, true))) return null;
    return this.readBack.result();
  }
}

/** What a completing append brings: the upload's new total, the digest the request sent, the rules it is held to. */
export interface Completing {
  total: number;
  expected: Buffer | null;
  rules: AppendRules;
  /** The upload's state before the request. */
  state: UploadState;
}

/** Completes `upload` (its bytes appended, up to `total`) under the request's `lease`. */
export async function completeUpload(
  ctx: UploadContext,
  caller: Caller,
  upload: Upload,
  lease: string,
  { total, expected, rules, state }: Completing,
  reading: ReadingBack,
): Promise<AppendResult> {
  const violation = rules.wholeFileRule(total, true);
  if (violation) {
    await reading.stop();
    throw inProgress(violation, state);
  }
  const stored = await storedBytes(ctx, caller, upload, lease, reading, total);
  const { sha256 } = stored;
  for (const digest of [expected, upload.expectedSha256])
    if (digest && !digest.equals(sha256))
      throw await discard(
        ctx,
        upload,
        lease,
        new Problem(
          'bad-content',
          'The SHA-256 of the uploaded bytes does not match the digest sent; nothing was stored, the upload starts over at offset 0.',
        ),
      );
  const meta: FileMeta = {
    contentLength: total,
    extension: upload.extension,
    mimeType: await detectMimeType(stored.head, total),
    hash: { sha256: sha256.toString('hex') },
  };
  await placeUpload(ctx, caller, upload, lease, meta, state);
  return { complete: true, elementId: upload.elementId!, offset: total };
}

/** What the store holds of the upload, read back: its length and its digest. 404 or 410 when it is not all there. */
async function storedBytes(
  ctx: UploadContext,
  caller: Caller,
  upload: Upload,
  lease: string,
  reading: ReadingBack,
  total: number,
): Promise<StoredBytes> {
  const stored = await ctx.orGone(caller, upload.id, lease, reading.all(total));
  if (stored) return stored;
  // A cancellation that removed row and bytes under this request is a 404, as when it came first.
  const now = await ctx.store.uploadOf(ctx.tx.direct, upload.id, caller.userId);
  if (now?.leaseToken !== lease) throw await ctx.leaseLost(caller, upload.id);
  await ctx.drop(upload.id);
  throw new Problem('gone', 'The stored bytes of this upload were lost; start a new upload.');
}

/** Moves the upload's bytes into place as its target's file, removing the upload in the same transaction. */
async function placeUpload(
  ctx: UploadContext,
  caller: Caller,
  upload: Upload,
  lease: string,
  meta: FileMeta,
  state: UploadState,
): Promise<void> {
  const { elementId } = upload;
  try {
    if (elementId === null) throw notFound();
    const started = { ifMatch: upload.ifMatch ?? undefined, ifNoneMatch: upload.ifNoneMatch ?? undefined };
    await ctx.files.place(caller, elementId, { ...blobOf(upload), size: meta.contentLength }, meta, {
      // The start's If-Match / If-None-Match, again under the row lock: a file written meanwhile is not replaced
      // when the client asked for that (412; the upload stays as it was before this request, its bytes kept).
      // Otherwise the completion replaces whatever file is there, whether the upload was started by POST or PUT:
      // "The previous file, if any, is replaced" and "The last one to complete wins" (the spec's resumable upload
      // table); POST's 409 for an existing file was decided at the start.
      check: (row) => checkFileTarget(row, 'replace', started),
      inTransaction: async (tx) => {
        if (await ctx.store.deleteLeasedUpload(tx, upload.id, lease)) return;
        throw (await ctx.store.uploadOf(tx, upload.id, caller.userId)) ? leaseLostProblem() : notFound();
      },
    });
  } catch (error) {
    // The target is gone or no longer writable by the creator, or the upload was cancelled meanwhile.
    if (error instanceof Problem && error.slug === 'not-found') await ctx.drop(upload.id);
    // The target's file no longer meets the start's preconditions.
    if (error instanceof Problem && error.slug === 'precondition-failed') throw inProgress(error, state);
    throw error;
  }
}

/**
 * A completion whose digest did not match: the stored bytes are discarded (which of them are wrong cannot be
 * told) and the upload stays in progress at offset 0 (the spec and its design notes), so the client can send it
 * again. Returns the problem to answer with.
 */
async function discard(ctx: UploadContext, upload: Upload, lease: string, problem: Problem): Promise<Problem> {
  // Offset first, bytes next, still under the lease: a crash in between leaves extra bytes (cut off by the next
  // append), never an offset the bytes do not back.
  if (!(await ctx.store.resetUpload(ctx.tx.direct, upload.id, lease))) return leaseLostProblem();
  await ctx.blobs.dropGeneration(blobOf(upload));
  return inProgress(problem, ctx.stateOf({ ...upload, offset: 0 }));
}
