// Resumable uploads (draft-ietf-httpbis-resumable-upload): an upload is a row (offset, declared length, expiry,
// creator, target) and a blob under the upload id. The offset advances only by bytes made durable, so the offset HEAD
// reports is always one the next PATCH can use; completion moves the blob into place as the element's file. One
// request appends at a time, and no transaction stays open while a body streams (docs/architecture.md, "Resumable
// uploads"). A request that takes an upload over from one whose lease ran out writes to a new generation of its
// bytes, so the late writer cannot touch what counts; a completion reads the stored bytes back and answers with
// their length and digest, never with what it believes it wrote (docs/decisions/026-upload-generations.md).
import { BlobLimitError, type BlobStore, PartialAppendError, type UploadBlob } from '../../blob/blob-store.js';
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { notFound, Problem } from '../../errors.js';
import { type Db, isForeignKeyViolation } from '../../storage/db.js';
import * as sql from '../../storage/queries/uploads.js';
import { type ElementId, isUuid, newId } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import type { Conditions } from '../elements/conditions.js';
import type { Elements } from '../elements/elements.js';
import { extensionFromDisposition, parseSha256Digest } from '../files/file-headers.js';
import { checkFileTarget, type Files, type FileWriteMode, isClientAbort } from '../files/files.js';
import { detectMimeType } from '../files/mime-detect.js';
import type { FileMeta } from '../files/types.js';
import type { Tx } from '../transactions.js';
import { ReadBack, type StoredBytes } from './read-back.js';
import {
  checkAppendContentType,
  parseUploadComplete,
  parseUploadLength,
  parseUploadOffset,
  progressFields,
  type UploadLimits,
  type UploadState,
} from './upload-fields.js';
import { UploadsInFlight } from './upload-inflight.js';

/** How long a lease lasts without renewal (clock seconds): the longest a dead instance can block an upload. */
const LEASE_SECONDS = 60;
/** How often a running request renews its lease (real time). */
const RENEW_MS = 15_000;
/** Rows per statement in the cleanup job. */
const CLEANUP_BATCH = 200;

export interface StartHeaders {
  uploadLength?: string;
  contentLength?: string;
  contentDisposition?: string;
  reprDigest?: string;
  contentDigest?: string;
}

export interface AppendHeaders {
  /** `Upload-Complete` as a header value (old drafts' `Upload-Incomplete` already translated). */
  uploadComplete?: string;
  uploadOffset?: string;
  uploadLength?: string;
  contentLength?: string;
  contentType?: string;
  reprDigest?: string;
  contentDigest?: string;
}

/** The HTTP exchange behind a request, as far as the upload service needs it. */
export interface RequestControl {
  /**
   * Ends the exchange (closes the connection) while its body is still arriving: a newer request to the upload
   * takes over. A no-op once the whole body has arrived: the request then finishes, and the newer one waits for it.
   */
  abort(): void;
  /** The draft interop version the client announced, when it is one we speak. */
  interop: number | null;
}

export type AppendResult =
  | { complete: false; state: UploadState }
  | { complete: true; elementId: string; offset: number };

export interface CleanupReport {
  /** Expired uploads past the grace period, removed with their bytes. */
  expired: number;
  /** Uploads whose target was deleted or whose creator lost UPDATE on it. */
  cancelled: number;
}

/** Adds the fields of an upload in progress to a problem. */
const inProgress = (problem: Problem, state: UploadState) =>
  new Problem(problem.slug, problem.detail, problem.extensions, { ...problem.headers, ...progressFields(state) });

/** Where the committed bytes of an upload are. */
const blobOf = (row: sql.UploadRow): UploadBlob => ({ key: row.id, generation: row.generation });

/** The value or the failure of `work`, never a rejection left unheard while the caller is busy elsewhere. */
const outcome = <T>(work: Promise<T>): Promise<{ value: T } | { error: unknown }> =>
  work.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

/** The rest of a read-back whose committed part `prefix` is reading: all `total` bytes, or null when not stored. */
async function readBackAll(
  readBack: ReadBack,
  prefix: Promise<{ value: boolean } | { error: unknown }>,
  total: number,
): Promise<StoredBytes | null> {
  const first = await prefix;
  if ('error' in first) throw first.error;
  if (!first.value || !(await readBack.until(total, true))) return null;
  return readBack.result();
}

