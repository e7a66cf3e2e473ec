// Uploads that fail: a client that goes away half-way, bodies over the size limit (refused early, from the
// declared length or as soon as the stream passes the limit). Each must leave the previous file, the metadata and
// the store's temporary blobs exactly as they were, on the disk store and on the object store (faults of the object
// store itself: s3-failures.test.ts).
import http from 'node:http';
import { beforeAll, expect, it } from 'vitest';
import { PART_BYTES } from '../../src/blob/s3-blob-store.js';
import { currentNames, elementBytes, storedNames, temporaryBlobs } from '../helpers/blobs.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { waitFor } from '../uploads/helpers.js';
import { noise, rawRequest, reprDigest } from './fixtures.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const MiB = 1024 * 1024;

const noTemporaryBlobs = (h: Harness) =>
  waitFor('no temporary blob', async () => (await temporaryBlobs(h)).length === 0);

async function snapshot(h: Harness, id: string, token: string) {
  const element = await h.request('GET', `/${id}`, { token });
  const file = await h.request('GET', `/${id}/file`, { token });
  return { element: element.text, etag: element.headers.get('etag'), fileStatus: file.status, fileBody: file.text };
}

/**
 * Starts an upload, sends `sent` of the `declared` bytes, waits until the server has begun to store them in a
 * temporary blob, then drops the connection. Resolves once the socket is gone. The object store shows an object on
 * its way in once its first part is full (the bytes before are in memory), so `sent` must be more than a part.
 */
async function disconnectHalfWay(
  h: Harness,
  method: string,
  id: string,
  token: string,
  declared: number,
  sent: number,
) {
  const req = http.request(`${h.url}/${id}/file`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'upload-complete': '?1', 'content-length': String(declared) },
  });
  req.on('error', () => {}); // the destroy below is the point
  req.write(noise(sent, 9));
  await waitFor('the server to stream into a temporary blob', async () => (await temporaryBlobs(h)).length > 0);
  req.destroy();
  await new Promise((resolve) => req.on('close', resolve));
}

describeBackends(
  'element files: interrupted uploads',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@interrupt.dev');
    });

    it('keeps the old file when a client disconnects half-way through a PUT, and removes the temporary blob', async () => {
      const id = await createElement(h(), alice.token, { type: 'Doc' });
      const old = Buffer.from('the old, intact file');
      const first = await h().request('POST', `/${id}/file`, {
        token: alice.token,
        raw: new Uint8Array(old),
        headers: { 'upload-complete': '?1' },
      });
      expect(first.status).toBe(201);
      const before = await snapshot(h(), id, alice.token);

      await disconnectHalfWay(h(), 'PUT', id, alice.token, 2 * PART_BYTES, PART_BYTES + 4 * MiB);
      await noTemporaryBlobs(h());

      expect(await snapshot(h(), id, alice.token)).toEqual(before);
      expect((await elementBytes(h(), id))?.equals(old)).toBe(true);
      expect(await storedNames(h(), id)).toEqual(await currentNames(h(), id));
    });

    it('leaves an element without a file when the first upload is cut off', async () => {
      const id = await createElement(h(), alice.token, { type: 'Doc' });
      const before = await snapshot(h(), id, alice.token);
      await disconnectHalfWay(h(), 'POST', id, alice.token, 2 * PART_BYTES, PART_BYTES + MiB);
      await noTemporaryBlobs(h());
      expect(await snapshot(h(), id, alice.token)).toEqual(before);
      expect(before.fileStatus).toBe(404);
      expect(await storedNames(h(), id)).toEqual([]);
      // The service is fine afterwards: the same element takes a complete upload.
      const ok = await h().request('POST', `/${id}/file`, {
        token: alice.token,
        raw: new Uint8Array(Buffer.from('ok')),
        headers: { 'upload-complete': '?1' },
      });
      expect(ok.status).toBe(201);
    });
  },
  { blobs: true },
);

const MAX = 1000;

