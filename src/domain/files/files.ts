// Element files: direct upload, download with one range, removal. Files have no access rules of their own: every
// operation asks the element (READ to download, UPDATE to write or remove). A write streams the body to a temporary
// blob while hashing it, and only then, under the element's row lock, moves the bytes into place and stores the
// metadata, so a body that fails in any way changes nothing (docs/architecture.md, "File durability").
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  BlobLimitError,
  type BlobStore,
  type ByteRange,
  type CompletedUpload,
  type Replacement,
  type SweepReport,
  type TempBlob,
} from '../../blob/blob-store.js';
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { notFound, Problem } from '../../errors.js';
import type { Db, Queryable } from '../../storage/db.js';
import { setFile } from '../../storage/queries/elements.js';
import * as sql from '../../storage/queries/files.js';
import { type ElementId, isUuid } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import { type Conditions, checkIfMatch, checkWritePreconditions, ifNoneMatchHits } from '../elements/conditions.js';
import type { Elements } from '../elements/elements.js';
import type { StoredElement as ElementRow } from '../elements/ports.js';
import type { Tx } from '../transactions.js';
import { parseUploadComplete, parseUploadLength } from '../uploads/upload-fields.js';
import { UploadSlots } from '../uploads/upload-slots.js';
import { ifRangeAllows, parseRange } from './byte-ranges.js';
import { extensionFromDisposition, fileNamePart, parseSha256Digest } from './file-headers.js';
import { detectMimeType, SNIFF_BYTES } from './mime-detect.js';
import type { FileMeta } from './types.js';

/**
 * With a PostgreSQL server several instances may share the blob store, and one of them may be in the middle of
 * an upload while another sweeps: the sweep leaves temporary files and unreferenced bytes younger than this alone.
 * Embedded PGlite holds DATA_DIR exclusively (datadir lock), so there everything left over at startup is garbage
 * at once. Also the interval of the periodic sweep (jobs.ts).
 */
export const SHARED_STORE_GRACE_MS = 60 * 60 * 1000;

/** The upload request headers that matter, as sent (parsed here, so that every mistake is one Problem). */
export interface UploadHeaders {
  uploadComplete?: string;
  uploadLength?: string;
  contentLength?: string;
  contentDisposition?: string;
  reprDigest?: string;
  contentDigest?: string;
}

export interface DownloadRequest {
  range?: string;
  ifRange?: string;
  conditions: Conditions;
  /** HEAD: decide everything, open nothing. */
  bodyless: boolean;
}

export interface Download {
  status: 200 | 206 | 304;
  etag: string;
  file: FileMeta;
  /** Download file name: the element's `name` (or its id) plus `.` and the extension. */
  filename: string;
  /** The part sent with a 206. */
  range: ByteRange | null;
  /** The bytes to send; null for HEAD and 304. */
  stream: Readable | null;
}

/**
 * May a file write of `mode` go ahead on `row`? POST only ever creates an element's file (spec: "POST fails with 409
 * if a file exists", for a direct upload and a resumable start alike); PUT may replace it. Then the preconditions,
 * against the file's ETag.
 */
export function checkFileTarget(row: ElementRow, mode: FileWriteMode, conditions: Conditions): void {
  if (mode === 'create' && row.file)
    throw new Problem('conflict', 'The element already has a file; replace it with PUT or delete it first.');
  checkWritePreconditions(conditions, row.file ? fileEtag(row) : null);
}

/** POST /<id>/file creates, PUT replaces. */
export type FileWriteMode = 'create' | 'replace';

/** A strong ETag of the file bytes: from the SHA-256 when known (files from old backups may have none). */
function fileEtag(row: ElementRow): string {
  const file = row.file!;
  if (file.hash.sha256) return `"sha256-${Buffer.from(file.hash.sha256, 'hex').toString('base64url').slice(0, 27)}"`;
  const basis = `${row.id}\n${row.updated.toISOString()}\n${JSON.stringify(file)}`;
  return `"file-${createHash('sha256').update(basis).digest('base64url').slice(0, 27)}"`;
}

