// What the parts of the upload service (start, append, completion, cleanup) share: their dependencies, and the
// steps every one of them takes on an upload's row, lease and bytes.
import type { BlobStore, UploadBlob } from '../../blob/blob-store.js';
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { notFound, Problem } from '../../errors.js';
import type { Caller } from '../accounts/types.js';
import type { Elements } from '../elements/elements.js';
import type { Files } from '../files/files.js';
import type { Transactions } from '../transactions.js';
import type { Upload, UploadAccess, UploadId, UploadStore } from './ports.js';
import { UploadsInFlight } from './upload-inflight.js';
import type { RequestControl } from './upload-requests.js';
import { inProgress, leaseLostProblem, type UploadLimits, type UploadState } from './upload-state.js';

/** How long a lease lasts without renewal (clock seconds): the longest a dead instance can block an upload. */
const LEASE_SECONDS = 60;
/** How often a running request renews its lease (real time). */
const RENEW_MS = 15_000;

/** Where the committed bytes of an upload are. */
export const blobOf = (upload: Upload): UploadBlob => ({ key: upload.id, generation: upload.generation });

export class UploadContext {
  readonly inFlight = new UploadsInFlight();

  constructor(
    readonly tx: Transactions,
    readonly store: UploadStore,
    readonly settings: Settings,
    readonly clock: Clock,
    readonly blobs: BlobStore,
    readonly elements: Elements,
    readonly files: Files,
  ) {}

  /** The upload, if the caller created it and may still write its target; 404, 410 or cancellation otherwise. */
  async usable(caller: Caller, id: UploadId, entered = false): Promise<UploadAccess> {
    const upload = await this.store.uploadOf(this.tx.direct, id, caller.userId);
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
  async checkStored(caller: Caller, upload: Upload, lease: string | null = null): Promise<void> {
    if (((await this.blobs.uploadSize(blobOf(upload))) ?? 0) >= upload.offset) return;
    const now = await this.store.uploadOf(this.tx.direct, upload.id, caller.userId);
    if (!now) throw notFound();
    const heldElsewhere =
      now.leaseToken !== null && now.leaseToken !== lease && now.leaseUntil!.getTime() > this.clock.now().getTime();
    if (heldElsewhere) return;
    await this.drop(upload.id);
    throw new Problem('gone', 'The stored bytes of this upload were lost; start a new upload.');
  }

  /** Streams a body into the upload's blob at its offset; the bytes of a body that breaks off are kept. */
  async stream(
    upload: Upload,
    body: AsyncIterable<Uint8Array>,
    maxBytes: number,
    check?: (size: number) => void,
  ): Promise<number> {
    // A body that stalls or crawls is cut off by the HTTP layer (connection-guard.ts), and its bytes are kept like
    // those of any body that breaks off: a hanging connection never keeps the lease for long.
    const appended = await this.blobs.append(blobOf(upload), upload.offset, body, {
      maxBytes,
      keepPartial: true,
      check,
    });
    return appended.size;
  }

  /** After a commit found the lease gone: the upload was cancelled (404, its bytes go), or another request took over. */
  async leaseLost(caller: Caller, id: UploadId): Promise<Problem> {
    const still = await this.store.uploadOf(this.tx.direct, id, caller.userId);
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
  async unlessGone(caller: Caller, id: UploadId, lease: string, error: unknown): Promise<unknown> {
    const now = await this.store.uploadOf(this.tx.direct, id, caller.userId);
    return now?.leaseToken === lease ? error : await this.leaseLost(caller, id);
  }

  /** `work` (reading the upload's bytes), with unlessGone's answer when it fails. */
  async orGone<T>(caller: Caller, id: UploadId, lease: string, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      throw await this.unlessGone(caller, id, lease, error);
    }
  }

  /** Removes an upload's row and bytes (cancellation). */
  async drop(id: UploadId): Promise<void> {
    await this.store.deleteUpload(this.tx.direct, id);
    await this.dropBytes(id);
  }

  /**
   * The row is gone: so go the bytes, of every generation. `endRequests` also ends a request of this instance still
   * appending to it (never when the caller is that request itself).
   */
  async dropBytes(id: UploadId, endRequests = false): Promise<void> {
    if (endRequests) this.inFlight.abort(id);
    await this.blobs.deleteUpload(id);
  }

  /** Renews the lease while a request works; a lease found lost (taken over, upload removed) ends the request. */
  keepLease(id: UploadId, lease: string, control: RequestControl): { stop(): void } {
    const timer = setInterval(() => {
      this.store.renewLease(this.tx.direct, id, lease, this.leaseUntil()).then(
        (held) => held || control.abort(),
        () => {}, // a failed renewal is retried at the next tick; the lease outlives a few of them
      );
    }, RENEW_MS);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  leaseUntil(): Date {
    return new Date(this.clock.now().getTime() + LEASE_SECONDS * 1000);
  }

  stateOf(upload: Upload): UploadState {
    return {
      id: upload.id,
      elementId: upload.elementId ?? '',
      offset: upload.offset,
      length: upload.length,
      expires: upload.expires,
      limits: this.limitsAt(upload.expires),
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
