// Two instances, two data directories, one PostgreSQL and one bucket (issue 34): a file uploaded through one is
// downloaded through the other, a resumable upload goes on and completes wherever its next request lands, a removal
// through one is seen by the other, and an instance that died in the middle of an append leaves an upload the other
// resumes at HEAD's offset. Runs when both PostgreSQL and the s3 blob store are under test.
import { createHash } from 'node:crypto';
import { CreateMultipartUploadCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { storedNames } from '../helpers/blobs.js';
import { newS3Prefix, testBucket, unfinishedUploads } from '../helpers/bucket.js';
import {
  backendsUnderTest,
  blobStoresUnderTest,
  createElement,
  type Harness,
  scratchPostgresDatabase,
  startHarness,
  userWithToken,
} from '../helpers/harness.js';
import { append, head, startUpload } from '../uploads/helpers.js';
import { noise } from './fixtures.js';

const KiB = 1024;
const settings = {
  file: { uploadMinChunkSizeInBytes: 16, uploadMaxChunkSizeInBytes: 256 * KiB, maxFileSizeInBytes: 1024 * KiB },
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function download(h: Harness, token: string, id: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.url}/${id}/file`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

const runs = backendsUnderTest().includes('postgres') && blobStoresUnderTest().includes('s3');

describe.skipIf(!runs)('two instances on one PostgreSQL and one bucket', () => {
  let a: Harness & { stop(): Promise<void> };
  let b: Harness & { stop(): Promise<void> };
  let dbs: Db[] = [];
  let drop: () => Promise<void>;
  let token: string;

  beforeAll(async () => {
    const scratch = await scratchPostgresDatabase();
    drop = scratch.drop;
    dbs = [await openPostgres(scratch.url, 4), await openPostgres(scratch.url, 4)];
    await migrate(dbs[0]!);
    const s3Prefix = newS3Prefix();
    a = await startHarness('postgres', { settings, blobStore: 's3', s3Prefix, db: dbs[0]! });
    b = await startHarness('postgres', { settings, blobStore: 's3', s3Prefix, db: dbs[1]! });
    token = (await userWithToken(a, 'alice@two.dev')).token;
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    for (const db of dbs) await db.close();
    await drop?.();
  });

  it('uploads through one instance and downloads (whole, ranged) through the other', async () => {
    const id = await createElement(a, token, { type: 'Doc' });
    const bytes = noise(300 * KiB, 7);
    const put = await a.request('PUT', `/${id}/file`, {
      token,
      raw: new Uint8Array(bytes),
      headers: { 'upload-complete': '?1', 'content-disposition': 'attachment; filename="a.bin"' },
    });
    expect(put.status).toBe(201);
    const whole = await download(b, token, id);
    expect(whole.status).toBe(200);
    expect(sha(whole.body)).toBe(sha(bytes));
    const part = await download(b, token, id, { range: 'bytes=1000-1999', 'if-range': whole.headers.get('etag')! });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${bytes.length}`);
    expect(part.body.equals(bytes.subarray(1000, 2000))).toBe(true);
    expect((await download(b, token, id, { range: `bytes=${bytes.length}-` })).status).toBe(416);
  });

  it('resumes an upload through the other instance and completes it there; no chunk objects are left', async () => {
    const id = await createElement(a, token, { type: 'Doc' });
    const data = noise(200 * KiB, 11);
    const started = await startUpload(a, token, id, { body: data.subarray(0, 50 * KiB) });
    expect(started.res.status).toBe(204);
    expect((await head(b, token, started.path)).headers.get('upload-offset')).toBe(String(50 * KiB));
    expect((await append(b, token, started.path, 50 * KiB, data.subarray(50 * KiB, 120 * KiB), false)).status).toBe(
      204,
    );
    // Back on the first instance, whose hash of the first chunk is stale now: it reads the stored bytes again.
    expect((await append(a, token, started.path, 120 * KiB, data.subarray(120 * KiB, 150 * KiB), false)).status).toBe(
      204,
    );
    const done = await append(b, token, started.path, 150 * KiB, data.subarray(150 * KiB), true, {
      'repr-digest': `sha-256=:${createHash('sha256').update(data).digest('base64')}:`,
    });
    expect(done.status).toBe(201);
    expect(sha((await download(a, token, id)).body)).toBe(sha(data));
    expect(await storedNames(b, started.id)).toEqual([]);
    expect(await storedNames(a, id)).toEqual([`f-${sha(data)}`]);
    expect(await unfinishedUploads(`${a.s3Prefix}/`)).toEqual([]);
  });

  it('removes a file through one instance; the other sees it gone, and the bytes are gone from the bucket', async () => {
    const id = await createElement(a, token, { type: 'Doc' });
    await a.request('PUT', `/${id}/file`, {
      token,
      raw: new Uint8Array(noise(10 * KiB, 3)),
      headers: { 'upload-complete': '?1' },
    });
    expect((await b.request('DELETE', `/${id}/file`, { token })).status).toBe(204);
    expect((await download(a, token, id)).status).toBe(404);
    expect(await storedNames(a, id)).toEqual([]);
  });

  it("resumes at HEAD's offset an upload whose instance died in the middle of an append", async () => {
    const id = await createElement(a, token, { type: 'Doc' });
    const data = noise(100 * KiB, 13);
    const started = await startUpload(a, token, id, { body: data.subarray(0, 40 * KiB) });
    // Instance a dies while appending at 40 KiB: it had stored a chunk (never committed) and begun a multipart
    // upload, and it held the lease. A moment a real kill cannot aim at (killed-instance.test.ts kills one while
    // the body streams): the chunk is complete in the bucket, its offset not in the database.
    const { client, bucket } = testBucket();
    const chunk = (offset: number) => `${a.s3Prefix}/${started.id}/c-${String(offset).padStart(15, '0')}`;
    await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: chunk(40 * KiB), Body: Buffer.from('half of a chunk') }),
    );
    await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: chunk(40 * KiB) }));
    await a.db.query(
      `UPDATE uploads SET lease_token = gen_random_uuid(), lease_until = now() + interval '60 seconds' WHERE id = $1`,
      [started.id],
    );
    expect((await append(b, token, started.path, 40 * KiB, data.subarray(40 * KiB), true)).status).toBe(409);
    b.clock.advance(61); // the dead instance's lease runs out
    const offset = (await head(b, token, started.path)).headers.get('upload-offset');
    expect(offset).toBe(String(40 * KiB));
    const done = await append(b, token, started.path, 40 * KiB, data.subarray(40 * KiB), true);
    expect(done.status).toBe(201);
    expect(sha((await download(b, token, id)).body)).toBe(sha(data));
    expect(await storedNames(b, started.id)).toEqual([]);
    // Taking the upload over dropped the dead instance's generation, its unfinished multipart upload with it.
    expect(await unfinishedUploads(`${a.s3Prefix}/${started.id}/`)).toEqual([]);
    await b.services.files.sweep(0);
    expect(await storedNames(b, id)).toEqual([`f-${sha(data)}`]);
  });
});