/**
 * The tag of the bytes the database refers to (see BlobStore.replace and sweep): the disk store sets the current
 * bytes aside under it during a replacement, the object store names each version of a file by it.
 */
export function blobTag(file: FileMeta | null): string {
  if (!file) return 'none';
  return file.hash.sha256 ?? 'unhashed';
}

function downloadName(row: ElementRow): string {
  // Cleaned here rather than when stored: data.name is the client's own value, and an extension may come from a
  // backup; only the offered name must not be able to disguise itself.
  const name = typeof row.data.name === 'string' ? fileNamePart(row.data.name) : '';
  const extension = fileNamePart(row.file!.extension);
  return `${name.length > 0 ? name : row.id}.${extension.length > 0 ? extension : 'bin'}`;
}

/** Whether a body failed because the client went away (rather than because of the server). */
export const isClientAbort = (error: unknown) => {
  const code = (error as NodeJS.ErrnoException)?.code;
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ECONNABORTED';
};

export class Files {
  /** Shared with Uploads: direct uploads and resumable ones count against the same cap. */
  readonly uploadSlots: UploadSlots;

  constructor(
    private readonly db: Db,
    private readonly settings: Settings,
    private readonly clock: Clock,
    private readonly blobs: BlobStore,
    private readonly elements: Elements,
  ) {
    this.uploadSlots = new UploadSlots(settings.file.maxConcurrentUploads);
  }

  /**
   * POST (`create`: 409 when a file exists) or PUT (`replace`) of `/<id>/file`. `body` is the request body, read
   * here exactly once. Returns whether the element had no file before (PUT answers 201 then, else 204).
   */
  async upload(
    caller: Caller,
    id: string,
    mode: FileWriteMode,
    body: AsyncIterable<Uint8Array>,
    headers: UploadHeaders,
    conditions: Conditions = {},
  ): Promise<void> {
    // Everything that can be refused from the headers alone is refused before a byte of the body is read.
    // `Upload-Complete: ?0` starts a resumable upload, which the routes hand to Uploads.start instead.
    if (!parseUploadComplete(headers.uploadComplete)) throw new Error('Files.upload takes direct uploads only');
    const uploadLength = parseUploadLength(headers.uploadLength);
    const contentLength = headers.contentLength === undefined ? undefined : Number(headers.contentLength);
    if (uploadLength !== undefined && contentLength !== undefined && uploadLength !== contentLength)
      throw new Problem(
        'bad-content',
        `Upload-Length (${uploadLength}) and Content-Length (${contentLength}) disagree.`,
      );
    const expected = parseSha256Digest(headers.reprDigest, headers.contentDigest);
    const extension = extensionFromDisposition(headers.contentDisposition);
    const max = this.settings.file.maxFileSizeInBytes;
    const announced = uploadLength ?? contentLength;
    if (announced !== undefined && announced > max) throw tooLarge(max);
    checkFileTarget(
      await this.elements.require(this.db as unknown as Tx, caller, id as ElementId, 'UPDATE'),
      mode,
      conditions,
    );

    const release = this.uploadSlots.take();
    try {
      await this.store(caller, id, mode, body, conditions, { announced, expected, extension, max });
    } finally {
      release();
    }
  }

  private async store(
    caller: Caller,
    id: string,
    mode: FileWriteMode,
    body: AsyncIterable<Uint8Array>,
    conditions: Conditions,
    {
      announced,
      expected,
      extension,
      max,
    }: { announced: number | undefined; expected: Buffer | undefined; extension: string; max: number },
  ): Promise<void> {
    const temp = await this.receive(body, announced ?? max, max);
    try {
      if (announced !== undefined && temp.size !== announced)
        throw new Problem('bad-content', `The body has ${temp.size} bytes, but ${announced} were announced.`);
      if (expected && !expected.equals(temp.sha256))
        throw new Problem('bad-content', 'The SHA-256 of the body does not match the digest sent; nothing was stored.');
      const meta: FileMeta = {
        contentLength: temp.size,
        extension,
        mimeType: await detectMimeType(temp.head, temp.size),
        hash: { sha256: temp.sha256.toString('hex') },
      };
      // again, now under the lock: another writer may have been first
      await this.place(caller, id, temp, meta, { check: (row) => checkFileTarget(row, mode, conditions) });
    } finally {
      // Once placed, the temporary name no longer exists and this removes nothing.
      await this.blobs.discard(temp);
    }
  }

