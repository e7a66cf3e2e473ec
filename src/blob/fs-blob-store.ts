// The filesystem blob store: one file per key (an element id, or an upload id for resumable uploads) under
// DATA_DIR/files/<first 2 chars>/<key>. New bytes are streamed to DATA_DIR/files/tmp, fsynced and only then
// renamed into place, so a reader or a crash sees the old bytes or the new ones, never a torn file. A replaced
// key's previous bytes wait next to it (`<key>.aside-<tag>-<random>`) until the caller's transaction has ended;
// the sweep settles those a crash left by asking the database which tag won. A resumable upload appends to
// DATA_DIR/files/<first 2 chars>/<upload id>; a generation forked when a writer takes an upload over lives in
// <upload id>.g/<generation>, where no late writer of an earlier generation ever writes.
import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants, mkdirSync, type Stats } from 'node:fs';
import { copyFile, type FileHandle, link, mkdir, open, readdir, rename, rm, stat, truncate } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type Appended,
  type AppendOptions,
  BLOB_KEY,
  type BlobStore,
  type ByteRange,
  type CompletedUpload,
  checkKey,
  PartialAppendError,
  type Replacement,
  type ReplaceTags,
  type SweepPolicy,
  type SweepReport,
  type TempBlob,
  type UploadBlob,
  type WriteOptions,
} from './blob-store.js';
import { DurableFileSink, syncPath } from './durable-sink.js';
import { guarded, meter, type SourceFailure } from './meter.js';

const ASIDE = /^([A-Za-z0-9_-]{2,128})\.aside-([A-Za-z0-9]{1,128})-[0-9a-f]{12}$/;
/** The folder of an upload's forked generations. */
const GENERATIONS = /^([A-Za-z0-9_-]{2,128})\.g$/;
const FILE_MODE = 0o600;
/** Node's default: what a download holds per read while its client takes the bytes. */
const DOWNLOAD_READ_BYTES = 64 * 1024;
/** A completion reads its upload back whole, at once: fewer, larger reads (completions hold an upload slot each). */
const READ_BACK_BYTES = 1024 * 1024;
const SWEEP_BATCH = 500;

function checkTag(tag: string): string {
  if (!/^[A-Za-z0-9]{1,128}$/.test(tag)) throw new Error(`invalid blob tag ${JSON.stringify(tag)}`);
  return tag;
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException)?.code === 'ENOENT';

