// The object-store blob store against a real S3-compatible store (the throw-away Ceph cluster of the test run): what
// each operation leaves in the bucket, object by object (its sweep against the database: test/files/sweep.test.ts).
// Skipped without TRELLIS_TEST_S3 (npm test sets it when the s3 blob store is under test).
import { createHash, randomBytes } from 'node:crypto';
import { CreateMultipartUploadCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartialAppendError } from '../../../src/blob/blob-store.js';
import { S3BlobStore } from '../../../src/blob/s3-blob-store.js';
import { ObjectStoreError } from '../../../src/blob/s3-errors.js';
import { collect } from '../../helpers/blobs.js';
import {
  emptyPrefix,
  ensureTestBucket,
  newS3Prefix,
  objectsUnder,
  testBucket,
  testObjectStore,
  unfinishedUploads,
} from '../../helpers/bucket.js';

const MiB = 1024 * 1024;
const ELEMENT = '7d1f0e2a-1111-4222-8333-944445555666';
const UPLOAD = '9d1f0e2a-1111-4222-8333-944445555666';
/** The first generation of an upload's bytes. */
const first = (key: string) => ({ key, generation: null });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const from = (...parts: Array<Buffer | string | Error>) =>
  (async function* () {
    for (const p of parts) {
      if (p instanceof Error) throw p;
      yield Buffer.from(p);
    }
  })();

