// The S3 store's streamed put (src/blob/s3-put.ts) against the real object store of the test run: streams of every
// length around the part size arrive whole, split into source chunks that straddle part boundaries; an upload of
// many parts runs in the same few buffers; a source that fails and a store that refuses leave nothing behind.
// Skipped without TRELLIS_TEST_S3 (npm test sets it when the s3 blob store is under test).
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PART_BYTES, partBytes } from '../../../src/blob/s3-blob-store.js';
import { ObjectStoreError } from '../../../src/blob/s3-errors.js';
import { MAX_PARTS, PartBuffers, putStream } from '../../../src/blob/s3-put.js';
import { noise } from '../../files/fixtures.js';
import {
  emptyPrefix,
  ensureTestBucket,
  newS3Prefix,
  objectsUnder,
  testBucket,
  unfinishedUploads,
} from '../../helpers/bucket.js';

const MiB = 1024 * 1024;
/** S3's smallest part (but the last): the smallest the pool may use. */
const PART = 5 * MiB;

/** `bytes` as a stream of pieces of `piece` bytes (the last one shorter). */
async function* pieces(bytes: Buffer, piece: number) {
  for (let at = 0; at < bytes.length; at += piece) yield bytes.subarray(at, at + piece);
}

/** A pool that counts the buffers out of it. */
class CountedBuffers extends PartBuffers {
  out = 0;
  override take(): Buffer {
    this.out++;
    return super.take();
  }
  override give(buffer: Buffer): void {
    this.out--;
    super.give(buffer);
  }
}

async function stored(key: string): Promise<Buffer> {
  const { client, bucket } = testBucket();
  const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

describe.skipIf(!process.env.TRELLIS_TEST_S3)('S3 streamed put against a real object store', () => {
  const prefix = `${newS3Prefix()}/`;
  beforeAll(ensureTestBucket);
  afterAll(() => emptyPrefix(prefix));

  it.each([
    ['empty', 0],
    ['one byte', 1],
    ['one byte short of a part', PART - 1],
    ['exactly one part', PART],
    ['one byte past a part', PART + 1],
    ['three parts and a bit', 3 * PART + 12_345],
  ])('stores a stream %s long byte for byte, with no multipart upload left', async (_name, size) => {
    const { client, bucket } = testBucket();
    const bytes = noise(size, size + 7);
    const key = `${prefix}put-${size}`;
    const buffers = new CountedBuffers(PART, 4);
    // Source pieces of an odd size, so that parts end in the middle of a piece.
    await putStream({ client, bucket, key }, pieces(bytes, 300_007), buffers, 2);
    expect((await stored(key)).equals(bytes)).toBe(true);
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    expect(head.ContentLength).toBe(size);
    expect(await unfinishedUploads(key)).toEqual([]);
    expect(buffers.out).toBe(0);
  });

  it('sends a stream of many parts through the same few buffers', async () => {
    const { client, bucket } = testBucket();
    const bytes = noise(12 * PART + 99, 3);
    const key = `${prefix}many`;
    const buffers = new CountedBuffers(PART, 4);
    await putStream({ client, bucket, key }, pieces(bytes, 64 * 1024), buffers, 2);
    expect((await stored(key)).equals(bytes)).toBe(true);
    // Two parts in flight and one filling: three buffers, used again part after part.
    expect(buffers.allocated).toBeLessThanOrEqual(3);
    expect(buffers.out).toBe(0);
    // The next upload takes the idle ones.
    await putStream({ client, bucket, key: `${prefix}many-again` }, pieces(bytes, 64 * 1024), buffers, 2);
    expect(buffers.allocated).toBeLessThanOrEqual(3);
  });

  it('rejects with the source error when the source fails after parts were sent, and leaves nothing', async () => {
    const { client, bucket } = testBucket();
    const key = `${prefix}failing`;
    const failure = new Error('the client went away');
    async function* failing() {
      yield noise(2 * PART + 10, 5);
      throw failure;
    }
    const buffers = new CountedBuffers(PART, 4);
    await expect(putStream({ client, bucket, key }, failing(), buffers, 2)).rejects.toBe(failure);
    expect(await objectsUnder(key)).toEqual([]);
    expect(await unfinishedUploads(key)).toEqual([]);
    expect(buffers.out).toBe(0);
  });

  it('rejects with an ObjectStoreError when the store refuses the upload, and leaves nothing', async () => {
    const { client } = testBucket();
    const key = `${prefix}refused`;
    const buffers = new CountedBuffers(PART, 4);
    const put = putStream({ client, bucket: 'no-such-bucket-here', key }, pieces(noise(2 * PART, 9), MiB), buffers, 2);
    await expect(put).rejects.toBeInstanceOf(ObjectStoreError);
    expect(buffers.out).toBe(0);
  });
});

describe('S3 part size', () => {
  it('is PART_BYTES up to the file limit 10,000 such parts hold, and grows by whole MiB past it', () => {
    expect(partBytes(0)).toBe(PART_BYTES);
    expect(partBytes(10 * 1024 * MiB)).toBe(PART_BYTES);
    expect(partBytes(MAX_PARTS * PART_BYTES)).toBe(PART_BYTES);
    expect(partBytes(MAX_PARTS * PART_BYTES + 1)).toBe(PART_BYTES + MiB);
    const limit = 100 * 1024 * MiB;
    expect(partBytes(limit) % MiB).toBe(0);
    expect(partBytes(limit) * MAX_PARTS).toBeGreaterThanOrEqual(limit);
    expect((partBytes(limit) - MiB) * MAX_PARTS).toBeLessThan(limit);
  });
});
