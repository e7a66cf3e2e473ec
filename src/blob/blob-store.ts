// Where file bytes live, behind one interface that the domain uses; FsBlobStore (fs-blob-store.ts) keeps them on
// disk, S3BlobStore (s3-blob-store.ts) in an S3-compatible bucket. Replacing bytes is two-phase so that it can follow
// the database transaction that refers to them: the previous bytes stay until the caller settles the Replacement
// (docs/architecture.md, "File durability").
import type { Readable } from 'node:stream';

/** What a blob key may be on every store: a file name and an object name alike. */
export const BLOB_KEY = /^[A-Za-z0-9_-]{2,128}$/;

export function checkKey(key: string): string {
  if (!BLOB_KEY.test(key)) throw new Error(`invalid blob key ${JSON.stringify(key)}`);
  return key;
}

/**
 * The bytes of a resumable upload: its key, and the generation the database names as holding its committed bytes.
 * A writer that takes an upload over from one whose lease ran out (a frozen or partitioned instance, which may still
 * wake up and write) forks a new generation and never writes into the old one, so the late writer's bytes land
 * where nothing refers to them: generations are the fence (docs/decisions/026-upload-generations.md).
 */
export interface UploadBlob {
  key: string;
  /** null: the first generation, which every upload starts with. */
  generation: string | null;
}

/** What a completed upload hands to `replace`: its bytes, exactly `size` of them. */
export interface CompletedUpload extends UploadBlob {
  size: number;
}

/** Thrown by `write`/`append` as soon as more than `maxBytes` arrived; nothing is kept. */
export class BlobLimitError extends Error {
  constructor(readonly limit: number) {
    super(`more than ${limit} bytes`);
    this.name = 'BlobLimitError';
  }
}

export interface WriteOptions {
  /** The write fails with BlobLimitError as soon as more bytes than this arrive (the rest is not read). */
  maxBytes: number;
  /** Keep up to this many leading bytes in memory (content sniffing). Default 0. */
  headBytes?: number;
  /** Sees every chunk in order, e.g. a hash whose state outlives one request. */
  observe?: (chunk: Buffer) => void;
}

/** Bytes written to a temporary file (or object), not yet visible under any key. */
export interface TempBlob {
  readonly temp: string;
  readonly size: number;
  /** SHA-256 of the bytes (raw 32 bytes). */
  readonly sha256: Buffer;
  readonly head: Buffer;
}

export interface AppendOptions extends WriteOptions {
  /**
   * When the source fails (a client that went away), keep the bytes that arrived instead of cutting back to
   * `offset`: all of them are written and made durable, and `append` rejects with a PartialAppendError that says
   * how long the blob now is (`observe` has seen exactly those bytes). A size limit passed (BlobLimitError) or a
   * failed `check` still cuts back.
   */
  keepPartial?: boolean;
  /** Runs once the whole source is stored, with the bytes appended; throwing cuts back to `offset`. */
  check?: (size: number) => void;
}

/** `append` with `keepPartial`: the source failed after some bytes, which are kept (and durable). */
export class PartialAppendError extends Error {
  constructor(
    /** Length of the blob now: `offset` plus the bytes kept. */
    readonly total: number,
    override readonly cause: unknown,
  ) {
    super(`append interrupted; the blob now holds ${total} bytes`);
    this.name = 'PartialAppendError';
  }
}

export interface Appended {
  /** Bytes appended by this call. */
  size: number;
  /** Length of the blob afterwards. */
  total: number;
  head: Buffer;
}

/** Inclusive byte positions, as in `Content-Range`. */
export interface ByteRange {
  start: number;
  end: number;
}

/** The outcome of `replace`, to be settled once the database transaction has ended. */
export interface Replacement {
  /** The database committed: forget the previous bytes. */
  finish(): Promise<void>;
  /**
   * The database did not commit: put the previous bytes back (unless a later replacement has already won), and
   * bytes that came from another key back under that key.
   */
  undo(): Promise<void>;
}

/**
 * The tags of a replacement (see `replace`): the database state that refers to the bytes before and after it
 * (the file's SHA-256 in hex, 'unhashed' for a file stored without one, 'none' for no file).
 */
export interface ReplaceTags {
  previous: string;
  next: string;
}