export class Uploads {
  private readonly inFlight = new UploadsInFlight();

  constructor(
    private readonly db: Db,
    private readonly settings: Settings,
    private readonly clock: Clock,
    private readonly blobs: BlobStore,
    private readonly elements: Elements,
    private readonly files: Files,
  ) {}

  /** Whether a POST/PUT of `/<id>/file` with this `Upload-Complete` starts a resumable upload (`?0`). */
  starts(uploadComplete: string | undefined): boolean {
    return !parseUploadComplete(uploadComplete);
  }

  /**
   * POST/PUT `/<elementId>/file` with `Upload-Complete: ?0`: creates the upload (the caller needs UPDATE on the
   * element; the mode (POST: 409 when a file exists) and If-Match/If-None-Match are checked against its current
   * file now, and again against the file the completion would replace) and stores the body as its first chunk. `announce` is called once the upload exists, before
   * the body is read (the 104 interim response); it says whether the client was told. A body that breaks off
   * keeps its bytes when the client was told where the upload is, and removes the upload otherwise.
   */
  async start(
    caller: Caller,
    elementId: string,
    mode: FileWriteMode,
    body: AsyncIterable<Uint8Array>,
    headers: StartHeaders,
    conditions: Conditions,
    control: RequestControl,
    announce?: (state: UploadState) => boolean,
  ): Promise<UploadState> {
    const limits = this.settings.file;
    const length = parseUploadLength(headers.uploadLength) ?? null;
    const contentLength = headers.contentLength === undefined ? undefined : Number(headers.contentLength);
    const expected = parseSha256Digest(headers.reprDigest, headers.contentDigest) ?? null;
    const extension = extensionFromDisposition(headers.contentDisposition);
    if (length !== null && length > limits.maxFileSizeInBytes) throw tooLarge(limits.maxFileSizeInBytes);
    if (contentLength !== undefined && contentLength > limits.uploadMaxChunkSizeInBytes)
      throw chunkTooLarge(limits.uploadMaxChunkSizeInBytes);
    if (length !== null && contentLength !== undefined && contentLength > length)
      throw new Problem(
        'bad-content',
        `The first chunk (${contentLength} bytes) is longer than the Upload-Length (${length}).`,
      );
    const target = await this.elements.require(this.db as unknown as Tx, caller, elementId as ElementId, 'UPDATE');
    checkFileTarget(target, mode, conditions);
    // Before the upload exists: a refused start leaves nothing behind.
    const release = this.files.uploadSlots.take();
    try {
      return await this.startTaken(
        caller,
        target.id,
        body,
        { length, expected, extension },
        conditions,
        control,
        announce,
      );
    } finally {
      release();
    }
  }

