// The filesystem blob store on its own (no database): streaming writes with hash and limit, replacements that
// can be undone, appends that survive failures, ranged reads.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlobLimitError } from '../../../src/blob/blob-store.js';
import { FsBlobStore } from '../../../src/blob/fs-blob-store.js';

const KEY = '7d1f0e2a-1111-4222-8333-944445555666';

async function* chunks(...parts: Array<string | Error>) {
  for (const part of parts) {
    await new Promise((resolve) => setImmediate(resolve));
    if (part instanceof Error) throw part;
    yield Buffer.from(part);
  }
}

/** The disk store names only the previous bytes (their aside). */
const tags = (previous: string) => ({ previous, next: 'next' });
/** The first generation of an upload's bytes. */
const first = (key: string) => ({ key, generation: null });

describe('FsBlobStore', () => {
  let root: string;
  let store: FsBlobStore;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'trellis-blobs-'));
    store = new FsBlobStore(join(root, 'files'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const tmpEntries = () => readdirSync(store.tmpDir);
  const read = (key: string) => readFileSync(store.pathOf(key), 'utf8');
  const entriesOf = (key: string) =>
    readdirSync(join(store.root, key.slice(0, 2)))
      .filter((n) => n.startsWith(key))
      .sort();

  it('writes a stream to a temporary file with its SHA-256, size and head', async () => {
    const seen: string[] = [];
    const temp = await store.write(chunks('hello ', 'world'), {
      maxBytes: 11,
      headBytes: 8,
      observe: (c) => seen.push(c.toString()),
    });
    expect(temp.size).toBe(11);
    expect(temp.sha256.toString('hex')).toBe(createHash('sha256').update('hello world').digest('hex'));
    expect(temp.head.toString()).toBe('hello wo');
    expect(seen).toEqual(['hello ', 'world']);
    expect(tmpEntries()).toHaveLength(1);
    await store.discard(temp);
    expect(tmpEntries()).toEqual([]);
  });

  it('stops at the limit and when the source fails, leaving nothing behind', async () => {
    await expect(store.write(chunks('12345', '67890', 'never read'), { maxBytes: 9 })).rejects.toBeInstanceOf(
      BlobLimitError,
    );
    await expect(store.write(chunks('12345', new Error('client went away')), { maxBytes: 100 })).rejects.toThrow(
      'client went away',
    );
    await expect(store.write(chunks(new Error('at once')), { maxBytes: 100 })).rejects.toThrow('at once');
    expect(tmpEntries()).toEqual([]);
  });

  it('replaces bytes and forgets the previous ones on finish', async () => {
    const first = await store.replace(KEY, await store.write(chunks('v1'), { maxBytes: 10 }), tags('none'));
    await first.finish();
    expect(read(KEY)).toBe('v1');
    const second = await store.replace(KEY, await store.write(chunks('v2'), { maxBytes: 10 }), tags('tagv1'));
    expect(entriesOf(KEY)).toEqual([KEY, expect.stringMatching(new RegExp(`^${KEY}\\.aside-tagv1-[0-9a-f]{12}$`))]);
    await second.finish();
    expect(read(KEY)).toBe('v2');
    expect(entriesOf(KEY)).toEqual([KEY]);
    expect(tmpEntries()).toEqual([]);
    // The old bytes left the key's directory at once; they are unlinked in the background.
    await store.settled();
    expect(readdirSync(store.trashDir)).toEqual([]);
  });

  it('deletes by moving the bytes out at once; the startup sweep empties a trash left by a crash', async () => {
    await (await store.replace(KEY, await store.write(chunks('v1'), { maxBytes: 10 }), tags('none'))).finish();
    await store.delete(KEY);
    await store.delete(KEY); // nothing there any more: no error
    expect(existsSync(store.pathOf(KEY))).toBe(false);
    await store.settled();
    expect(readdirSync(store.trashDir)).toEqual([]);
    // A crash between the rename and the unlink:
    writeFileSync(join(store.trashDir, 'left-by-a-crash'), 'old bytes');
    await new Promise((resolve) => setTimeout(resolve, 5)); // its ctime must lie before the sweep's "now"
    const none = { wanted: async () => new Set<string>(), tags: async () => new Map(), settleAside: async () => false };
    expect((await store.sweep({ graceMs: 0, ...none })).temporary).toBe(1);
    expect(readdirSync(store.trashDir)).toEqual([]);
  });

  it('undoes a replacement: the previous bytes come back, or none when there were none', async () => {
    await (await store.replace(KEY, await store.write(chunks('v1'), { maxBytes: 10 }), tags('none'))).finish();
    await (await store.replace(KEY, await store.write(chunks('v2'), { maxBytes: 10 }), tags('tagv1'))).undo();
    expect(read(KEY)).toBe('v1');
    expect(entriesOf(KEY)).toEqual([KEY]);
    const other = '8d1f0e2a-1111-4222-8333-944445555666';
    await (await store.replace(other, await store.write(chunks('new'), { maxBytes: 10 }), tags('none'))).undo();
    expect(existsSync(store.pathOf(other))).toBe(false);
  });

  it('does not undo over a later replacement that has won meanwhile', async () => {
    await (await store.replace(KEY, await store.write(chunks('v1'), { maxBytes: 10 }), tags('none'))).finish();
    const failed = await store.replace(KEY, await store.write(chunks('v2'), { maxBytes: 10 }), tags('tagv1'));
    const winner = await store.replace(KEY, await store.write(chunks('v3'), { maxBytes: 10 }), tags('tagv1'));
    await winner.finish();
    await failed.undo();
    expect(read(KEY)).toBe('v3');
    expect(entriesOf(KEY)).toEqual([KEY]);
  });

  it('removes bytes (replace with null), and an undone removal puts them back unless new bytes arrived', async () => {
    await (await store.replace(KEY, await store.write(chunks('v1'), { maxBytes: 10 }), tags('none'))).finish();
    await (await store.replace(KEY, null, tags('tagv1'))).undo();
    expect(read(KEY)).toBe('v1');
    const removal = await store.replace(KEY, null, tags('tagv1'));
    expect(existsSync(store.pathOf(KEY))).toBe(false);
    await (await store.replace(KEY, await store.write(chunks('v2'), { maxBytes: 10 }), tags('none'))).finish();
    await removal.undo();
    expect(read(KEY)).toBe('v2');
    expect(entriesOf(KEY)).toEqual([KEY]);
    await (await store.replace(KEY, null, tags('tagv2'))).finish();
    expect(entriesOf(KEY)).toEqual([]);
  });

  it('moves the bytes of another key into place', async () => {
    const upload = '9d1f0e2a-1111-4222-8333-944445555666';
    await store.append(first(upload), 0, chunks('chunk one, '), { maxBytes: 100 });
    await store.append(first(upload), 11, chunks('chunk two'), { maxBytes: 100 });
    await (await store.replace(KEY, { ...first(upload), size: 20 }, tags('none'))).finish();
    expect(read(KEY)).toBe('chunk one, chunk two');
    expect(existsSync(store.pathOf(upload))).toBe(false);
  });

  it('appends, and cuts back to the offset when an append fails or leftovers exist', async () => {
    const key = 'ad1f0e2a-1111-4222-8333-944445555666';
    expect(await store.append(first(key), 0, chunks('abc'), { maxBytes: 10, headBytes: 2 })).toEqual({
      size: 3,
      total: 3,
      head: Buffer.from('ab'),
    });
    await expect(store.append(first(key), 3, chunks('def', new Error('gone')), { maxBytes: 10 })).rejects.toThrow(
      'gone',
    );
    expect(read(key)).toBe('abc');
    await expect(store.append(first(key), 3, chunks('defg', 'hijk'), { maxBytes: 5 })).rejects.toBeInstanceOf(
      BlobLimitError,
    );
    expect(read(key)).toBe('abc');
    await expect(store.append(first(key), 4, chunks('x'), { maxBytes: 5 })).rejects.toThrow(/expected at least 4/);
    expect(await store.append(first(key), 2, chunks('Z'), { maxBytes: 5 })).toMatchObject({ size: 1, total: 3 });
    expect(read(key)).toBe('abZ');
    expect(await store.uploadSize(first(key))).toBe(3);
    expect(await store.uploadSize(first(KEY))).toBeNull();
  });

  it('forks a generation of an upload that a late writer of the old one cannot touch', async () => {
    const key = 'cd1f0e2a-1111-4222-8333-944445555666';
    const next = { key, generation: 'ed1f0e2a-1111-4222-8333-944445555666' };
    await store.append(first(key), 0, chunks('committed '), { maxBytes: 100 });
    await store.append(first(key), 10, chunks('late'), { maxBytes: 100 }); // never committed
    await store.fork(first(key), next.generation, 10);
    expect(await store.uploadSize(next)).toBe(10);
    await store.append(next, 10, chunks('mine'), { maxBytes: 100 });
    // The late writer goes on in its own generation, at the very same offset: the new one keeps its bytes.
    await store.append(first(key), 10, chunks('LATE!'), { maxBytes: 100 });
    expect(await text((await store.openUpload(next))!.stream)).toBe('committed mine');
    await store.dropGeneration(first(key));
    expect(await store.uploadSize(first(key))).toBeNull();
    await expect(store.replace(KEY, { ...next, size: 15 }, tags('none'))).rejects.toThrow(/holds 14 bytes/);
    await (await store.replace(KEY, { ...next, size: 14 }, tags('none'))).finish();
    await store.settled();
    expect(read(KEY)).toBe('committed mine');
    expect(existsSync(`${store.pathOf(key)}.g`)).toBe(false);
  });

  it('opens whole blobs and ranges, and null for missing ones', async () => {
    await (await store.replace(KEY, await store.write(chunks('0123456789'), { maxBytes: 10 }), tags('none'))).finish();
    const whole = await store.open(KEY);
    expect(whole!.size).toBe(10);
    expect(await text(whole!.stream)).toBe('0123456789');
    const part = await store.open(KEY, { start: 3, end: 5 });
    expect(part!.size).toBe(10);
    expect(await text(part!.stream)).toBe('345');
    expect(await store.open('bd1f0e2a-1111-4222-8333-944445555666')).toBeNull();
    expect(() => store.pathOf('../etc/passwd')).toThrow(/invalid blob key/);
  });
});