async function statOrNull(path: string): Promise<Stats | null> {
  try {
    return await stat(path);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

export class FsBlobStore implements BlobStore {
  readonly root: string;
  readonly tmpDir: string;
  /** Bytes nobody refers to any more, unlinked in the background (see `drop`); the sweep empties it at startup. */
  readonly trashDir: string;
  private readonly unlinking = new Set<Promise<void>>();

  constructor(root: string) {
    this.root = root;
    this.tmpDir = join(root, 'tmp');
    this.trashDir = join(root, 'trash');
    mkdirSync(this.tmpDir, { recursive: true });
    mkdirSync(this.trashDir, { recursive: true });
  }

  /**
   * Takes `path` out of the store at once (a rename) and unlinks it in the background: freeing the blocks of a
   * large file takes a noticeable time, and nobody needs to wait for it. A crash before the
   * unlink leaves the file in the trash, which the startup sweep empties. Missing paths are fine.
   */
  private async drop(path: string): Promise<void> {
    const trashed = join(this.trashDir, randomBytes(12).toString('hex'));
    try {
      await rename(path, trashed);
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    const unlink = rm(trashed, { force: true, recursive: true }).catch(() => {});
    this.unlinking.add(unlink);
    void unlink.finally(() => this.unlinking.delete(unlink));
  }

  /** Resolves when the background unlinks started so far are done. */
  async settled(): Promise<void> {
    await Promise.all([...this.unlinking]);
  }

  readonly versioned = false;

  async verify(): Promise<void> {
    // The constructor made the directories; a store that cannot be written fails on the first write anyway.
  }

  /** The file that holds the bytes of `key`. */
  pathOf(key: string): string {
    checkKey(key);
    return join(this.root, key.slice(0, 2), key);
  }

  /** The file that holds the bytes of an upload's generation. */
  private uploadPath(upload: UploadBlob): string {
    if (upload.generation === null) return this.pathOf(upload.key);
    return join(this.generationsOf(upload.key), checkKey(upload.generation));
  }

  private generationsOf(key: string): string {
    return `${this.pathOf(key)}.g`;
  }

  async write(source: AsyncIterable<Uint8Array>, options: WriteOptions): Promise<TempBlob> {
    const temp = join(this.tmpDir, randomBytes(16).toString('hex'));
    const hash = createHash('sha256');
    const m = meter({
      ...options,
      observe: (chunk) => {
        hash.update(chunk);
        options.observe?.(chunk);
      },
    });
    // Durable before it resolves (flushed behind as it arrives, fsync at the end), so a rename later never exposes
    // bytes that are not on disk yet.
    const sink = new DurableFileSink(temp, { flags: 'wx', mode: FILE_MODE });
    try {
      await pipeline(source, m.pass, sink);
    } catch (error) {
      // The file may still be being opened; remove it only once the stream has let go of it.
      await closed(sink);
      await rm(temp, { force: true });
      throw error;
    }
    return { temp, size: m.state.size, sha256: hash.digest(), head: m.head() };
  }

  async discard(temp: TempBlob): Promise<void> {
    await rm(temp.temp, { force: true });
  }

  async replace(key: string, next: TempBlob | CompletedUpload | null, tags: ReplaceTags): Promise<Replacement> {
    const path = this.pathOf(key);
    // One file per key: only the previous bytes need a name (their aside), the next ones take the key's.
    const tag = checkTag(tags.previous);
    const dir = join(this.root, key.slice(0, 2));
    await mkdir(dir, { recursive: true });
    const aside = `${path}.aside-${tag}-${randomBytes(6).toString('hex')}`;
    let hadPrevious = true;
    try {
      await rename(path, aside);
    } catch (error) {
      if (!isMissing(error)) throw error;
      hadPrevious = false;
    }
    let placed: number | null = null; // inode of what this replacement put under the key
    // Bytes moved from an upload go back there on undo: the upload still owns them then.
    const source = next !== null && !('temp' in next) ? this.uploadPath(next) : null;
    if (next !== null) {
      try {
        if (source !== null) await checkSize(source, (next as CompletedUpload).size);
        await rename(source ?? (next as TempBlob).temp, path);
        placed = (await stat(path)).ino;
        await syncPath(dir);
      } catch (error) {
        if (hadPrevious) await rename(aside, path);
        throw error;
      }
    } else {
      await syncPath(dir);
    }
    return {
      finish: async () => {
        if (hadPrevious) await this.drop(aside);
        // Generations the upload left behind (superseded ones, or the first one when a fork was moved).
        if (next !== null && !('temp' in next)) await this.deleteUpload(next.key);
      },
      undo: async () => {
        const current = await statOrNull(path);
        if (placed !== null) {
          // Only take back what is still ours: a replacement that ran after ours failed to commit has won.
          if (current?.ino !== placed) {
            if (hadPrevious) await rm(aside, { force: true });
            return;
          }
          if (source !== null) await rename(path, source);
          if (hadPrevious) await rename(aside, path);
          else if (source === null) await rm(path, { force: true });
        } else if (hadPrevious) {
          // link fails when a newer replacement has put bytes under the key meanwhile; those win.
          try {
            await link(aside, path);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
          }
          await rm(aside, { force: true });
        }
        await syncPath(dir);
      },
    };
  }

  async append(
    upload: UploadBlob,
    offset: number,
    source: AsyncIterable<Uint8Array>,
    options: AppendOptions,
  ): Promise<Appended> {
    const key = upload.key;
    const path = this.uploadPath(upload);
    const dir = dirname(path);
    await mkdir(dir, { recursive: true });
    const existing = (await statOrNull(path))?.size ?? null;
    if (existing === null) {
      // Appending at a later offset to nothing would leave a hole of zeros where bytes were expected.
      if (offset > 0) throw new Error(`blob ${key} is missing, expected ${offset} bytes`);
      await (await open(path, 'a', FILE_MODE)).close();
      await syncPath(dir); // the name must survive a crash as surely as the bytes written to it
    } else if (existing < offset) throw new Error(`blob ${key} holds ${existing} bytes, expected at least ${offset}`);
    else if (existing > offset) await truncate(path, offset);
    const m = meter(options);
    // With keepPartial, a failing source ends the stream as if it were complete: everything that arrived is
    // written and fsynced (a destroyed sink would drop what it still had buffered). Limits are checked after this
    // guard, so passing one still fails the pipeline.
    const failure: SourceFailure = {};
    const sink = new DurableFileSink(path, { flags: 'r+', start: offset });
    try {
      await pipeline(options.keepPartial ? guarded(source, failure) : source, m.pass, sink);
    } catch (error) {
      // Wait until the stream has let go of the descriptor, so that no late write lands after the cut.
      await closed(sink);
      await truncate(path, offset);
      throw error;
    }
    if ('error' in failure) {
      if (m.state.size > 0) throw new PartialAppendError(offset + m.state.size, failure.error);
      throw failure.error;
    }
    try {
      options.check?.(m.state.size);
    } catch (error) {
      await truncate(path, offset);
      throw error;
    }
    return { size: m.state.size, total: offset + m.state.size, head: m.head() };
  }

  async fork(from: UploadBlob, to: string, length: number): Promise<void> {
    const target = this.uploadPath({ key: from.key, generation: to });
    const dir = dirname(target);
    await mkdir(dir, { recursive: true });
    await syncPath(dirname(dir));
    if (length === 0) return; // the first append creates the file
    // A copy (a clone where the filesystem can make one), cut to the committed length: what a late writer adds past
    // it is not wanted, and it never writes below it. Made durable under a temporary name, then renamed into place.
    const temp = join(this.tmpDir, randomBytes(16).toString('hex'));
    try {
      await copyFile(this.uploadPath(from), temp, fsConstants.COPYFILE_FICLONE);
      const copied = (await stat(temp)).size;
      if (copied < length) throw new Error(`blob ${from.key} holds ${copied} bytes, expected at least ${length}`);
      await truncate(temp, length);
      const handle = await open(temp, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, target);
      await syncPath(dir);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  // The tag is not needed: under the element's row lock the file under the key is the one the database refers to.
  async open(key: string, range?: ByteRange, _tag?: string): Promise<{ stream: Readable; size: number } | null> {
    return this.openPath(this.pathOf(key), range, DOWNLOAD_READ_BYTES);
  }

  async openUpload(upload: UploadBlob, range?: ByteRange): Promise<{ stream: Readable; size: number } | null> {
    return this.openPath(this.uploadPath(upload), range, READ_BACK_BYTES);
  }

  private async openPath(
    path: string,
    range: ByteRange | undefined,
    highWaterMark: number,
  ): Promise<{ stream: Readable; size: number } | null> {
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    try {
      const { size } = await handle.stat();
      // The stream owns the descriptor from here on and closes it when it ends or is destroyed.
      const stream = handle.createReadStream({
        highWaterMark,
        ...(range ? { start: range.start, end: range.end } : {}),
      });
      return { stream, size };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async uploadSize(upload: UploadBlob): Promise<number | null> {
    return (await statOrNull(this.uploadPath(upload)))?.size ?? null;
  }

  async delete(key: string): Promise<void> {
    await this.drop(this.pathOf(key));
  }

  async dropGeneration(upload: UploadBlob): Promise<void> {
    await this.drop(this.uploadPath(upload));
  }

  async deleteUpload(key: string): Promise<void> {
    await this.drop(this.pathOf(key));
    await this.drop(this.generationsOf(key));
  }

  async sweep(policy: SweepPolicy): Promise<SweepReport> {
    const report: SweepReport = { temporary: 0, orphans: 0, restored: 0, dropped: 0 };
    const now = Date.now();
    // Without a grace everything counts: comparing would race, because ctimeMs has a fraction and Date.now() not.
    const settled = (s: Stats | null) => s !== null && (policy.graceMs <= 0 || now - s.ctimeMs >= policy.graceMs);

    for (const name of await readdir(this.tmpDir)) {
      const path = join(this.tmpDir, name);
      if (!settled(await statOrNull(path))) continue;
      await rm(path, { force: true, recursive: true });
      report.temporary++;
    }
    // Whatever is in the trash is unreferenced by construction; the grace leaves another instance's unlinks alone.
    for (const name of await readdir(this.trashDir)) {
      const path = join(this.trashDir, name);
      if (!settled(await statOrNull(path))) continue;
      await rm(path, { force: true, recursive: true });
      report.temporary++;
    }

    for (const dirent of await readdir(this.root, { withFileTypes: true })) {
      if (!dirent.isDirectory() || dirent.name === 'tmp' || dirent.name.length !== 2) continue;
      const dir = join(this.root, dirent.name);
      const names = await readdir(dir);
      // Asides first: restoring one brings back bytes that the orphan check below must then see. No grace here:
      // an aside whose element is not locked by a replacement is a crash's leftover at any age (a live
      // replacement renames under the row lock, settleAside waits for it), and until it is settled the element's
      // bytes may be the uncommitted ones. One that vanishes meanwhile was settled by its own replacement.
      for (const name of names) {
        const match = ASIDE.exec(name);
        if (!match) continue;
        const [, key, tag] = match as unknown as [string, string, string];
        const from = join(dir, name);
        await policy.settleAside(key, async (current) => {
          try {
            if (current === tag) {
              await rename(from, join(dir, key));
              report.restored++;
            } else {
              await rm(from);
              report.dropped++;
            }
          } catch (error) {
            if (!isMissing(error)) throw error;
          }
        });
      }
      const entries = await readdir(dir);
      const present = new Set(entries.filter((name) => BLOB_KEY.test(name)));
      // Generation folders are checked with the key they belong to: they go when its upload has ended.
      const forked = new Map<string, string>();
      for (const name of entries) {
        const match = GENERATIONS.exec(name);
        if (match) forked.set(match[1]!, name);
      }
      const keys = [...new Set([...present, ...forked.keys()])];
      for (let i = 0; i < keys.length; i += SWEEP_BATCH) {
        const batch: string[] = [];
        for (const key of keys.slice(i, i + SWEEP_BATCH)) {
          const path = join(dir, present.has(key) ? key : forked.get(key)!);
          if (settled(await statOrNull(path))) batch.push(key);
        }
        if (batch.length === 0) continue;
        const wanted = await policy.wanted(batch);
        for (const key of batch) {
          if (wanted.has(key)) continue;
          await rm(join(dir, key), { force: true });
          if (forked.has(key)) await rm(join(dir, forked.get(key)!), { force: true, recursive: true });
          report.orphans++;
        }
      }
    }
    return report;
  }
}

/** Refuses to place an upload whose stored length is not the committed one. */
async function checkSize(path: string, size: number): Promise<void> {
  const stored = (await statOrNull(path))?.size ?? null;
  if (stored !== size) throw new Error(`upload ${path} holds ${stored ?? 'no'} bytes, its offset says ${size}`);
}

/** Resolves once a stream has closed (and so released its file descriptor), whatever its outcome. */
async function closed(stream: Writable): Promise<void> {
  if (stream.closed) return;
  await new Promise<void>((resolve) => stream.once('close', () => resolve()));
}
