// An object store that does not answer, or stops answering in the middle of an upload (issue 34, "crash and fault
// safety"; the client's side of an interrupted upload is in failures.test.ts): requests that touch file bytes get
// 503 with Retry-After (an outage, issue 41) without a word about the bucket or the endpoint, and nothing is stored; requests that do not
// touch files are not held up; a download read slowly is not mistaken for a silent store. Runs on each backend when
// the s3 blob store is under test.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PART_BYTES } from '../../src/blob/s3-blob-store.js';
import {
  currentNames,
  elementBytes,
  plant,
  type StoreRelay,
  storedNames,
  storeRelay,
  temporaryBlobs,
} from '../helpers/blobs.js';
import { unfinishedUploads } from '../helpers/bucket.js';
import {
  attachFile,
  backendsUnderTest,
  blobStoresUnderTest,
  createElement,
  type Harness,
  startHarness,
  userWithToken,
} from '../helpers/harness.js';
import { waitFor } from '../uploads/helpers.js';
import { noise } from './fixtures.js';

/** The store's timeout where it refuses connections: a request that waited for it took at least this long. */
const STORE_TIMEOUT_SECONDS = 10;

const runs = blobStoresUnderTest().includes('s3');

/** The 503 problem with Retry-After, and nothing in it that names the store. */
const generic = (res: { status: number; text: string; headers: Pick<Headers, 'get'> }) => {
  expect(res.status).toBe(503);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  const { type, ...rest } = JSON.parse(res.text);
  expect(type).toMatch(/\/error\/503\/service-unavailable$/); // on the service's own URL
  expect(JSON.stringify(rest)).not.toMatch(/trellis-test|127\.0\.0\.1|bucket|S3|object store/i);
};