describeBackends(
  'element files: size limit',
  (h) => {
    let alice: User;
    let id: string;
    const old = Buffer.from('small and valid');
    const headers = () => ({ authorization: `Bearer ${alice.token}`, 'upload-complete': '?1' });

    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@limits.dev');
      id = await createElement(h(), alice.token, { type: 'Doc' });
      const res = await rawRequest(
        h().url,
        'POST',
        `/${id}/file`,
        { ...headers(), 'content-length': String(old.length) },
        [old],
      );
      expect(res.status).toBe(201);
    });

    async function expectUnchanged(before: Awaited<ReturnType<typeof snapshot>>) {
      await noTemporaryBlobs(h());
      expect(await snapshot(h(), id, alice.token)).toEqual(before);
      expect((await elementBytes(h(), id))?.equals(old)).toBe(true);
    }

    it('accepts exactly the maximum size', async () => {
      const other = await createElement(h(), alice.token, { type: 'Doc' });
      const bytes = noise(MAX, 5);
      const res = await rawRequest(
        h().url,
        'PUT',
        `/${other}/file`,
        { ...headers(), 'repr-digest': reprDigest(bytes) },
        [bytes],
      );
      expect(res.status).toBe(201);
    });

    it('refuses a declared Content-Length over the limit before reading the body', async () => {
      const before = await snapshot(h(), id, alice.token);
      // 10 MiB announced, 1 KiB sent, the request never finished: the answer must come anyway.
      const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          `${h().url}/${id}/file`,
          { method: 'PUT', headers: { ...headers(), 'content-length': String(10 * 1024 * 1024) } },
          (r) => {
            let body = '';
            r.on('data', (c) => (body += c));
            r.on('end', () => resolve({ status: r.statusCode!, body }));
          },
        );
        req.on('error', reject);
        req.write(noise(1024));
      });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({
        status: 400,
        type: expect.stringMatching(/bad-content$/),
        detail: expect.stringMatching(/larger than the maximum of 1000 bytes/),
      });
      await expectUnchanged(before);
    });

    it('refuses a declared Upload-Length over the limit', async () => {
      const before = await snapshot(h(), id, alice.token);
      const res = await rawRequest(h().url, 'PUT', `/${id}/file`, { ...headers(), 'upload-length': String(MAX + 1) }, [
        noise(10),
      ]);
      expect(res.status).toBe(400);
      await expectUnchanged(before);
    });

    it('stops a chunked body as soon as it passes the limit, without waiting for its end', async () => {
      const before = await snapshot(h(), id, alice.token);
      const res = await new Promise<{ status: number; body: string; connection?: string }>((resolve, reject) => {
        const req = http.request(`${h().url}/${id}/file`, { method: 'PUT', headers: headers() }, (r) => {
          let body = '';
          r.on('data', (c) => (body += c));
          r.on('end', () => resolve({ status: r.statusCode!, body, connection: r.headers.connection }));
        });
        req.on('error', reject);
        // 1200 bytes in three chunks, and then the body never ends.
        for (let i = 0; i < 3; i++) req.write(noise(400, i + 1));
      });
      expect(res.status).toBe(400);
      expect(res.connection).toBe('close');
      expect(JSON.parse(res.body).detail).toMatch(/larger than the maximum/);
      await expectUnchanged(before);
    });

    it('checks a chunked body against its Upload-Length', async () => {
      const before = await snapshot(h(), id, alice.token);
      const longer = await rawRequest(h().url, 'PUT', `/${id}/file`, { ...headers(), 'upload-length': '10' }, [
        noise(6),
        noise(6),
      ]);
      expect(longer.status).toBe(400);
      expect(JSON.parse(longer.body.toString()).detail).toMatch(/longer than the 10 bytes announced/);
      const shorter = await rawRequest(h().url, 'PUT', `/${id}/file`, { ...headers(), 'upload-length': '10' }, [
        noise(6),
      ]);
      expect(shorter.status).toBe(400);
      expect(JSON.parse(shorter.body.toString()).detail).toMatch(/has 6 bytes, but 10 were announced/);
      await expectUnchanged(before);
      const exact = await rawRequest(h().url, 'PUT', `/${id}/file`, { ...headers(), 'upload-length': '10' }, [
        noise(4),
        noise(6),
      ]);
      expect(exact.status).toBe(201);
    });
  },
  {
    settings: { file: { maxFileSizeInBytes: MAX, uploadMaxChunkSizeInBytes: MAX, uploadMinChunkSizeInBytes: 100 } },
    blobs: true,
  },
);
