// What resumable uploads need from the database, in the domain's own terms; storage/upload-store.ts implements it
// in SQL. Every method is one short statement: no transaction stays open while a body streams, and an append holds
// a lease (a token with an expiry) instead of a lock.
import type { ElementId } from '../../values.js';
import type { Tx } from '../transactions.js';

/** An upload's id: a UUID, lower-cased, made like an element's id (parseElementId at the edge, newId here). */
export type UploadId = ElementId;

/** An upload as stored. */
export interface Upload {
  id: UploadId;
  /** The target; null once the element was deleted. */
  elementId: ElementId | null;
  userId: string;
  offset: number;
  length: number | null;
  chunks: number;
  extension: string;
  expectedSha256: Buffer | null;
  leaseToken: string | null;
  leaseUntil: Date | null;
  created: Date;
  expires: Date;
  /** The start's preconditions on the target's file, checked again at completion. */
  ifMatch: string | null;
  ifNoneMatch: string | null;
  /** Which generation of the blob holds the committed bytes (null: the first). */
  generation: string | null;
}

/** The upload and whether its creator may still write its target (false also when the target was deleted). */
export type UploadAccess = Upload & { permitted: boolean };

interface NewUpload {
  id: UploadId;
  elementId: ElementId;
  userId: string;
  length: number | null;
  extension: string;
  expectedSha256: Buffer | null;
  leaseToken: string;
  leaseUntil: Date;
  created: Date;
  expires: Date;
  ifMatch: string | null;
  ifNoneMatch: string | null;
}

export interface UploadStore {
  /** The upload, if `userId` created it: for anyone else it does not exist. */
  uploadOf(tx: Tx, id: UploadId, userId: string): Promise<UploadAccess | null>;
  /** Fails with 'missing-reference' (Transactions.failureOf) when the target is gone. */
  insertUpload(tx: Tx, upload: NewUpload): Promise<Upload>;
  /** Ends every lease (at the start of the only process that may hold any). Returns how many. */
  releaseAllLeases(tx: Tx): Promise<number>;
  /**
   * Takes the lease for an append at `offset` when nobody holds it or the holder's ran out by `now`. Null when the
   * upload is gone, its offset moved, or someone else holds it. `takenOver`: the lease was taken from a holder
   * whose lease ran out without being given back, which may still be writing.
   */
  takeLease(
    tx: Tx,
    id: UploadId,
    userId: string,
    offset: number,
    token: string,
    now: Date,
    until: Date,
  ): Promise<(Upload & { takenOver: boolean }) | null>;
  /** Names the generation that holds the bytes from now on, if `token` still holds the lease. */
  setGeneration(tx: Tx, id: UploadId, token: string, generation: string): Promise<Upload | null>;
  /** Extends a lease `token` still holds; false when it was lost. */
  renewLease(tx: Tx, id: UploadId, token: string, until: Date): Promise<boolean>;
  /**
   * Records what an append made durable and gives the lease back, if `token` still holds it. `appended` bytes count
   * as one chunk when there are any; `length` is kept when the upload had none. Null when the lease was lost.
   */
  commitAppend(
    tx: Tx,
    id: UploadId,
    token: string,
    offset: number,
    appended: number,
    length?: number | null,
  ): Promise<Upload | null>;
  /** Back to offset 0 and no chunks, still under the lease; false when it was lost. */
  resetUpload(tx: Tx, id: UploadId, token: string): Promise<boolean>;
  /** Gives a lease back unchanged. */
  releaseLease(tx: Tx, id: UploadId, token: string): Promise<void>;
  /** Removes the upload of a completion under its lease; false if it is gone or the lease was lost. */
  deleteLeasedUpload(tx: Tx, id: UploadId, token: string): Promise<boolean>;
  /** Removes an upload whatever its state; false when there was none. */
  deleteUpload(tx: Tx, id: UploadId): Promise<boolean>;
  /**
   * Removes up to `limit` uploads that expired before `before` or whose target was deleted (`cancelled`), skipping
   * those another instance is removing right now.
   */
  deleteExpiredOrOrphaned(tx: Tx, before: Date, limit: number): Promise<Array<{ id: UploadId; cancelled: boolean }>>;
  /**
   * One batch of the access check over all uploads, in id order after `after`: those whose creator no longer has
   * UPDATE on the target, and the last id looked at (null when there were no more).
   */
  uploadsWithoutAccess(
    tx: Tx,
    after: UploadId | null,
    limit: number,
  ): Promise<{ denied: UploadId[]; last: UploadId | null }>;
  /** Removes those of `ids` whose creator still lacks UPDATE (checked again). */
  deleteWithoutAccess(tx: Tx, ids: readonly UploadId[]): Promise<UploadId[]>;
}
