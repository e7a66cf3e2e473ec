// An object store that does not answer (issue 34, "crash and fault safety"): requests that touch file bytes get the
// spec's 500 problem without a word about the bucket or the endpoint, and nothing is stored; requests that do not
// touch files are not held up. Runs on each backend when the s3 blob store is under test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backendsUnderTest,
  blobStoresUnderTest,
  createElement,
  type Harness,
  startHarness,
  userWithToken,
} from '../helpers/harness.js';

const runs = blobStoresUnderTest().includes('s3');

for (const backend of runs ? backendsUnderTest() : [])
  describe(`element files: an object store that does not answer [${backend}, s3]`, () => {
    let h: Harness & { stop(): Promise<void> };
    let token: string;
    beforeAll(async () => {
      // Port 9 (discard): nothing listens, every request to the store fails at once.
      const settings = { file: { s3: { endpoint: 'http://127.0.0.1:9', timeoutInSeconds: 2 } } };
      h = await startHarness(backend, { blobStore: 's3', settings });
      token = (await userWithToken(h, 'alice@faults.dev')).token;
    });
    afterAll(() => h?.stop());

    const generic = (res: { status: number; text: string; json: any }) => {
      expect(res.status).toBe(500);
      expect(res.json.type).toMatch(/\/error\/500\/internal-server-error$/);
      expect(res.text).not.toMatch(/trellis-test|127\.0\.0\.1:9|bucket|S3|object store/i);
    };

    it('answers an upload with the 500 problem and stores nothing', async () => {
      const id = await createElement(h, token, { type: 'Doc' });
      const res = await h.request('PUT', `/${id}/file`, {
        token,
        raw: new Uint8Array(Buffer.from('bytes that cannot be stored')),
        headers: { 'upload-complete': '?1' },
      });
      generic(res);
      expect((await h.request('GET', `/${id}`, { token })).json.data.hasFile).toBeUndefined();
    });

    it('answers a download whose bytes cannot be read with the 500 problem', async () => {
      const id = await createElement(h, token, { type: 'Doc' });
      const meta = { contentLength: 3, extension: 'txt', mimeType: 'text/plain', hash: { sha256: 'a'.repeat(64) } };
      await h.db.query('UPDATE elements SET file = $2 WHERE id = $1', [id, meta]);
      generic(await h.request('GET', `/${id}/file`, { token }));
      // HEAD decides from the metadata alone.
      expect((await h.request('HEAD', `/${id}/file`, { token })).status).toBe(200);
    });

    it('answers a resumable upload with the 500 problem', async () => {
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
      expect(performance.now() - started).toBeLessThan(1000);
    });
  });
