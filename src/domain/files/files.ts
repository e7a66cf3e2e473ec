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
import { type ElementId, parseElementId } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import { fileAllow } from '../elements/allowed-methods.js';
import { type Conditions, checkIfMatch, checkWritePreconditions, ifNoneMatchHits } from '../elements/conditions.js';
import type { Elements } from '../elements/elements.js';
import type { Transactions, Tx } from '../transactions.js';
import { UploadSlots } from '../uploads/upload-slots.js';
import { ifRangeAllows, type RangeRequest, satisfiableRange } from './byte-ranges.js';
import { fileNamePart } from './file-names.js';
import { detectMimeType, SNIFF_BYTES } from './mime-detect.js';
import type { FileStore } from './ports.js';
import type { FileMeta, FileTarget } from './types.js';

/**
 * With a PostgreSQL server several instances may share the blob store, and one of them may be in the middle of
 * an upload while another sweeps: the sweep leaves temporary files and unreferenced bytes younger than this alone.
 * Embedded PGlite holds DATA_DIR exclusively (datadir lock), so there everything left over at startup is garbage
 * at once. Also the interval of the periodic sweep (jobs.ts).
 */
export const SHARED_STORE_GRACE_MS = 60 * 60 * 1000;

/** A direct upload (`Upload-Complete: ?1`), its header fields parsed at the edge (http/upload-requests.ts). */
export interface DirectUpload {
  /** The size the client announced: Upload-Length, or else Content-Length (they agree when both are sent). */
  announced: number | undefined;
  /** The SHA-256 the body must have (Repr-Digest or Content-Digest). */
  expected: Buffer | undefined;
  /** The file's extension, from Content-Disposition. */
  extension: string;
}

export interface DownloadRequest {
  /** The Range asked for, or the problem its header was (answered only when If-Range lets it apply). */
  range: RangeRequest | Problem | null;
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
  /** The methods the caller may use on the file (allowed-methods.ts). */
  allow: string;
}

/**
 * May a file write of `mode` go ahead on `row`? POST only ever creates an element's file (spec: "POST fails with 409
 * if a file exists", for a direct upload and a resumable start alike); PUT may replace it. Then the preconditions,
 * against the file's ETag.
 */
export function checkFileTarget(row: FileTarget, mode: FileWriteMode, conditions: Conditions): void {
  if (mode === 'create' && row.file)
    throw new Problem('conflict', 'The element already has a file; replace it with PUT or delete it first.');
  checkWritePreconditions(conditions, row.file ? fileEtag(row) : null);
}

/** POST /<id>/file creates, PUT replaces. */
export type FileWriteMode = 'create' | 'replace';

