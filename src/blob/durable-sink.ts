// A file sink that is durable when it finishes (fsync before it reports success, as `createWriteStream` with
// `flush: true`), and that writes behind as it goes: every `flushEvery` bytes it starts an fdatasync of what it has
// written so far, without waiting for it (at most one in flight).
//
// Why: Linux starts writing dirty pages back only past dirty_background_ratio, so a large upload stays in the page
// cache and one fsync at the end would flush all of it while the client waits. Flushing as the bytes arrive lets the
// disk write while the network delivers (docs/decisions/015-write-behind.md).
import { type FileHandle, open } from 'node:fs/promises';
import { Writable } from 'node:stream';

export interface DurableSinkOptions {
  /** 'wx': create a new file (fails when it exists); 'r+': write into an existing one from `start`. */
  flags: 'wx' | 'r+';
  mode?: number;
  /** Where the first byte goes (default 0). */
  start?: number;
  /** Start a background fdatasync every this many bytes (default FLUSH_EVERY). */
  flushEvery?: number;
}

/** Small enough that the disk starts early, large enough that a flush is a long sequential write. */
export const FLUSH_EVERY = 16 * 1024 * 1024;

export class DurableFileSink extends Writable {
  private handle: FileHandle | null = null;
  private position: number;
  private unflushed = 0;
  private flushing: Promise<void> | null = null;
  private flushError: unknown = null;
  private readonly flushEvery: number;
  /** Background flushes started so far (what a test can observe of the writing behind). */
  flushes = 0;

  constructor(
    private readonly path: string,
    private readonly options: DurableSinkOptions,
  ) {
    super();
    this.position = options.start ?? 0;
    this.flushEvery = options.flushEvery ?? FLUSH_EVERY;
  }

  override _construct(callback: (error?: Error | null) => void): void {
    open(this.path, this.options.flags, this.options.mode).then((handle) => {
      this.handle = handle;
      callback();
    }, callback);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    this.writeAll(chunks.map((c) => c.chunk)).then(() => callback(), callback);
  }

  private async writeAll(buffers: Buffer[]): Promise<void> {
    // A failed background flush means bytes already accepted may not reach the disk: stop here.
    if (this.flushError) throw this.flushError;
    const handle = this.handle!;
    let pending = buffers;
    while (pending.length > 0) {
      const { bytesWritten } = await handle.writev(pending, this.position);
      this.position += bytesWritten;
      this.unflushed += bytesWritten;
      pending = rest(pending, bytesWritten);
    }
    if (this.unflushed >= this.flushEvery && this.flushing === null) {
      this.unflushed = 0;
      this.flushes++;
      this.flushing = handle
        .datasync()
        .catch((error: unknown) => {
          this.flushError ??= error;
        })
        .finally(() => {
          this.flushing = null;
        });
    }
  }

  override _final(callback: (error?: Error | null) => void): void {
    (async () => {
      await this.flushing;
      if (this.flushError) throw this.flushError;
      await this.handle!.sync();
    })().then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // FileHandle.close waits for the handle's pending operations (a write, a background flush) before it closes, so
    // 'close' is emitted only once nothing touches the file any more (the blob store truncates after it).
    const handle = this.handle;
    this.handle = null;
    (handle ? handle.close() : Promise.resolve()).then(
      () => callback(error),
      (closeError: unknown) => callback(error ?? (closeError as Error)),
    );
  }
}

/** The buffers left after the first `written` bytes of `buffers` (a short write of a regular file is rare). */
function rest(buffers: Buffer[], written: number): Buffer[] {
  let skip = written;
  let i = 0;
  while (i < buffers.length && skip >= buffers[i]!.length) skip -= buffers[i++]!.length;
  if (i === buffers.length) return [];
  return [buffers[i]!.subarray(skip), ...buffers.slice(i + 1)];
}

/** fsync of a file or directory by path (a directory: makes the renames and creations inside it durable). */
export async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