  private async startTaken(
    caller: Caller,
    elementId: string,
    body: AsyncIterable<Uint8Array>,
    { length, expected, extension }: { length: number | null; expected: Buffer | null; extension: string },
    conditions: Conditions,
    control: RequestControl,
    announce?: (state: UploadState) => boolean,
  ): Promise<UploadState> {
    const limits = this.settings.file;
    const now = this.clock.now();
    const lease = newId();
    let upload: sql.UploadRow;
    try {
      upload = await sql.insertUpload(this.db, {
        id: newId(),
        elementId,
        userId: caller.userId,
        length,
        extension,
        expectedSha256: expected,
        leaseToken: lease,
        leaseUntil: this.leaseUntil(),
        created: now,
        expires: new Date(now.getTime() + limits.uploadExpiresInSecondsAfterFirstRequest * 1000),
        ifMatch: conditions.ifMatch ?? null,
        ifNoneMatch: conditions.ifNoneMatch ?? null,
      });
    } catch (error) {
      if (isForeignKeyViolation(error)) throw notFound(); // the element was deleted meanwhile
      throw error;
    }
    const { leave } = await this.inFlight.enter(upload.id, control.abort);
    const renewal = this.keepLease(upload.id, lease, control);
    try {
      const announced = announce?.(this.stateOf(upload)) ?? false;
      const maxBytes = Math.min(limits.uploadMaxChunkSizeInBytes, limits.maxFileSizeInBytes, length ?? Infinity);
      let size: number;
      try {
        size = await this.stream(upload, body, maxBytes);
      } catch (error) {
        const kept = error instanceof PartialAppendError ? error.total : 0;
        if (announced && (error instanceof PartialAppendError || isClientAbort(error))) {
          // The client knows where the upload is (104): it can ask for the offset and go on from there.
          const row = await sql.commitAppend(this.db, upload.id, lease, kept, kept);
          if (!row) throw await this.leaseLost(caller, upload.id);
          throw inProgress(interrupted(kept), this.stateOf(row));
        }
        // Nobody was told about the upload, or its first chunk broke a limit: it goes.
        await this.drop(upload.id);
        if (error instanceof BlobLimitError)
          throw maxBytes === limits.uploadMaxChunkSizeInBytes
            ? chunkTooLarge(maxBytes)
            : length !== null && maxBytes === length
              ? new Problem('bad-content', `The first chunk is longer than the Upload-Length (${length}).`)
              : tooLarge(limits.maxFileSizeInBytes);
        if (error instanceof PartialAppendError || isClientAbort(error)) throw interrupted(0);
        throw error;
      }
      const row = await sql.commitAppend(this.db, upload.id, lease, size, size);
      if (!row) throw await this.leaseLost(caller, upload.id);
      return this.stateOf(row);
    } finally {
      renewal.stop();
      await sql.releaseLease(this.db, upload.id, lease);
      leave();
    }
  }

  /**
   * HEAD `/upload/<id>`. A request still appending to the upload in this instance is ended first (and its bytes
   * committed), so the offset answered is the one the next append must use.
   */
  async state(caller: Caller, id: string): Promise<UploadState> {
    let upload = await this.usable(caller, id);
    if (await this.inFlight.preempt(upload.id)) upload = await this.usable(caller, id);
    await this.checkStored(caller, upload);
    return this.stateOf(upload);
  }

  /** PATCH `/upload/<id>`: appends the body at `Upload-Offset`; with `Upload-Complete: ?1` completes the upload. */
  async append(
    caller: Caller,
    id: string,
    body: AsyncIterable<Uint8Array>,
    headers: AppendHeaders,
    control: RequestControl,
  ): Promise<AppendResult> {
    let upload = await this.usable(caller, id);
    // Malformed fields are refused before anything else happens to the upload (with its offset, like every
    // refusal that leaves it in progress); someone else's upload is a 404 whatever the fields say.
    let complete: boolean, provided: number, requestLength: number | null, expected: Buffer | null;
    try {
      complete = parseUploadComplete(headers.uploadComplete);
      provided = parseUploadOffset(headers.uploadOffset);
      checkAppendContentType(headers.contentType, control.interop);
      requestLength = parseUploadLength(headers.uploadLength) ?? null;
      expected = complete ? (parseSha256Digest(headers.reprDigest, headers.contentDigest) ?? null) : null;
    } catch (error) {
      throw error instanceof Problem ? inProgress(error, this.stateOf(upload)) : error;
    }
    const contentLength = headers.contentLength === undefined ? undefined : Number(headers.contentLength);
    const { leave, preempted } = await this.inFlight.enter(upload.id, control.abort);
    try {
      if (preempted) upload = await this.usable(caller, id, true);
      if (provided !== upload.offset) throw offsetMismatch(upload, provided, this.stateOf(upload));
      // After a stalled request to this upload was ended (enter), so that its slot is free again.
      const release = this.files.uploadSlots.take();
      try {
        return await this.appendEntered(
          caller,
          id,
          upload,
          provided,
          body,
          { complete, requestLength, contentLength, expected },
          control,
        );
      } finally {
        release();
      }
    } finally {
      leave();
    }
  }