/** What `sweep` needs to know from the database. */
export interface SweepPolicy {
  /** Entries changed more recently than this are left alone: another instance may be in the middle of using them. */
  graceMs: number;
  /** Of these keys, the ones whose bytes are still referenced (an element with a file, an upload). */
  wanted(keys: string[]): Promise<Set<string>>;
  /** Of these keys, the current tag of each element that has a file (read without a lock: a first look). */
  tags(keys: string[]): Promise<Map<string, string>>;
  /**
   * Runs `settle` with the database's current tag for `key` (see `replace`; undefined when it has no bytes) while
   * no replacement of `key` can be between its rename and its commit (the element's row lock). Resolves false,
   * without running `settle`, when that cannot be had now (the aside is then left for the next sweep).
   */
  settleAside(key: string, settle: (currentTag: string | undefined) => Promise<void>): Promise<boolean>;
}

export interface SweepReport {
  temporary: number;
  orphans: number;
  restored: number;
  dropped: number;
}

export interface BlobStore {
  /**
   * Whether the store keeps each version of a file under its tag until the replacement that removes it has
   * committed (the object store): a download may then open the bytes without holding the element's row lock.
   */
  readonly versioned: boolean;
  /** Checks at start-up that the store can be used (its directory, its bucket); throws a clear error otherwise. */
  verify(): Promise<void>;
  /** Streams `source` into a temporary blob, hashing and counting; on any failure nothing is left behind. */
  write(source: AsyncIterable<Uint8Array>, options: WriteOptions): Promise<TempBlob>;
  /** Removes a temporary blob that will not be used. */
  discard(temp: TempBlob): Promise<void>;
  /**
   * Makes `next` (a temporary blob, or the bytes of a completed upload, which are moved) the bytes of `key`, or
   * removes the bytes of `key` when `next` is null. `tags` name the database states that refer to the previous and
   * the next bytes; the sweep uses them to settle a replacement interrupted by a crash, and a store that keeps
   * versions side by side names each version by its tag (so that `open` with a tag never yields other bytes).
   */
  replace(key: string, next: TempBlob | CompletedUpload | null, tags: ReplaceTags): Promise<Replacement>;
  /**
   * Appends `source` to the bytes of an upload's generation (created when missing, only at offset 0), which must
   * currently be at least `offset` bytes long (longer leftovers of an interrupted append are cut off). On failure the
   * bytes are cut back to `offset`, unless `keepPartial` keeps what arrived (see AppendOptions). The bytes are
   * durable before it resolves. Only the one writer that holds the upload's lease appends to a generation.
   */
  append(
    upload: UploadBlob,
    offset: number,
    source: AsyncIterable<Uint8Array>,
    options: AppendOptions,
  ): Promise<Appended>;
  /**
   * Makes generation `to` of the upload hold the first `length` bytes of `from` (durably), leaving `from` as it is:
   * a late writer may still be adding to `from` past `length`, never below it.
   */
  fork(from: UploadBlob, to: string, length: number): Promise<void>;
  /**
   * Opens the bytes of element `key`'s file (optionally one range); null when there are none. `size` is the whole
   * length. `tag` (the database's tag of the file, see `replace`) asks for the bytes placed under that tag.
   */
  open(key: string, range?: ByteRange, tag?: string): Promise<{ stream: Readable; size: number } | null>;
  /** Opens the bytes of an upload's generation (optionally one range); null when there are none. */
  openUpload(upload: UploadBlob, range?: ByteRange): Promise<{ stream: Readable; size: number } | null>;
  /** The length of an upload generation's bytes, or null when there are none. */
  uploadSize(upload: UploadBlob): Promise<number | null>;
  /** Removes the bytes of element `key`'s file (no error when there are none). */
  delete(key: string): Promise<void>;
  /** Removes one generation of an upload (a superseded one), whatever a late writer still adds to it. */
  dropGeneration(upload: UploadBlob): Promise<void>;
  /** Removes every generation of upload `key` (no error when there are none). */
  deleteUpload(key: string): Promise<void>;
  /** Clean-up (at startup and periodically): temporary files, bytes nobody refers to, asides of interrupted replacements. */
  sweep(policy: SweepPolicy): Promise<SweepReport>;
  /** Resolves when the background work started so far (removals of dropped bytes) is done. */
  settled(): Promise<void>;
}
