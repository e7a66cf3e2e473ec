// The pieces of resumable uploads on their own (no database, no HTTP): appends that keep what arrived, a
// finished upload's bytes moved into place and back, the in-flight registry, and the header fields.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlobLimitError, PartialAppendError } from '../../src/blob/blob-store.js';
import { FsBlobStore } from '../../src/blob/fs-blob-store.js';
import { UploadsInFlight } from '../../src/domain/uploads/upload-inflight.js';
import { Problem } from '../../src/errors.js';
import {
  checkAppendContentType,
  interopVersion,
  parseUploadOffset,
  uploadCompleteValue,
  uploadLimitField,
} from '../../src/http/upload-headers.js';

const UPLOAD = '9d1f0e2a-1111-4222-8333-944445555666';
const ELEMENT = '7d1f0e2a-1111-4222-8333-944445555666';
/** The upload's bytes in their first generation. */
const BYTES = { key: UPLOAD, generation: null };

async function* chunks(...parts: Array<string | Error>) {
  for (const part of parts) {
    await new Promise((resolve) => setImmediate(resolve));
    if (part instanceof Error) throw part;
    yield Buffer.from(part);
  }
}

describe('FsBlobStore appends of uploads', () => {
  let root: string;
  let store: FsBlobStore;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'trellis-uploads-'));
    store = new FsBlobStore(join(root, 'files'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));
  const read = (key: string) => readFileSync(store.pathOf(key), 'utf8');

  it('keepPartial keeps the bytes that arrived before the source failed, and says how many', async () => {
    await store.append(BYTES, 0, chunks('abc'), { maxBytes: 100 });
    const failure = await store
      .append(BYTES, 3, chunks('def', 'ghi', new Error('client went away')), { maxBytes: 100, keepPartial: true })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PartialAppendError);
    expect((failure as PartialAppendError).total).toBe(9);
    expect(((failure as PartialAppendError).cause as Error).message).toBe('client went away');
    expect(read(UPLOAD)).toBe('abcdefghi');
  });

  it('keepPartial with nothing arrived rethrows the source error; limits and failed checks still cut back', async () => {
    await store.append(BYTES, 0, chunks('abc'), { maxBytes: 100 });
    await expect(
      store.append(BYTES, 3, chunks(new Error('at once')), { maxBytes: 100, keepPartial: true }),
    ).rejects.toThrow('at once');
    await expect(
      store.append(BYTES, 3, chunks('defg', 'hijk'), { maxBytes: 5, keepPartial: true }),
    ).rejects.toBeInstanceOf(BlobLimitError);
    expect(read(UPLOAD)).toBe('abc');
    const tooSmall = new Error('below the minimum');
    const check = (size: number) => {
      if (size < 5) throw tooSmall;
    };
    await expect(store.append(BYTES, 3, chunks('de'), { maxBytes: 100, keepPartial: true, check })).rejects.toBe(
      tooSmall,
    );
    expect(read(UPLOAD)).toBe('abc');
    expect(await store.append(BYTES, 3, chunks('defgh'), { maxBytes: 100, check })).toMatchObject({
      size: 5,
      total: 8,
    });
  });

  it('refuses to append at an offset to bytes that are missing (no hole of zeros)', async () => {
    await expect(store.append(BYTES, 5, chunks('x'), { maxBytes: 10 })).rejects.toThrow(/missing, expected 5/);
    expect(existsSync(store.pathOf(UPLOAD))).toBe(false);
  });

  it('moves a finished upload into place, and an undone move gives the bytes back to the upload', async () => {
    await (
      await store.replace(ELEMENT, await store.write(chunks('old file'), { maxBytes: 100 }), {
        previous: 'none',
        next: 'next',
      })
    ).finish();
    await store.append(BYTES, 0, chunks('new file'), { maxBytes: 100 });
    const failed = await store.replace(ELEMENT, { ...BYTES, size: 8 }, { previous: 'tagold', next: 'next' });
    expect(read(ELEMENT)).toBe('new file');
    await failed.undo();
    expect(read(ELEMENT)).toBe('old file');
    expect(read(UPLOAD)).toBe('new file');
    // Onto an element without a file, undone: the element has none again, the upload keeps its bytes.
    const other = 'ad1f0e2a-1111-4222-8333-944445555666';
    await (await store.replace(other, { ...BYTES, size: 8 }, { previous: 'none', next: 'next' })).undo();
    expect(existsSync(store.pathOf(other))).toBe(false);
    expect(read(UPLOAD)).toBe('new file');
  });
});