/** A strong ETag of the file bytes: from the SHA-256 when known (files from old backups may have none). */
function fileEtag(row: FileTarget): string {
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

function downloadName(row: FileTarget): string {
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
    private readonly tx: Transactions,
    private readonly store: FileStore,
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
    id: ElementId,
    mode: FileWriteMode,
    body: AsyncIterable<Uint8Array>,
    { announced, expected, extension }: DirectUpload,
    conditions: Conditions = {},
  ): Promise<void> {
    // Everything that can be refused from the headers alone is refused before a byte of the body is read (their
    // formats at the edge already). `Upload-Complete: ?0` starts a resumable upload: Uploads.start.
    const max = this.settings.file.maxFileSizeInBytes;
    if (announced !== undefined && announced > max) throw tooLarge(max);
    checkFileTarget(await this.elements.require(this.tx.direct, caller, id, 'UPDATE'), mode, conditions);

    const release = this.uploadSlots.take();
    try {
      await this.write(caller, id, mode, body, conditions, { announced, expected, extension, max });
    } finally {
      release();
    }
  }

  private async write(
    caller: Caller,
    id: ElementId,
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
    id: ElementId,
    bytes: TempBlob | CompletedUpload,
    meta: FileMeta,
    hooks: { check?: (row: FileTarget) => void; inTransaction?: (tx: Tx) => Promise<void> } = {},
  ): Promise<void> {
    const committed: { replacement: Replacement | null } = { replacement: null };
    try {
      await this.tx.transaction(async (tx) => {
        const row = await this.elements.require(tx, caller, id, 'UPDATE', { lock: true });
        hooks.check?.(row);
        await hooks.inTransaction?.(tx);
        const tags = { previous: blobTag(row.file), next: blobTag(meta) };
        const replacement = await this.blobs.replace(id, bytes, tags);
        try {
          await this.store.setFile(tx, id, meta, this.clock.now());
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
  async download(caller: Caller, id: ElementId, request: DownloadRequest): Promise<Download> {
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
    id: ElementId,
    request: DownloadRequest,
    open: boolean,
  ): Promise<Download & { id: ElementId }> {
    const opened: { stream: Readable | null } = { stream: null };
    try {
      // With `open`, the shared row lock keeps writers from moving bytes between reading the metadata and opening
      // the bytes; once open, the descriptor keeps reading the same bytes whatever happens to the name.
      return await this.tx.transaction(async (tx) => {
        if (open) await this.store.lockForDownload(tx, id);
        const { element: row, mayUpdate } = await this.elements.requireReadable(tx, caller, id);
        const file = row.file;
        if (!file) throw notFound();
        const etag = fileEtag(row);
        const base = { id, etag, file, filename: downloadName(row), stream: null, allow: fileAllow(mayUpdate) };
        checkIfMatch(request.conditions.ifMatch, etag);
        if (ifNoneMatchHits(request.conditions.ifNoneMatch, etag)) return { ...base, status: 304, range: null };
        const range = ifRangeAllows(request.ifRange, etag) ? rangeOf(request.range, file.contentLength) : null;
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
    target: { id: ElementId; file: FileMeta },
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
  async remove(caller: Caller, id: ElementId, conditions: Conditions = {}): Promise<void> {
    const committed: { replacement: Replacement | null } = { replacement: null };
    try {
      await this.tx.transaction(async (tx) => {
        const row = await this.elements.require(tx, caller, id, 'UPDATE', { lock: true });
        if (!row.file) throw notFound();
        checkWritePreconditions(conditions, fileEtag(row));
        const replacement = await this.blobs.replace(id, null, { previous: blobTag(row.file), next: 'none' });
        try {
          await this.store.setFile(tx, id, null, this.clock.now());
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
  async sweep(graceMs = this.tx.embedded ? 0 : SHARED_STORE_GRACE_MS): Promise<SweepReport> {
    return this.blobs.sweep({
      graceMs,
      // Names that are not UUIDs were not written by this service: leave them alone.
      wanted: async (keys) => {
        const referenced = await this.store.referencedBlobKeys(this.tx.direct, idsAmong(keys));
        for (const key of keys) if (parseElementId(key) === null) referenced.add(key);
        return referenced;
      },
      tags: async (keys) => {
        const files = await this.store.fileTags(this.tx.direct, idsAmong(keys));
        return new Map([...files].map(([id, sha256]) => [id, sha256 ?? 'unhashed']));
      },
      settleAside: async (key, settle) => {
        const id = parseElementId(key);
        if (id === null) return false;
        await this.tx.transaction(async (tx) => {
          const file = await this.store.lockFileForSweep(tx, id);
          await settle(file === undefined ? undefined : (file.sha256 ?? 'unhashed'));
        });
        return true;
      },
    });
  }
}

/**
 * The UUIDs among the names of a blob store's listing, as the database holds them: the store is read here like a
 * request, from outside the domain.
 */
function idsAmong(keys: readonly string[]): ElementId[] {
  return keys.flatMap((key) => parseElementId(key) ?? []);
}

/** The range to send, from what the client asked for (its problem, if its Range could not be read). */
function rangeOf(request: RangeRequest | Problem | null, total: number): ByteRange | null {
  if (request === null) return null;
  if (request instanceof Problem) throw request;
  return satisfiableRange(request, total);
}

/** Reads of a file's metadata before a download gives up on finding the version it names (see `download`). */
const VERSION_ATTEMPTS = 3;

const tooLarge = (max: number) =>
  new Problem('bad-content', `The file is larger than the maximum of ${max} bytes; nothing was stored.`);