for (const backend of backendsUnderTest())
  describe.skipIf(!runs)(`element files: an object store that does not answer [${backend}, s3]`, () => {
    let h: Harness & { stop(): Promise<void> };
    let token: string;
    beforeAll(async () => {
      // Port 9 (discard): nothing listens, every request to the store fails at once.
      // A timeout far above what a request takes, so that a request held up by the store shows.
      const settings = { file: { s3: { endpoint: 'http://127.0.0.1:9', timeoutInSeconds: STORE_TIMEOUT_SECONDS } } };
      h = await startHarness(backend, { blobStore: 's3', settings });
      token = (await userWithToken(h, 'alice@faults.dev')).token;
    });
    afterAll(() => h?.stop());

    it('answers an upload with the 503 problem and stores nothing', async () => {
      const id = await createElement(h, token, { type: 'Doc' });
      const res = await h.request('PUT', `/${id}/file`, {
        token,
        raw: new Uint8Array(Buffer.from('bytes that cannot be stored')),
        headers: { 'upload-complete': '?1' },
      });
      generic(res);
      expect((await h.request('GET', `/${id}`, { token })).json.data.hasFile).toBeUndefined();
    });

    it('answers a download whose bytes cannot be read with the 503 problem', async () => {
      const id = await createElement(h, token, { type: 'Doc' });
      const meta = { contentLength: 3, extension: 'txt', mimeType: 'text/plain', hash: { sha256: 'a'.repeat(64) } };
      await h.db.query('UPDATE elements SET file = $2 WHERE id = $1', [id, meta]);
      generic(await h.request('GET', `/${id}/file`, { token }));
      // HEAD decides from the metadata alone.
      expect((await h.request('HEAD', `/${id}/file`, { token })).status).toBe(200);
    });

    it('answers a resumable upload with the 503 problem', async () => {
      const id = await createElement(h, token, { type: 'Doc' });
      const res = await h.request('POST', `/${id}/file`, {
        token,
        raw: new Uint8Array(Buffer.from('first chunk')),
        headers: { 'upload-complete': '?0' },
      });
      generic(res);
    });

    it('does not hold up requests that do not touch files', async () => {
      const started = performance.now();
      const id = await createElement(h, token, { type: 'Doc', data: { n: 1 } });
      expect((await h.request('GET', `/${id}`, { token })).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(STORE_TIMEOUT_SECONDS * 1000);
    });
  });

for (const backend of backendsUnderTest())
  describe.skipIf(!runs)(
    `element files: an object store that goes silent, or waits for a slow reader [${backend}, s3]`,
    () => {
      let relay: StoreRelay;
      let h: Harness & { stop(): Promise<void> };
      let token: string;
      beforeAll(async () => {
        relay = await storeRelay();
        const settings = { file: { s3: { endpoint: relay.endpoint, timeoutInSeconds: 1 } } };
        h = await startHarness(backend, { blobStore: 's3', settings });
        token = (await userWithToken(h, 'alice@silent.dev')).token;
      });
      afterAll(async () => {
        await h?.stop();
        await relay?.close();
      });

      it('answers the upload with the 503 problem, keeps the old file, and holds up nothing else meanwhile', async () => {
        const id = await createElement(h, token, { type: 'Doc' });
        const old = Buffer.from('the old file');
        await attachFile(h, token, id, old, 'old.txt');
        const body = noise(2 * PART_BYTES, 5);
        const req = http.request(`${h.url}/${id}/file`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'upload-complete': '?1', 'content-length': String(body.length) },
        });
        const answer = new Promise<{ status: number; text: string; headers: Pick<Headers, 'get'> }>(
          (resolve, reject) => {
            req.on('response', (res) => {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (c) => (text += c));
              const headers = { get: (name: string) => (res.headers[name] as string | undefined) ?? null };
              res.on('end', () => resolve({ status: res.statusCode!, text, headers }));
            });
            req.on('error', reject);
          },
        );
        // Once the first part is on its way to the store (a multipart upload has begun), the store goes silent.
        req.write(body.subarray(0, PART_BYTES + 1024 * 1024));
        await waitFor(
          'the upload to reach the store',
          async () => (await unfinishedUploads(`${h.s3Prefix}/tmp/`)).length > 0,
        );
        relay.stall();
        try {
          req.end(body.subarray(PART_BYTES + 1024 * 1024));
          // The upload waits for the silent store until its timeout; a request that does not touch files is answered
          // before that.
          let uploadAnswered = false;
          void answer.then(() => (uploadAnswered = true));
          expect((await h.request('GET', `/${id}`, { token })).status).toBe(200);
          expect(uploadAnswered).toBe(false);
          generic(await answer);
        } finally {
          relay.restore(); // also when an expectation failed: the tests after this one need the store back
        }
        expect((await elementBytes(h, id))?.equals(old)).toBe(true);
        expect((await h.request('GET', `/${id}/file`, { token })).text).toBe('the old file');
        // What the failed upload left in the store (its clean-up went unanswered too) is the sweep's.
        await h.services.files.sweep(0);
        expect(await temporaryBlobs(h)).toEqual([]);
        expect(await storedNames(h, id)).toEqual(await currentNames(h, id));
      }, 60_000);

      it('answers a download the store does not answer with the 503 problem', async () => {
        const id = await createElement(h, token, { type: 'Doc' });
        await attachFile(h, token, id, Buffer.from('kept'), 'kept.txt');
        relay.stall();
        try {
          generic(await h.request('GET', `/${id}/file`, { token }));
        } finally {
          relay.restore();
        }
        expect((await h.request('GET', `/${id}/file`, { token })).text).toBe('kept');
      }, 60_000);

      it("sends every byte of a download to a client that pauses longer than the store's timeout", async () => {
        // The silence that fails a request is the store's: a body that waits for its reader is not silent. The file is
        // larger than what the sockets on the way hold, so the service does stop reading from the store meanwhile.
        // Stored behind the service's back: through it, with this short timeout, a store slowed down by a loaded
        // machine may fail the upload.
        const id = await createElement(h, token, { type: 'Doc' });
        const bytes = noise(48 * 1024 * 1024, 6);
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        await plant(h, `${id}/f-${sha256}`, bytes);
        const meta = { contentLength: bytes.length, extension: 'bin', mimeType: 'application/octet-stream' };
        await h.db.query('UPDATE elements SET file = $2 WHERE id = $1', [id, { ...meta, hash: { sha256 } }]);
        const received = await new Promise<Buffer>((resolve, reject) => {
          const req = http.get(`${h.url}/${id}/file`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
            const parts: Buffer[] = [];
            res.once('data', (first: Buffer) => {
              parts.push(first);
              res.pause();
              setTimeout(() => {
                res.on('data', (c: Buffer) => parts.push(c));
                res.resume();
              }, 3000);
            });
            res.on('end', () => resolve(Buffer.concat(parts)));
            res.on('error', reject);
          });
          req.on('error', reject);
        });
        expect(received.length).toBe(bytes.length);
        expect(received.equals(bytes)).toBe(true);
      }, 60_000);

      it('closes the connection of a download whose store falls silent while the service waits for its bytes', async () => {
        // The answer has begun (status and length are out): all the service can do is stop, and the client sees a body
        // shorter than announced.
        const id = await createElement(h, token, { type: 'Doc' });
        const bytes = noise(48 * 1024 * 1024, 8);
        const sha256 = createHash('sha256').update(bytes).digest('hex');
        await plant(h, `${id}/f-${sha256}`, bytes);
        const meta = { contentLength: bytes.length, extension: 'bin', mimeType: 'application/octet-stream' };
        await h.db.query('UPDATE elements SET file = $2 WHERE id = $1', [id, { ...meta, hash: { sha256 } }]);
        try {
          const got = await new Promise<{ status: number; length: number }>((resolve, reject) => {
            const req = http.get(`${h.url}/${id}/file`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
              let length = 0;
              res.once('data', () => relay.stall());
              res.on('data', (c: Buffer) => (length += c.length));
              res.on('error', () => {});
              res.on('close', () => resolve({ status: res.statusCode!, length }));
            });
            req.on('error', reject);
          });
          expect(got.status).toBe(200);
          expect(got.length).toBeLessThan(bytes.length);
        } finally {
          relay.restore();
        }
        expect((await h.request('GET', `/${id}`, { token })).status).toBe(200);
      }, 60_000);
    },
  );