describe('UploadsInFlight', () => {
  it('a newcomer ends the running request and waits until it has settled', async () => {
    const inFlight = new UploadsInFlight();
    const events: string[] = [];
    const first = await inFlight.enter('u', () => {
      events.push('first aborted');
      setTimeout(() => {
        events.push('first settled');
        first.leave();
      }, 20);
    });
    expect(first.preempted).toBe(false);
    const second = await inFlight.enter('u', () => events.push('second aborted'));
    events.push('second entered');
    expect(second.preempted).toBe(true);
    expect(events).toEqual(['first aborted', 'first settled', 'second entered']);
    expect(await inFlight.preempt('other')).toBe(false);
    second.leave();
    expect(inFlight.has('u')).toBe(false);
  });

  it('of two newcomers at once only one gets in at a time', async () => {
    const inFlight = new UploadsInFlight();
    const running = new Set<string>();
    let overlap = false;
    const enter = async (name: string) => {
      const entry = await inFlight.enter('u', () =>
        setTimeout(() => {
          running.delete(name);
          entry.leave();
        }, 5),
      );
      if (running.size > 0) overlap = true;
      running.add(name);
      return entry;
    };
    const first = await enter('a');
    await Promise.all([enter('b'), enter('c')]);
    expect(overlap).toBe(false);
    expect(running.size).toBe(1);
    void first;
  });
});

describe('upload header fields', () => {
  it('parses offsets and interop versions, translates Upload-Incomplete, serialises Upload-Limit', () => {
    expect(parseUploadOffset('0')).toBe(0);
    expect(parseUploadOffset('123456789012')).toBe(123456789012);
    for (const bad of [undefined, '-1', '1.0', 'abc', '?1']) expect(() => parseUploadOffset(bad)).toThrow(Problem);
    expect([3, 4, 5, 6].map((v) => interopVersion(String(v)))).toEqual([3, 4, 5, 6]);
    expect([undefined, '2', '7', 'x'].map((v) => interopVersion(v))).toEqual([null, null, null, null]);
    expect(uploadCompleteValue({ uploadIncomplete: '?1' }, 3, false)).toBe('?0');
    expect(uploadCompleteValue({ uploadIncomplete: '?0' }, 3, false)).toBe('?1');
    expect(uploadCompleteValue({}, 3, true)).toBe('?1');
    expect(uploadCompleteValue({}, 3, false)).toBeUndefined();
    expect(uploadCompleteValue({ uploadIncomplete: '?1' }, 6, false)).toBeUndefined();
    expect(uploadCompleteValue({ uploadComplete: '?0', uploadIncomplete: '?0' }, 3, false)).toBe('?0');
    expect(() => uploadCompleteValue({ uploadIncomplete: 'yes' }, 3, false)).toThrow(Problem);
    expect(
      uploadLimitField({ maxAge: 10800, maxSize: 10737418240, minAppendSize: 5242880, maxAppendSize: 105906176 }),
    ).toBe('max-age=10800, max-size=10737418240, min-append-size=5242880, max-append-size=105906176');
    expect(() => checkAppendContentType('application/partial-upload', null)).not.toThrow();
    expect(() => checkAppendContentType(undefined, 5)).not.toThrow();
    expect(() => checkAppendContentType(undefined, 6)).toThrow(Problem);
    expect(() => checkAppendContentType('application/octet-stream', 5)).toThrow(Problem);
  });
});
