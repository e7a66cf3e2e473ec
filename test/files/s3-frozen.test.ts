// An object store that stops answering (issue 41, item 4): a radosgw of the test's own, frozen with SIGSTOP. Every
// request that needs the store ends within file.s3.timeoutInSeconds and a margin with 503 `service-unavailable`
// and Retry-After (an outage the client may wait out), whether the store goes silent before it answers or while
// it is being sent a body; nothing changes meanwhile; once the store is continued, everything works again. The
// SDK used to retry a request that timed out twice more (a download failed after three timeouts), and a failed
// upload waited for its clean-up through the silent store as well.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { CreateBucketCommand, ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ObjectStore, startObjectStore } from '../../bench/lib/cluster.js';
import { PART_BYTES } from '../../src/blob/s3-blob-store.js';
import { freeze, radosgwProcess } from '../helpers/freeze.js';
import {
  attachFile,
  backendsUnderTest,
  blobStoresUnderTest,
  createElement,
  type Harness,
  type ObjectStoreAccess,
  startHarness,
  type TestResponse,
  userWithToken,
} from '../helpers/harness.js';
import { append, head, startUpload } from '../uploads/helpers.js';
import { noise } from './fixtures.js';

const runs = blobStoresUnderTest().includes('s3');
const TIMEOUT_SECONDS = 3;
/**
 * The longest a request may take while the store is frozen: five times the timeout it is answered after, which
 * catches a request that waits for the store to come back whatever the machine's load.
 */
const BOUND_MS = 5 * TIMEOUT_SECONDS * 1000;

/** The 503 problem with Retry-After, and nothing in it that names the store. */
function unavailable(res: TestResponse): void {
  expect(res.status).toBe(503);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  const { type, ...rest } = JSON.parse(res.text);
  expect(type).toMatch(/\/error\/503\/service-unavailable$/);
  expect(JSON.stringify(rest)).not.toMatch(/frozen-store|127\.0\.0\.1|bucket|S3|object store/i);
}