  /**
   * Makes `bytes` (a temporary blob, or the bytes of a completed resumable upload) the file of
   * element `id`, described by `meta`, in one transaction that holds the element's row lock and requires UPDATE.
   * `check` runs under the lock before anything moves; `inTransaction` runs in the same transaction (a completing
   * upload removes its row there). The previous bytes are set aside, dropped after the commit and put back if the
   * transaction fails (see BlobStore.replace).
   */
  async place(
    caller: Caller,
    id: string,
    bytes: TempBlob | CompletedUpload,
    meta: FileMeta,
    hooks: { check?: (row: ElementRow) => void; inTransaction?: (tx: Queryable) => Promise<void> } = {},
  ): Promise<void> {
    const committed: { replacement: Replacement | null } = { replacement: null };
    try {
      await this.db.transaction(async (tx) => {
        const row = await this.elements.require(tx as unknown as Tx, caller, id as ElementId, 'UPDATE', { lock: true });
        hooks.check?.(row);
        await hooks.inTransaction?.(tx);
        const tags = { previous: blobTag(row.file), next: blobTag(meta) };
        const replacement = await this.blobs.replace(row.id, bytes, tags);
        try {
          await setFile(tx, row.id, meta, this.clock.now());
        } catch (error) {
          await replacement.undo(); // still under the row lock
          throw error;
        }
        committed.replacement = replacement;
      });
    } catch (error) {
      await committed.replacement?.undo(); // the COMMIT itself failed after the bytes had moved
      throw error;
    }
    await committed.replacement!.finish();
  }

  /** Streams the body into a temporary blob; size violations and broken bodies become Problems. */
  private async receive(body: AsyncIterable<Uint8Array>, limit: number, max: number): Promise<TempBlob> {
    try {
      return await this.blobs.write(body, { maxBytes: limit, headBytes: SNIFF_BYTES });
    } catch (error) {
      if (error instanceof BlobLimitError)
        throw limit === max
          ? tooLarge(max)
          : new Problem('bad-content', `The body is longer than the ${limit} bytes announced.`);
      if (isClientAbort(error))
        throw new Problem('bad-content', 'The request body ended before it was complete; nothing was stored.');
      throw error;
    }
  }

  /** GET or HEAD of `/<id>/file`. Missing element, no access and no file are the same 404. */
  async download(caller: Caller, id: string, request: DownloadRequest): Promise<Download> {
    if (!isUuid(id)) throw notFound();
    // A store that keeps each version under its tag is opened after the transaction, so that a slow store holds
    // no database connection: the version the row names stays until a replacement has committed, and one that
    // went meanwhile means the metadata read is no longer current, so the download starts again.
    for (let attempt = 1; ; attempt++) {
      const decided = await this.decideDownload(caller, id, request, !this.blobs.versioned);
      if (decided.stream !== null || decided.status === 304 || request.bodyless || !this.blobs.versioned)
        return decided;
      const blob = await this.openFile(decided, decided.range, attempt < VERSION_ATTEMPTS);
      if (blob) return { ...decided, stream: blob };
    }
  }

  /** Reads the element's file metadata and decides the answer; opens the bytes too when `open` says so. */
  private async decideDownload(
    caller: Caller,
    id: string,
    request: DownloadRequest,
    open: boolean,
  ): Promise<Download & { id: string }> {
    const opened: { stream: Readable | null } = { stream: null };
    try {
      // With `open`, the shared row lock keeps writers from moving bytes between reading the metadata and opening
      // the bytes; once open, the descriptor keeps reading the same bytes whatever happens to the name.
      return await this.db.transaction(async (tx) => {
        if (open) await sql.lockForDownload(tx, id.toLowerCase());
        const row = await this.elements.require(tx as unknown as Tx, caller, id as ElementId, 'READ');
        const file = row.file;
        if (!file) throw notFound();
        const etag = fileEtag(row);
        const base = { id: row.id, etag, file, filename: downloadName(row), stream: null };
        checkIfMatch(request.conditions.ifMatch, etag);
        if (ifNoneMatchHits(request.conditions.ifNoneMatch, etag)) return { ...base, status: 304, range: null };
        const range = ifRangeAllows(request.ifRange, etag) ? parseRange(request.range, file.contentLength) : null;
        const status = range ? 206 : 200;
        if (request.bodyless || !open) return { ...base, status, range };
        const stream = await this.openFile(base, range, false);
        opened.stream = stream;
        return { ...base, status, range, stream };
      });
    } catch (error) {
      opened.stream?.destroy();
      throw error;
    }
  }

