// The file sink under the blob store (src/blob/durable-sink.ts): exact bytes at the right place, flushes behind
// while bytes arrive, refuses what its flags refuse, and lets go of its descriptor however it ends. Real files.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DurableFileSink } from '../../../src/blob/durable-sink.js';

/** Paths this process holds open (Linux). */
const openPaths = () =>
  readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      return [readlinkSync(`/proc/self/fd/${fd}`)];
    } catch {
      return [];
    }
  });

async function* slowly(parts: Array<Buffer | Error>) {
  for (const part of parts) {
    await new Promise((resolve) => setImmediate(resolve));
    if (part instanceof Error) throw part;
    yield part;
  }
}

describe('DurableFileSink', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-sink-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes every byte in order and flushes behind every flushEvery bytes while they arrive', async () => {
    const parts = Array.from({ length: 40 }, (_, i) => randomBytes(100_000 + i));
    const path = join(dir, 'a.bin');
    const sink = new DurableFileSink(path, { flags: 'wx', mode: 0o600, flushEvery: 1_000_000 });
    await pipeline(slowly(parts), sink);
    expect(readFileSync(path).equals(Buffer.concat(parts))).toBe(true);
    // 4 MB passed a 1 MB interval four times; a flush still running when the next interval passes is not doubled.
    expect(sink.flushes).toBeGreaterThanOrEqual(1);
    expect(sink.flushes).toBeLessThanOrEqual(4);
    expect(sink.closed).toBe(true);
    expect(openPaths()).not.toContain(path);
  });

  it('writes batched chunks (writev) from one synchronous burst', async () => {
    const path = join(dir, 'b.bin');
    const parts = Array.from({ length: 200 }, (_, i) => Buffer.from(`part ${i};`));
    await pipeline(Readable.from(parts), new DurableFileSink(path, { flags: 'wx', flushEvery: 64 }));
    expect(readFileSync(path, 'utf8')).toBe(parts.map(String).join(''));
  });

  it("with 'r+' writes from `start` over what is there and keeps the bytes before it", async () => {
    const path = join(dir, 'c.bin');
    writeFileSync(path, 'hello, world!');
    await pipeline(
      slowly([Buffer.from('W'), Buffer.from('ORLD')]),
      new DurableFileSink(path, { flags: 'r+', start: 7 }),
    );
    expect(readFileSync(path, 'utf8')).toBe('hello, WORLD!');
  });

  it("with 'wx' refuses an existing file and leaves it as it was", async () => {
    const path = join(dir, 'd.bin');
    writeFileSync(path, 'kept');
    await expect(
      pipeline(slowly([Buffer.from('new')]), new DurableFileSink(path, { flags: 'wx' })),
    ).rejects.toMatchObject({ code: 'EEXIST' });
    expect(readFileSync(path, 'utf8')).toBe('kept');
  });

  it('releases its descriptor when the source fails midway (what is on disk is a prefix of what arrived)', async () => {
    const path = join(dir, 'e.bin');
    const sink = new DurableFileSink(path, { flags: 'wx', flushEvery: 10 });
    await expect(pipeline(slowly([Buffer.from('0123456789abc'), new Error('client went away')]), sink)).rejects.toThrow(
      'client went away',
    );
    if (!sink.closed) await new Promise((resolve) => sink.once('close', resolve));
    expect(openPaths()).not.toContain(path);
    // A destroyed stream drops writes it had not started, as fs.WriteStream does; the blob store cuts back then.
    expect('0123456789abc'.startsWith(readFileSync(path, 'utf8'))).toBe(true);
  });
});