  /** The append, once this request is the one at work on the upload here and holds an upload slot. */
  private async appendEntered(
    caller: Caller,
    id: string,
    upload: sql.UploadAccess,
    provided: number,
    body: AsyncIterable<Uint8Array>,
    request: {
      complete: boolean;
      requestLength: number | null;
      contentLength: number | undefined;
      expected: Buffer | null;
    },
    control: RequestControl,
  ): Promise<AppendResult> {
    const lease = newId();
    const leased = await sql.takeLease(
      this.db,
      upload.id,
      caller.userId,
      provided,
      lease,
      this.clock.now(),
      this.leaseUntil(),
    );
    if (!leased) {
      const current = await this.usable(caller, id, true);
      if (current.offset !== provided) throw offsetMismatch(current, provided, this.stateOf(current));
      throw inProgress(
        new Problem(
          'conflict',
          'Another request is appending to this upload right now; ask for the offset (HEAD) and go on from there.',
          {
            'expected-offset': current.offset,
            'provided-offset': provided,
          },
        ),
        this.stateOf(current),
      );
    }
    const renewal = this.keepLease(leased.id, lease, control);
    try {
      await this.checkStored(caller, leased, lease);
      const current = leased.taken_over ? await this.takeOver(caller, leased, lease) : leased;
      return await this.appendLeased(caller, current, lease, body, request, renewal);
    } finally {
      renewal.stop();
      await sql.releaseLease(this.db, leased.id, lease); // a no-op once committed, completed or reset
    }
  }

