// What the requests of resumable uploads hand the domain: their header fields parsed at the edge (http/
// upload-requests.ts), the control of the exchange, and the answers.
import type { Problem } from '../../errors.js';
import type { UploadState } from './upload-state.js';

/** A POST/PUT of `/<id>/file` with `Upload-Complete: ?0`. */
export interface StartRequest {
  /** Upload-Length, when declared. */
  length: number | null;
  contentLength: number | undefined;
  /** The SHA-256 the whole file must have (Repr-Digest or Content-Digest). */
  expected: Buffer | null;
  /** The file's extension, from Content-Disposition. */
  extension: string;
}

/** A PATCH of `/upload/<id>`. */
export interface AppendRequest {
  /** Upload-Complete: this append completes the upload. */
  complete: boolean;
  /** Upload-Offset: where the client believes the upload is. */
  offset: number;
  /** Upload-Length, when this request declares one. */
  length: number | null;
  contentLength: number | undefined;
  /** The SHA-256 the whole file must have; only read on a completion. */
  expected: Buffer | null;
}

/**
 * The fields of an append, or the problem that refused one of them: answered only once the upload is known to be
 * the caller's (someone else's upload is a 404 whatever the fields say), with the upload's offset.
 */
export type AppendFields = AppendRequest | Problem;

/** The HTTP exchange behind a request, as far as the upload service needs it. */
export interface RequestControl {
  /**
   * Ends the exchange (closes the connection) while its body is still arriving: a newer request to the upload
   * takes over. A no-op once the whole body has arrived: the request then finishes, and the newer one waits for it.
   */
  abort(): void;
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