  /** Opens the stored bytes of a file; null (when `mayBeGone`) if its version is no longer there. */
  private async openFile(
    target: { id: string; file: FileMeta },
    range: ByteRange | null,
    mayBeGone: boolean,
  ): Promise<Readable | null> {
    const { id, file } = target;
    const blob = await this.blobs.open(id, range ?? undefined, blobTag(file));
    if (!blob) {
      if (mayBeGone) return null;
      throw new Error(`the bytes of the file of element ${id} are missing`);
    }
    if (blob.size !== file.contentLength) {
      blob.stream.destroy();
      throw new Error(
        `the file of element ${id} has ${blob.size} bytes stored, its metadata says ${file.contentLength}`,
      );
    }
    return blob.stream;
  }

  /** DELETE `/<id>/file`: the bytes and the `file`/`hasFile` metadata go; 404 when there is no file. */
  async remove(caller: Caller, id: string, conditions: Conditions = {}): Promise<void> {
    const committed: { replacement: Replacement | null } = { replacement: null };
    try {
      await this.db.transaction(async (tx) => {
        const row = await this.elements.require(tx as unknown as Tx, caller, id as ElementId, 'UPDATE', { lock: true });
        if (!row.file) throw notFound();
        checkWritePreconditions(conditions, fileEtag(row));
        const replacement = await this.blobs.replace(row.id, null, { previous: blobTag(row.file), next: 'none' });
        try {
          await setFile(tx, row.id, null, this.clock.now());
        } catch (error) {
          await replacement.undo();
          throw error;
        }
        committed.replacement = replacement;
      });
    } catch (error) {
      await committed.replacement?.undo();
      throw error;
    }
    await committed.replacement!.finish();
  }

  /**
   * Clean-up of the blob store: temporary files, bytes no element or upload refers to, and replacements a crash
   * interrupted (settled at once, under the element's row lock, by what the database committed). At startup
   * with the default grace, and periodically (jobs.ts) with the shared grace on every backend, since this
   * instance's own uploads are then in flight. Without the periodic run, a crash's leftovers on a
   * PostgreSQL-backed instance stayed until a restart more than the grace later.
   */
  async sweep(graceMs = this.db.kind === 'pglite' ? 0 : SHARED_STORE_GRACE_MS): Promise<SweepReport> {
    return this.blobs.sweep({
      graceMs,
      // Names that are not UUIDs were not written by this service: leave them alone.
      wanted: async (keys) => {
        const referenced = await sql.referencedBlobKeys(
          this.db,
          keys.filter((k) => isUuid(k)),
        );
        for (const key of keys) if (!isUuid(key)) referenced.add(key);
        return referenced;
      },
      tags: async (keys) => {
        const files = await sql.fileTags(
          this.db,
          keys.filter((k) => isUuid(k)),
        );
        return new Map([...files].map(([id, sha256]) => [id, sha256 ?? 'unhashed']));
      },
      settleAside: async (key, settle) => {
        if (!isUuid(key)) return false;
        await this.db.transaction(async (tx) => {
          const file = await sql.lockFileForSweep(tx, key);
          await settle(file === undefined ? undefined : (file.sha256 ?? 'unhashed'));
        });
        return true;
      },
    });
  }
}

/** Reads of a file's metadata before a download gives up on finding the version it names (see `download`). */
const VERSION_ATTEMPTS = 3;

const tooLarge = (max: number) =>
  new Problem('bad-content', `The file is larger than the maximum of ${max} bytes; nothing was stored.`);