describe.skipIf(!process.env.TRELLIS_TEST_S3)('S3BlobStore against a real object store', () => {
  let prefix: string;
  let store: S3BlobStore;
  const names = async () => (await objectsUnder(`${prefix}/`)).map((o) => o.name.slice(prefix.length + 1)).sort();

  beforeAll(ensureTestBucket);
  beforeAll(() => {
    const s3 = testObjectStore()!;
    prefix = newS3Prefix();
    store = new S3BlobStore({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: s3.bucket,
      prefix: `${prefix}/`,
      timeoutMs: 10_000,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
  });
  afterAll(() => emptyPrefix(`${prefix}/`));

  it('checks the bucket at start: a missing one is a clear error', async () => {
    await expect(store.verify()).resolves.toBeUndefined();
    const s3 = testObjectStore()!;
    const missing = new S3BlobStore({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: 'no-such-bucket-here',
      prefix: '',
      timeoutMs: 10_000,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await expect(missing.verify()).rejects.toThrow(
      /file\.s3\.bucket: the bucket "no-such-bucket-here" .*does not exist/,
    );
  });

  it('writes a temporary object while hashing, and names each version of a file by its SHA-256', async () => {
    const v1 = Buffer.from('version one');
    const temp = await store.write(from('version ', 'one'), { maxBytes: 100, headBytes: 4 });
    expect(temp).toMatchObject({ size: v1.length, head: Buffer.from('vers') });
    expect(temp.sha256.toString('hex')).toBe(sha(v1));
    const placed = await store.replace(ELEMENT, temp, { previous: 'none', next: sha(v1) });
    await placed.finish();
    await store.discard(temp);
    expect(await names()).toEqual([`${ELEMENT}/f-${sha(v1)}`]);

    // A replacement keeps the old version readable until it is settled.
    const v2 = Buffer.from('version two!');
    const temp2 = await store.write(from(v2), { maxBytes: 100 });
    const replacing = await store.replace(ELEMENT, temp2, { previous: sha(v1), next: sha(v2) });
    expect(await collect((await store.open(ELEMENT, undefined, sha(v1)))!.stream)).toEqual(v1);
    expect(await collect((await store.open(ELEMENT, undefined, sha(v2)))!.stream)).toEqual(v2);
    await replacing.undo(); // the transaction failed: the new version goes, the old one stays
    expect(await names()).toEqual([`${ELEMENT}/f-${sha(v1)}`, `tmp/${temp2.temp.split('/').pop()}`]);
    const again = await store.replace(ELEMENT, temp2, { previous: sha(v1), next: sha(v2) });
    await again.finish(); // committed: the old version goes
    await store.discard(temp2);
    expect(await names()).toEqual([`${ELEMENT}/f-${sha(v2)}`]);

    const range = await store.open(ELEMENT, { start: 8, end: 10 }, sha(v2));
    expect(range!.size).toBe(v2.length);
    expect((await collect(range!.stream)).toString()).toBe('two');
    expect(await store.open(ELEMENT, undefined, sha(v1))).toBeNull();

    await (await store.replace(ELEMENT, null, { previous: sha(v2), next: 'none' })).finish();
    expect(await names()).toEqual([]);
  });

  it('refuses what breaks the limit and leaves nothing behind', async () => {
    await expect(store.write(from('12345', '67890'), { maxBytes: 9 })).rejects.toMatchObject({
      name: 'BlobLimitError',
    });
    await expect(store.write(from('12345', new Error('client went away')), { maxBytes: 100 })).rejects.toThrow(
      'client went away',
    );
    expect(await names()).toEqual([]);
  });

  it('stores each append as its own object, cuts leftovers at the offset, and keeps what a broken body sent', async () => {
    expect(await store.uploadSize(first(UPLOAD))).toBeNull();
    await expect(store.append(first(UPLOAD), 3, from('x'), { maxBytes: 10 })).rejects.toThrow(/missing, expected 3/);
    expect((await store.append(first(UPLOAD), 0, from('first '), { maxBytes: 100 })).total).toBe(6);
    expect((await store.append(first(UPLOAD), 6, from('second '), { maxBytes: 100 })).total).toBe(13);
    // An append whose offset never reached the database (its instance died): the next append at 13 cuts it.
    await store.append(first(UPLOAD), 13, from('lost'), { maxBytes: 100 });
    expect(await store.uploadSize(first(UPLOAD))).toBe(17);
    const kept = store.append(first(UPLOAD), 13, from('third', new Error('gone')), {
      maxBytes: 100,
      keepPartial: true,
    });
    await expect(kept).rejects.toBeInstanceOf(PartialAppendError);
    await expect(kept).rejects.toMatchObject({ total: 18 });
    await expect(store.append(first(UPLOAD), 18, from('toolong'), { maxBytes: 3 })).rejects.toMatchObject({
      name: 'BlobLimitError',
    });
    const check = () => {
      throw new Error('refused');
    };
    await expect(store.append(first(UPLOAD), 18, from('!'), { maxBytes: 3, check })).rejects.toThrow('refused');
    expect(await store.uploadSize(first(UPLOAD))).toBe(18);
    expect(await names()).toEqual([
      `${UPLOAD}/c-000000000000000`,
      `${UPLOAD}/c-000000000000006`,
      `${UPLOAD}/c-000000000000013`,
    ]);
    expect((await collect((await store.openUpload(first(UPLOAD)))!.stream)).toString()).toBe('first second third');
    expect((await collect((await store.openUpload(first(UPLOAD), { start: 4, end: 14 }))!.stream)).toString()).toBe(
      't second th',
    );
    await expect(store.append(first(UPLOAD), 10, from('x'), { maxBytes: 3 })).rejects.toThrow(
      /no chunk boundary at 10/,
    );

    // Completion with small chunks: streamed through this process into the element's version.
    const whole = Buffer.from('first second third');
    await (
      await store.replace(ELEMENT, { ...first(UPLOAD), size: whole.length }, { previous: 'none', next: sha(whole) })
    ).finish();
    expect(await names()).toEqual([`${ELEMENT}/f-${sha(whole)}`]);
    expect(await collect((await store.open(ELEMENT, undefined, sha(whole)))!.stream)).toEqual(whole);
    await store.delete(ELEMENT);
    expect(await names()).toEqual([]);
  });

  it('assembles chunks of at least 5 MiB server-side, small ones streamed in between, and undoes cleanly', async () => {
    const parts = [
      randomBytes(5 * MiB),
      randomBytes(1000),
      randomBytes(6 * MiB),
      randomBytes(5 * MiB + 3),
      randomBytes(7),
    ];
    let offset = 0;
    for (const part of parts)
      offset = (await store.append(first(UPLOAD), offset, from(part), { maxBytes: 8 * MiB })).total;
    const whole = Buffer.concat(parts);
    const failed = await store.replace(
      ELEMENT,
      { ...first(UPLOAD), size: whole.length },
      { previous: 'none', next: sha(whole) },
    );
    expect(sha(await collect((await store.open(ELEMENT, undefined, sha(whole)))!.stream))).toBe(sha(whole));
    await failed.undo(); // the upload keeps its chunks, the element has no version
    expect((await names()).filter((n) => n.startsWith(ELEMENT))).toEqual([]);
    expect(await store.uploadSize(first(UPLOAD))).toBe(whole.length);
    await (
      await store.replace(ELEMENT, { ...first(UPLOAD), size: whole.length }, { previous: 'none', next: sha(whole) })
    ).finish();
    expect(await names()).toEqual([`${ELEMENT}/f-${sha(whole)}`]);
    expect(sha(await collect((await store.open(ELEMENT, undefined, sha(whole)))!.stream))).toBe(sha(whole));
    expect(await unfinishedUploads(`${prefix}/`)).toEqual([]);
    await store.delete(ELEMENT);
  });

  it('forks a generation of an upload that a late writer of the old one cannot touch', async () => {
    const next = { key: UPLOAD, generation: 'ed1f0e2a-1111-4222-8333-944445555666' };
    await store.append(first(UPLOAD), 0, from('committed '), { maxBytes: 100 });
    await store.append(first(UPLOAD), 10, from('late'), { maxBytes: 100 }); // never committed
    await store.fork(first(UPLOAD), next.generation, 10);
    expect(await store.uploadSize(next)).toBe(10);
    await store.append(next, 10, from('mine'), { maxBytes: 100 });
    // The late writer goes on in its own generation, at the very same offset: the new one keeps its bytes.
    await store.append(first(UPLOAD), 10, from('LATE!'), { maxBytes: 100 });
    expect((await collect((await store.openUpload(next))!.stream)).toString()).toBe('committed mine');
    await store.dropGeneration(first(UPLOAD));
    expect(await store.uploadSize(first(UPLOAD))).toBeNull();
    expect(await names()).toEqual([
      `${UPLOAD}/g-${next.generation}/c-000000000000000`,
      `${UPLOAD}/g-${next.generation}/c-000000000000010`,
    ]);
    const whole = Buffer.from('committed mine');
    await expect(store.replace(ELEMENT, { ...next, size: 15 }, { previous: 'none', next: sha(whole) })).rejects.toThrow(
      /holds 14 bytes/,
    );
    await (await store.replace(ELEMENT, { ...next, size: 14 }, { previous: 'none', next: sha(whole) })).finish();
    expect(await names()).toEqual([`${ELEMENT}/f-${sha(whole)}`]);
    await store.delete(ELEMENT);
  });

  it('removes an upload twice at once: a multipart upload the other one aborted first is no error', async () => {
    const { client, bucket } = testBucket();
    for (let i = 0; i < 20; i++)
      await client.send(
        new CreateMultipartUploadCommand({
          Bucket: bucket,
          Key: `${prefix}/${UPLOAD}/c-${String(i).padStart(15, '0')}`,
        }),
      );
    await Promise.all([store.deleteUpload(UPLOAD), store.deleteUpload(UPLOAD), store.deleteUpload(UPLOAD)]);
    expect(await unfinishedUploads(`${prefix}/${UPLOAD}/`)).toEqual([]);
  });

  it('turns a store that does not answer into an ObjectStoreError that names no bucket', async () => {
    const s3 = testObjectStore()!;
    const dead = new S3BlobStore({
      endpoint: 'http://127.0.0.1:9', // discard: nothing listens
      region: 'us-east-1',
      bucket: s3.bucket,
      prefix: '',
      timeoutMs: 2_000,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const error = await dead.uploadSize(first(UPLOAD)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ObjectStoreError);
    expect((error as ObjectStoreError).unavailable).toBe(true); // a 503 for the client, not a 500
    expect((error as Error).message).not.toContain(s3.bucket);
  });
});
