// Resumable uploads (draft-ietf-httpbis-resumable-upload): an upload is a row (offset, declared length, expiry,
// creator, target) and a blob under the upload id. The offset advances only by bytes made durable, so the offset HEAD
// reports is always one the next PATCH can use; completion moves the blob into place as the element's file. One
// request appends at a time, and no transaction stays open while a body streams (docs/architecture.md, "Resumable
// uploads"). A request that takes an upload over from one whose lease ran out writes to a new generation of its
// bytes, so the late writer cannot touch what counts; a completion reads the stored bytes back and answers with
// their length and digest, never with what it believes it wrote (docs/decisions/026-upload-generations.md).
//
// The service's parts: the start (upload-start.ts), the append with its lease (upload-append.ts), the completion
// (upload-completion.ts) and the ends of uploads that do not complete (upload-cleanup.ts).
import type { BlobStore } from '../../blob/blob-store.js';
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import type { ElementId } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import type { Conditions } from '../elements/conditions.js';
import type { Elements } from '../elements/elements.js';
import type { Files, FileWriteMode } from '../files/files.js';
import type { Transactions } from '../transactions.js';
import type { UploadId, UploadStore } from './ports.js';
import { appendToUpload } from './upload-append.js';
import { cancelUpload, cleanupUploads, releaseStaleLeases } from './upload-cleanup.js';
import { UploadContext } from './upload-context.js';
import type { AppendFields, AppendResult, CleanupReport, RequestControl, StartRequest } from './upload-requests.js';
import { startUpload } from './upload-start.js';
import type { UploadState } from './upload-state.js';

export class Uploads {
  private readonly ctx: UploadContext;

  constructor(
    tx: Transactions,
    store: UploadStore,
    settings: Settings,
    clock: Clock,
    blobs: BlobStore,
    elements: Elements,
    files: Files,
  ) {
    this.ctx = new UploadContext(tx, store, settings, clock, blobs, elements, files);
  }

  /**
   * POST/PUT `/<elementId>/file` with `Upload-Complete: ?0`: creates the upload and stores the body as its first
   * chunk (upload-start.ts). `announce` sends the 104 once the upload exists; it says whether the client was told.
   */
  async start(
    caller: Caller,
    elementId: ElementId,
    mode: FileWriteMode,
    body: AsyncIterable<Uint8Array>,
    fields: StartRequest,
    conditions: Conditions,
    control: RequestControl,
    announce?: (state: UploadState) => boolean,
  ): Promise<UploadState> {
    return startUpload(this.ctx, caller, elementId, mode, body, { fields, conditions, control, announce });
  }

  /**
   * HEAD `/upload/<id>`. A request still appending to the upload in this instance is ended first (and its bytes
   * committed), so the offset answered is the one the next append must use.
   */
  async state(caller: Caller, id: UploadId): Promise<UploadState> {
    let upload = await this.ctx.usable(caller, id);
    if (await this.ctx.inFlight.preempt(upload.id)) upload = await this.ctx.usable(caller, id);
    await this.ctx.checkStored(caller, upload);
    return this.ctx.stateOf(upload);
  }

  /** PATCH `/upload/<id>`: appends the body at `Upload-Offset`; with `Upload-Complete: ?1` completes the upload. */
  async append(
    caller: Caller,
    id: UploadId,
    body: AsyncIterable<Uint8Array>,
    fields: AppendFields,
    control: RequestControl,
  ): Promise<AppendResult> {
    return appendToUpload(this.ctx, caller, id, body, fields, control);
  }

  /** DELETE `/upload/<id>` (upload-cleanup.ts). */
  async cancel(caller: Caller, id: UploadId): Promise<void> {
    return cancelUpload(this.ctx, caller, id);
  }

  /** At the start of an embedded server: ends the leases a crashed process left (upload-cleanup.ts). */
  async releaseStaleLeases(): Promise<number> {
    return releaseStaleLeases(this.ctx);
  }

  /** The background job: removes expired and cancelled uploads with their bytes (upload-cleanup.ts). */
  async cleanup(): Promise<CleanupReport> {
    return cleanupUploads(this.ctx);
  }
}