  private async appendLeased(
    caller: Caller,
    upload: sql.UploadRow,
    lease: string,
    body: AsyncIterable<Uint8Array>,
    request: {
      complete: boolean;
      requestLength: number | null;
      contentLength: number | undefined;
      expected: Buffer | null;
    },
    renewal: { stop(): void },
  ): Promise<AppendResult> {
    const limits = this.settings.file;
    const { complete, requestLength, contentLength } = request;
    const { offset } = upload;
    const state = this.stateOf(upload);
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
    // rest, or complete with an empty request). Only a digest mismatch discards them (below).
    const wholeFileRule = (total: number, ended: boolean): Problem | null => {
      if (total > limits.maxFileSizeInBytes) return tooLarge(limits.maxFileSizeInBytes);
      if (declared !== null && (ended ? total !== declared : total > declared))
        return new Problem(
          'bad-content',
          `The upload would have ${total} bytes, but its Upload-Length is ${declared}.`,
        );
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

    const wholeFileRoom = Math.min(
      limits.maxFileSizeInBytes - offset,
      declared !== null ? declared - offset : Infinity,
    );
    const maxBytes = Math.min(limits.uploadMaxChunkSizeInBytes, wholeFileRoom);
    // A completion reads the committed bytes back while its own body streams in behind them.
    const readBack = complete ? new ReadBack(this.blobs, blobOf(upload)) : null;
    const prefix = readBack ? outcome(readBack.until(offset, false)) : null;
    const stopReading = async () => {
      readBack?.stop();
      await prefix;
    };
    let size: number;
    try {
      size = await this.stream(upload, body, maxBytes, chunkRules);
    } catch (error) {
      await stopReading();
      if (error instanceof PartialAppendError || isClientAbort(error)) {
        const kept = error instanceof PartialAppendError ? error.total : offset;
        const row = await sql.commitAppend(this.db, upload.id, lease, kept, kept - offset, announced);
        if (!row) throw await this.leaseLost(caller, upload.id);
        throw inProgress(interrupted(kept - offset), this.stateOf(row));
      }
      if (error instanceof BlobLimitError) {
        if (maxBytes === wholeFileRoom) throw inProgress(wholeFileRule(offset + maxBytes + 1, complete)!, state);
        throw inProgress(chunkTooLarge(limits.uploadMaxChunkSizeInBytes), state);
      }
      if (error instanceof Problem) throw inProgress(error, state);
      throw await this.unlessGone(caller, upload.id, lease, error);
    }
    const total = offset + size;
    renewal.stop(); // what is left is short; a late renewal must not end this request

    if (!complete) {
      const row = await sql.commitAppend(this.db, upload.id, lease, total, size, announced);
      if (!row) throw await this.leaseLost(caller, upload.id);
      return { complete: false, state: this.stateOf(row) };
    }

    const violation = wholeFileRule(total, true);
    if (violation) {
      await stopReading();
      throw inProgress(violation, state);
    }
    // What is answered and recorded is what the store holds, read back: its length and its digest.
    const stored = await this.orGone(caller, upload.id, lease, readBackAll(readBack!, prefix!, total));
    if (!stored) {
      // A cancellation that removed row and bytes under this request is a 404, as when it came first.
      const now = await sql.uploadOf(this.db, upload.id, caller.userId);
      if (now?.lease_token !== lease) throw await this.leaseLost(caller, upload.id);
      await this.drop(upload.id);
      throw new Problem('gone', 'The stored bytes of this upload were lost; start a new upload.');
    }
    const { sha256 } = stored;
    for (const digest of [request.expected, upload.expected_sha256])
      if (digest && !digest.equals(sha256))
        throw await this.discard(
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
    const elementId = upload.element_id;
    try {
      if (elementId === null) throw notFound();
      const started = { ifMatch: upload.if_match ?? undefined, ifNoneMatch: upload.if_none_match ?? undefined };
      await this.files.place(caller, elementId, { ...blobOf(upload), size: total }, meta, {
        // The start's If-Match / If-None-Match, again under the row lock: a file written meanwhile is not replaced
        // when the client asked for that (412; the upload stays as it was before this request, its bytes kept).
        // Otherwise the completion replaces whatever file is there, whether the upload was started by POST or PUT:
        // "The previous file, if any, is replaced" and "The last one to complete wins" (the spec's resumable upload
        // table); POST's 409 for an existing file was decided at the start.
        check: (row) => checkFileTarget(row, 'replace', started),
        inTransaction: async (tx) => {
          if (await sql.deleteLeasedUpload(tx, upload.id, lease)) return;
          throw (await sql.uploadOf(tx, upload.id, caller.userId)) ? leaseLostProblem() : notFound();
        },
      });
    } catch (error) {
      // The target is gone or no longer writable by the creator, or the upload was cancelled meanwhile.
      if (error instanceof Problem && error.slug === 'not-found') await this.drop(upload.id);
      // The target's file no longer meets the start's preconditions.
      if (error instanceof Problem && error.slug === 'precondition-failed') throw inProgress(error, state);
      throw error;
    }
    return { complete: true, elementId: elementId!, offset: total };
  }

  /**
   * DELETE `/upload/<id>`: removes the upload and its bytes, ending a request still appending to it here. An
   * upload whose creator lost UPDATE on its target was cancelled already: 404, as for anyone else's.
   */
  async cancel(caller: Caller, id: string): Promise<void> {
    if (!isUuid(id)) throw notFound();
    const upload = await sql.uploadOf(this.db, id.toLowerCase(), caller.userId);
    if (!upload) throw notFound();
    await this.inFlight.preempt(upload.id);
    // A completion that won the race has removed the row (and moved the bytes): then there was nothing to cancel.
    if (!(await sql.deleteUpload(this.db, upload.id))) throw notFound();
    await this.dropBytes(upload.id);
    if (!upload.permitted) throw notFound();
  }

  /**
   * At the start of an embedded server: the leases in the database were held by requests of an earlier process of
   * this DATA_DIR (the datadir lock admits one), which a crash ended. Without this a client resuming after the
   * crash got 409 until the lease ran out (LEASE_SECONDS). With PostgreSQL another live instance may hold a lease,
   * so there they run out by themselves.
   */
  async releaseStaleLeases(): Promise<number> {
    return this.db.kind === 'pglite' ? await sql.releaseAllLeases(this.db) : 0;
  }

  /**
   * The background job (every instance, the design notes' section 1): removes uploads that expired more than the grace
   * period ago and uploads whose target was deleted or whose creator lost UPDATE on it, with their bytes. Rows are
   * deleted by statements that skip rows another instance is deleting, so each upload is removed once.
   */
  async cleanup(): Promise<CleanupReport> {
    const report: CleanupReport = { expired: 0, cancelled: 0 };
    const graceMs = this.settings.file.expiredUploadCanBeDeletedAfterExpirationInSeconds * 1000;
    const before = new Date(this.clock.now().getTime() - graceMs);
    for (;;) {
      const rows = await sql.deleteExpiredOrOrphaned(this.db, before, CLEANUP_BATCH);
      for (const row of rows) {
        await this.dropBytes(row.id, true);
        report[row.cancelled ? 'cancelled' : 'expired']++;
      }
      if (rows.length < CLEANUP_BATCH) break;
    }
    let after: string | null = null;
    do {
      const batch = await sql.uploadsWithoutAccess(this.db, after, CLEANUP_BATCH);
      for (const id of await sql.deleteWithoutAccess(this.db, batch.denied)) {
        await this.dropBytes(id, true);
        report.cancelled++;
      }
      after = batch.last;
    } while (after !== null);
    return report;
  }

  /** The upload, if the caller created it and may still write its target; 404, 410 or cancellation otherwise. */
  private async usable(caller: Caller, id: string, entered = false): Promise<sql.UploadAccess> {
    if (!isUuid(id)) throw notFound();
    const upload = await sql.uploadOf(this.db, id.toLowerCase(), caller.userId);
    if (!upload) throw notFound();
    if (!upload.permitted) {
      // Creator lost UPDATE on the target, or the target was deleted: the upload is cancelled.
      if (!entered) this.inFlight.abort(upload.id);
      await this.drop(upload.id);
      throw notFound();
    }
    if (upload.expires.getTime() <= this.clock.now().getTime())
      throw new Problem('gone', 'The upload has expired; start a new one.');
    return upload;
  }

  /**
   * The draft: a server that lost part of an upload's state deactivates it. Bytes shorter than the offset mean
   * exactly that, unless a request (of another instance) holds the upload right now: it may be completing it,
   * and has moved the bytes already. `lease` is the caller's own, if it holds one.
   */
  private async checkStored(caller: Caller, upload: sql.UploadRow, lease: string | null = null): Promise<void> {
    if (((await this.blobs.uploadSize(blobOf(upload))) ?? 0) >= upload.offset) return;
    const now = await sql.uploadOf(this.db, upload.id, caller.userId);
    if (!now) throw notFound();
    const heldElsewhere =
      now.lease_token !== null && now.lease_token !== lease && now.lease_until!.getTime() > this.clock.now().getTime();
    if (heldElsewhere) return;
    await this.drop(upload.id);
    throw new Problem('gone', 'The stored bytes of this upload were lost; start a new upload.');
  }

  /** Streams a body into the upload's blob at its offset; the bytes of a body that breaks off are kept. */
  private async stream(
    upload: sql.UploadRow,
    body: AsyncIterable<Uint8Array>,
    maxBytes: number,
    check?: (size: number) => void,
  ): Promise<number> {
    // A body that stalls or crawls is cut off by the HTTP layer (connection-guard.ts), and its bytes are kept like those
    // of any body that breaks off: a hanging connection never keeps the lease for long.
    const appended = await this.blobs.append(blobOf(upload), upload.offset, body, {
      maxBytes,
      keepPartial: true,
      check,
    });
    return appended.size;
  }

  /**
   * Takes an upload over from a request whose lease ran out without being given back: that request may be frozen
   * or cut off from the database and still write. The committed bytes are copied into a new generation, which the
   * row names from now on, and the old one goes; whatever the late request writes lands where nothing refers to it.
   */
  private async takeOver(caller: Caller, upload: sql.UploadRow, lease: string): Promise<sql.UploadRow> {
    const generation = newId();
    await this.orGone(caller, upload.id, lease, this.blobs.fork(blobOf(upload), generation, upload.offset));
    const row = await sql.setGeneration(this.db, upload.id, lease, generation);
    if (!row) {
      await this.blobs.dropGeneration({ key: upload.id, generation });
      throw await this.leaseLost(caller, upload.id);
    }
    // Left to the upload's end or the sweep when this fails: nothing refers to it any more.
    await this.blobs.dropGeneration(blobOf(upload)).catch(() => {});
    return row;
  }

  /**
   * A completion whose digest did not match: the stored bytes are discarded (which of them are wrong cannot be
   * told) and the upload stays in progress at offset 0 (the spec and its design notes), so the client can send it again.
   * Returns the problem to answer with.
   */
  private async discard(upload: sql.UploadRow, lease: string, problem: Problem): Promise<Problem> {
    // Offset first, bytes next, still under the lease: a crash in between leaves extra bytes (cut off by the next
    // append), never an offset the bytes do not back.
    if (!(await sql.resetUpload(this.db, upload.id, lease))) return leaseLostProblem();
    await this.blobs.dropGeneration(blobOf(upload));
    return inProgress(problem, this.stateOf({ ...upload, offset: 0 }));
  }

  /** After a commit found the lease gone: the upload was cancelled (404, its bytes go), or another request took over. */
  private async leaseLost(caller: Caller, id: string): Promise<Problem> {
    const still = await sql.uploadOf(this.db, id, caller.userId);
    if (!still) {
      await this.dropBytes(id);
      return notFound();
    }
    return inProgress(leaseLostProblem(), this.stateOf(still));
  }

  /**
   * What to answer for `error`, a failure to read or write the upload's bytes: when the lease is lost meanwhile (a
   * DELETE of the upload removed row and bytes under this request, or another request took over) that is the
   * answer (404, or 409 with the state), not a server error; else `error` itself.
   */
  private async unlessGone(caller: Caller, id: string, lease: string, error: unknown): Promise<unknown> {
    const now = await sql.uploadOf(this.db, id, caller.userId);
    return now?.lease_token === lease ? error : await this.leaseLost(caller, id);
  }

  /** `work` (reading the upload's bytes), with unlessGone's answer when it fails. */
  private async orGone<T>(caller: Caller, id: string, lease: string, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      throw await this.unlessGone(caller, id, lease, error);
    }
  }

  /** Removes an upload's row and bytes (cancellation). */
  private async drop(id: string): Promise<void> {
    await sql.deleteUpload(this.db, id);
    await this.dropBytes(id);
  }

  /**
   * The row is gone: so go the bytes, of every generation. `endRequests` also ends a request of this instance still
   * appending to it (never when the caller is that request itself).
   */
  private async dropBytes(id: string, endRequests = false): Promise<void> {
    if (endRequests) this.inFlight.abort(id);
    await this.blobs.deleteUpload(id);
  }

  /** Renews the lease while a request works; a lease found lost (taken over, upload removed) ends the request. */
  private keepLease(id: string, lease: string, control: RequestControl): { stop(): void } {
    const timer = setInterval(() => {
      sql.renewLease(this.db, id, lease, this.leaseUntil()).then(
        (held) => held || control.abort(),
        () => {}, // a failed renewal is retried at the next tick; the lease outlives a few of them
      );
    }, RENEW_MS);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  private leaseUntil(): Date {
    return new Date(this.clock.now().getTime() + LEASE_SECONDS * 1000);
  }

  private stateOf(row: sql.UploadRow): UploadState {
    return {
      id: row.id,
      elementId: row.element_id ?? '',
      offset: row.offset,
      length: row.length,
      expires: row.expires,
      limits: this.limitsAt(row.expires),
    };
  }

  /** `Upload-Limit`; `max-age` is the lifetime left, counted from now (the draft: from the response). */
  private limitsAt(expires: Date): UploadLimits {
    const f = this.settings.file;
    return {
      maxAge: Math.max(0, Math.ceil((expires.getTime() - this.clock.now().getTime()) / 1000)),
      maxSize: f.maxFileSizeInBytes,
      minAppendSize: f.uploadMinChunkSizeInBytes,
      maxAppendSize: f.uploadMaxChunkSizeInBytes,
    };
  }
}

const tooLarge = (max: number) =>
  new Problem('bad-content', `The file would be larger than the maximum of ${max} bytes (max-size).`);
const chunkTooLarge = (max: number) =>
  new Problem('bad-content', `A chunk may have at most ${max} bytes (max-append-size).`);
const interrupted = (kept: number) =>
  new Problem(
    'bad-content',
    `The request body ended before it was complete; the ${kept} bytes that arrived were kept. Ask for the offset (HEAD) and go on from there.`,
  );
const leaseLostProblem = () =>
  new Problem(
    'conflict',
    'Another request took over this upload while this one was appending; ask for the offset (HEAD) and go on from there.',
  );

function offsetMismatch(upload: sql.UploadRow, provided: number, state: UploadState): Problem {
  return inProgress(
    new Problem('conflict', `The upload is at offset ${upload.offset}, not ${provided}.`, {
      'expected-offset': upload.offset,
      'provided-offset': provided,
    }),
    state,
  );
}