/** A request and how long it took to be answered. */
async function timed(request: Promise<TestResponse>): Promise<{ res: TestResponse; ms: number }> {
  const started = performance.now();
  const res = await request;
  return { res, ms: performance.now() - started };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe.runIf(runs)('an object store frozen with SIGSTOP', () => {
  let store: ObjectStore | null = null;
  let access: ObjectStoreAccess;
  let bucket: S3Client;

  beforeAll(async () => {
    store = await startObjectStore(() => {});
    access = { ...store, bucket: 'frozen-store' };
    bucket = new S3Client({
      endpoint: store.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    });
    await bucket.send(new CreateBucketCommand({ Bucket: access.bucket }));
  }, 180_000);

  afterAll(async () => {
    bucket?.destroy();
    await store?.stop();
  });

  for (const backend of backendsUnderTest())
    describe(`element files [${backend}, s3]`, () => {
      let h: Harness & { stop(): Promise<void> };
      let token: string;
      let thaw = () => {};
      const prefix = `frozen-${backend}`;
      beforeAll(async () => {
        const settings = { file: { s3: { timeoutInSeconds: TIMEOUT_SECONDS }, uploadMinChunkSizeInBytes: 1024 } };
        h = await startHarness(backend, { blobStore: 's3', objectStore: access, s3Prefix: prefix, settings });
        token = (await userWithToken(h, 'alice@frozen.dev')).token;
      });
      afterAll(async () => {
        thaw();
        await h?.stop();
      });

      it('answers downloads, uploads, replacements, appends and completions within the timeout with 503, and works again once the store is back', async () => {
        const old = Buffer.from('the old file');
        const kept = await createElement(h, token, { type: 'Doc' });
        await attachFile(h, token, kept, old, 'old.txt');
        const empty = await createElement(h, token, { type: 'Doc' });
        const first = noise(4096, 1);
        const appended = await createElement(h, token, { type: 'Doc' });
        const appending = await startUpload(h, token, appended, { body: first });
        expect(appending.res.status).toBe(204);
        const completed = await createElement(h, token, { type: 'Doc' });
        const completing = await startUpload(h, token, completed, { body: first });
        expect(completing.res.status).toBe(204);
        const upload = noise(1024 * 1024, 2);
        const more = noise(4096, 3);

        thaw = freeze([radosgwProcess(store!.dir)]);
        const file = (id: string, bytes: Buffer) =>
          h.request('PUT', `/${id}/file`, { token, raw: new Uint8Array(bytes), headers: { 'upload-complete': '?1' } });
        const [download, direct, replacement, appendRes, completion, metadata] = await Promise.all([
          timed(h.request('GET', `/${kept}/file`, { token })),
          timed(file(empty, upload)),
          timed(file(kept, upload)),
          timed(append(h, token, appending.path, first.length, more, false)),
          timed(append(h, token, completing.path, first.length, Buffer.alloc(0), true)),
          timed(h.request('GET', `/${kept}`, { token })),
        ]);
        thaw();

        for (const { res, ms } of [download, direct, replacement, appendRes, completion]) {
          unavailable(res);
          expect(ms).toBeLessThan(BOUND_MS);
        }
        // What does not need the store is not held up by it.
        expect(metadata.res.status).toBe(200);
        expect(metadata.ms).toBeLessThan(TIMEOUT_SECONDS * 1000);

        // Nothing changed meanwhile, and everything works again.
        const got = await h.request('GET', `/${kept}/file`, { token });
        expect(got.status).toBe(200);
        expect(got.text).toBe('the old file');
        expect((await h.request('GET', `/${empty}`, { token })).json.data.hasFile).toBeUndefined();
        expect((await head(h, token, appending.path)).headers.get('upload-offset')).toBe(String(first.length));
        expect((await head(h, token, completing.path)).headers.get('upload-complete')).toBe('?0');

        expect((await file(empty, upload)).status).toBe(201);
        expect((await file(kept, upload)).status).toBe(201);
        const replaced = await fetch(`${h.url}/${kept}/file`, { headers: { authorization: `Bearer ${token}` } });
        expect(replaced.status).toBe(200);
        expect(sha256(Buffer.from(await replaced.arrayBuffer()))).toBe(sha256(upload));
        expect((await append(h, token, appending.path, first.length, more, true)).status).toBe(201);
        expect((await append(h, token, completing.path, first.length, Buffer.alloc(0), true)).status).toBe(201);
        expect((await h.request('GET', `/${completed}`, { token })).json.data.hasFile).toBe(true);
      }, 60_000);

      it('ends an upload whose store stops reading its body within the timeout, and leaves nothing behind once the store is back', async () => {
        const id = await createElement(h, token, { type: 'Doc' });
        const body = noise(3 * PART_BYTES, 4);
        const req = http.request(`${h.url}/${id}/file`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'upload-complete': '?1', 'content-length': String(body.length) },
        });
        const answer = new Promise<{ status: number; retryAfter: string | undefined; at: number }>(
          (resolve, reject) => {
            req.on('response', (res) => {
              res.resume();
              res.on('end', () =>
                resolve({
                  status: res.statusCode!,
                  retryAfter: res.headers['retry-after'] as string,
                  at: performance.now(),
                }),
              );
            });
            req.on('error', reject);
          },
        );
        // Once the first part is on its way (a multipart upload has begun), the store stops: the parts being sent
        // find it reading nothing.
        req.write(body.subarray(0, PART_BYTES + 1024 * 1024));
        const started = performance.now();
        while ((await multipartUploads()) === 0) {
          if (performance.now() - started > 20_000) throw new Error('the upload never reached the store');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        thaw = freeze([radosgwProcess(store!.dir)]);
        const frozenAt = performance.now();
        req.end(body.subarray(PART_BYTES + 1024 * 1024));
        const { status, retryAfter, at } = await answer;
        thaw();
        expect(status).toBe(503);
        expect(Number(retryAfter)).toBeGreaterThan(0);
        expect(at - frozenAt).toBeLessThan(BOUND_MS);
        expect((await h.request('GET', `/${id}`, { token })).json.data.hasFile).toBeUndefined();
        // The answer did not wait for the abort of the multipart upload: sent to the frozen store, it is answered
        // once the store is back (within the timeout), or fails and leaves the upload to the sweep.
        const settled = performance.now() + TIMEOUT_SECONDS * 1000 + 1000;
        while ((await multipartUploads()) > 0 && performance.now() < settled)
          await new Promise((resolve) => setTimeout(resolve, 100));
        await h.services.files.sweep(0);
        expect(await multipartUploads()).toBe(0);
      }, 60_000);

      async function multipartUploads(): Promise<number> {
        const page = await bucket.send(
          new ListMultipartUploadsCommand({ Bucket: access.bucket, Prefix: `${prefix}/` }),
        );
        return (page.Uploads ?? []).length;
      }
    });
});
