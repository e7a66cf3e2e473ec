// The filesystem blob store: one file per key (an element id, or an upload id for resumable uploads) under
// DATA_DIR/files/<first 2 chars>/<key>. New bytes are streamed to DATA_DIR/files/tmp, fsynced and only then
// renamed into place, so a reader or a crash sees the old bytes or the new ones, never a torn file. A replaced
// key's previous bytes wait next to it (`<key>.aside-<tag>-<random>`) until the caller's transaction has ended;
// the sweep settles those a crash left by asking the database which tag won.
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, type Stats } from 'node:fs';
import { type FileHandle, link, mkdir, open, readdir, rename, rm, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type Appended,
  type AppendOptions,
  BLOB_KEY,
  type BlobStore,
  type ByteRange,
  checkKey,
  PartialAppendError,
  type Replacement,
  type ReplaceTags,
  type SweepPolicy,
  type SweepReport,
  type TempBlob,
  type WriteOptions,
} from './blob-store.js';
import { DurableFileSink, syncPath } from './durable-sink.js';
import { guarded, meter, type SourceFailure } from './meter.js';

const ASIDE = /^([A-Za-z0-9_-]{2,128})\.aside-([A-Za-z0-9]{1,128})-[0-9a-f]{12}$/;
const FILE_MODE = 0o600;
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
    const unlink = rm(trashed, { force: true }).catch(() => {});
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

  async replace(key: string, next: TempBlob | { key: string } | null, tags: ReplaceTags): Promise<Replacement> {
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
    // Bytes moved from another key (a finished upload) go back there on undo: that key still owns them then.
    const source = next !== null && !('temp' in next) ? this.pathOf(next.key) : null;
    if (next !== null) {
      try {
        await rename('temp' in next ? next.temp : this.pathOf(next.key), path);
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
    key: string,
    offset: number,
    source: AsyncIterable<Uint8Array>,
    options: AppendOptions,
  ): Promise<Appended> {
    const path = this.pathOf(key);
    const dir = join(this.root, key.slice(0, 2));
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

  // The tag is not needed: under the element's row lock the file under the key is the one the database refers to.
  async open(key: string, range?: ByteRange, _tag?: string): Promise<{ stream: Readable; size: number } | null> {
    let handle: FileHandle;
    try {
      handle = await open(this.pathOf(key), 'r');
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
    try {
      const { size } = await handle.stat();
      // The stream owns the descriptor from here on and closes it when it ends or is destroyed.
      const stream = handle.createReadStream(range ? { start: range.start, end: range.end } : {});
      return { stream, size };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async size(key: string): Promise<number | null> {
    return (await statOrNull(this.pathOf(key)))?.size ?? null;
  }

  async delete(key: string): Promise<void> {
    await this.drop(this.pathOf(key));
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
      const keys = (await readdir(dir)).filter((name) => BLOB_KEY.test(name));
      for (let i = 0; i < keys.length; i += SWEEP_BATCH) {
        const batch: string[] = [];
        for (const key of keys.slice(i, i + SWEEP_BATCH))
          if (settled(await statOrNull(join(dir, key)))) batch.push(key);
        if (batch.length === 0) continue;
        const wanted = await policy.wanted(batch);
        for (const key of batch) {
          if (wanted.has(key)) continue;
          await rm(join(dir, key), { force: true });
          report.orphans++;
        }
      }
    }
    return report;
  }
}

/** Resolves once a stream has closed (and so released its file descriptor), whatever its outcome. */
async function closed(stream: Writable): Promise<void> {
  if (stream.closed) return;
  await new Promise<void>((resolve) => stream.once('close', () => resolve()));
}
