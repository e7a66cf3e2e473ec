// Slow clients (issue 30 item 4), on both blob stores: a request body that stalls or crawls is cut off (an append
// keeps what arrived, a direct upload keeps nothing), one that moves steadily is not; uploads beyond
// file.maxConcurrentUploads get 503 with Retry-After before their body is read (the connections cap is in
// test/http/connections.test.ts).
import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { PART_BYTES } from '../../src/blob/s3-blob-store.js';
import { noise, sha256 } from '../files/fixtures.js';
import { storedNames, temporaryBlobs } from '../helpers/blobs.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { append, blobOf, head, leftovers, partialRequest, startUpload, uploadRow, waitFor } from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const KiB = 1024;
const MiB = 1024 * KiB;
const file = {
  maxFileSizeInBytes: 32 * MiB,
  uploadMinChunkSizeInBytes: KiB,
  uploadMaxChunkSizeInBytes: MiB,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends `data` in `piece`-byte writes every `everyMs`, then ends; resolves with the status (null: connection cut). */
function paced(
  h: Harness,
  method: string,
  path: string,
  headers: Record<string, string>,
  data: Buffer,
  piece: number,
  everyMs: number,
) {
  return new Promise<number | null>((resolve) => {
    const req = http.request(`${h.url}${path}`, {
      method,
      headers: { ...headers, 'content-length': String(data.length) },
    });
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    req.on('response', (res) => {
      res.resume();
      clearInterval(timer);
      resolve(res.statusCode ?? null);
    });
    req.on('error', () => {
      clearInterval(timer);
      resolve(null);
    });
    timer = setInterval(() => {
      if (req.destroyed) return clearInterval(timer);
      req.write(data.subarray(sent, sent + piece));
      sent += piece;
      if (sent >= data.length) {
        clearInterval(timer);
        req.end();
      }
    }, everyMs);
  });
}

describeBackends(
  'slow request bodies',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@slow.dev');
    });
    const auth = () => ({ authorization: `Bearer ${alice.token}` });
    const patchHeaders = (offset: number, complete = false) => ({
      ...auth(),
      'content-type': 'application/partial-upload',
      'upload-offset': String(offset),
      'upload-complete': complete ? '?1' : '?0',
    });

    it('a stalled append is cut after the idle timeout; the bytes that arrived are kept and HEAD reports them', async () => {
      const data = noise(200 * KiB, 71);
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      const { path, id } = await startUpload(h(), alice.token, elementId, { body: data.subarray(0, KiB) });
      const sent = data.subarray(KiB, 41 * KiB);
      const stalled = await partialRequest(h(), 'PATCH', path, patchHeaders(KiB), 199 * KiB, sent);
      const began = Date.now();
      await Promise.race([stalled.closed, sleep(8000)]);
      expect(stalled.req.destroyed, 'the server closed the stalled request').toBe(true);
      expect(Date.now() - began).toBeLessThan(8000);
      expect([408, null]).toContain(await stalled.response);
      await waitFor('the lease to be released', async () => (await uploadRow(h(), id))?.lease_token === null);
      const probe = await head(h(), alice.token, path);
      // The server had read all that was sent long before it cut the request: every byte of it is kept.
      expect(probe.headers.get('upload-offset')).toBe(String(41 * KiB));
      expect((await blobOf(h(), id))!.equals(data.subarray(0, 41 * KiB))).toBe(true);
      const done = await append(h(), alice.token, path, 41 * KiB, data.subarray(41 * KiB), true);
      expect(done.status).toBe(201);
      const element = await h().request('GET', `/${elementId}`, { token: alice.token });
      expect(element.json.file.hash.sha256).toBe(sha256(data).toString('hex'));
      expect(await leftovers(h(), id, elementId)).toEqual([]);
    });

    it('a stalled direct upload is cut after the idle timeout and leaves no file and no temporary blob', async () => {
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      const headers = { ...auth(), 'upload-complete': '?1' };
      // More than one part of the object store, so that there the upload is under way in the bucket (a multipart
      // upload) when it is cut, as a temporary file is on disk.
      const stalled = await partialRequest(
        h(),
        'PUT',
        `/${elementId}/file`,
        headers,
        2 * PART_BYTES,
        noise(PART_BYTES + 64 * KiB, 72),
        async () => (await temporaryBlobs(h())).length > 0,
      );
      await Promise.race([stalled.closed, sleep(8000)]);
      expect(stalled.req.destroyed, 'the server closed the stalled request').toBe(true);
      await waitFor('the temporary blob to go', async () => (await temporaryBlobs(h())).length === 0);
      const element = await h().request('GET', `/${elementId}`, { token: alice.token });
      expect(element.json.file).toBeUndefined();
      expect((await h().request('GET', `/${elementId}/file`, { token: alice.token })).status).toBe(404);
      expect(await storedNames(h(), elementId)).toEqual([]);
    });

    it('a body that never stalls but crawls below the minimum rate is cut; an append keeps what arrived', async () => {
      const data = noise(64 * KiB, 73);
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      const { path, id } = await startUpload(h(), alice.token, elementId, { body: data.subarray(0, KiB) });
      // 128 bytes every 200 ms: 640 B/s, never idle for the timeout (1 s), below the minimum (1024 B/s).
      const began = Date.now();
      const status = await paced(h(), 'PATCH', path, patchHeaders(KiB), data.subarray(KiB), 128, 200);
      expect([408, null]).toContain(status);
      expect(Date.now() - began).toBeLessThan(15_000);
      await waitFor('the lease to be released', async () => (await uploadRow(h(), id))?.lease_token === null);
      const offset = Number((await head(h(), alice.token, path)).headers.get('upload-offset'));
      expect(offset).toBeGreaterThan(KiB);
      expect((await blobOf(h(), id))!.equals(data.subarray(0, offset))).toBe(true);
    });

    it('an upload that moves steadily above the minimum rate is not cut, however long it takes', async () => {
      const data = noise(48 * KiB, 74);
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      // 2 KiB every 100 ms: 20 KiB/s for about 2.4 s, longer than the idle timeout and the rate window.
      const status = await paced(
        h(),
        'PUT',
        `/${elementId}/file`,
        { ...auth(), 'upload-complete': '?1' },
        data,
        2 * KiB,
        100,
      );
      expect(status).toBe(201);
      const element = await h().request('GET', `/${elementId}`, { token: alice.token });
      expect(element.json.file.hash.sha256).toBe(sha256(data).toString('hex'));
    });
  },
  {
    settings: {
      file,
      server: { bodyIdleTimeoutInSeconds: 1, bodyMinBytesPerSecond: 1024, bodyRateWindowInSeconds: 2 },
    },
    blobs: true,
  },
);

describeBackends(
  'the concurrent uploads cap',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@cap.dev');
    });

    it('uploads beyond file.maxConcurrentUploads get 503 with Retry-After before the body is read; once one ends the next succeeds', async () => {
      const data = noise(16 * KiB, 75);
      const [a, b, c] = [
        await createElement(h(), alice.token, { type: 'Doc' }),
        await createElement(h(), alice.token, { type: 'Doc' }),
        await createElement(h(), alice.token, { type: 'Doc' }),
      ];
      const { path, id } = await startUpload(h(), alice.token, c, { body: data.subarray(0, KiB) });
      const headers = { authorization: `Bearer ${alice.token}`, 'upload-complete': '?1' };
      const slots = () => h().services.files.uploadSlots.inUse;
      const first = await partialRequest(
        h(),
        'PUT',
        `/${a}/file`,
        headers,
        100 * KiB,
        data.subarray(0, KiB),
        () => slots() === 1,
      );
      const second = await partialRequest(
        h(),
        'PUT',
        `/${b}/file`,
        headers,
        100 * KiB,
        data.subarray(0, KiB),
        () => slots() === 2,
      );

      // The two uploads under way have their temporary blobs by now: on disk each its file in files/tmp, while in
      // the bucket a body shorter than one part stays in memory until it ends.
      const underWay = h().blobStore === 'disk' ? 2 : 0;
      await waitFor('the uploads under way', async () => (await temporaryBlobs(h())).length === underWay);
      const temporary = await temporaryBlobs(h());
      const refused = await h().request('PUT', `/${c}/file`, {
        token: alice.token,
        raw: new Uint8Array(data),
        headers: { 'upload-complete': '?1' },
      });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
      expect(refused.json).toMatchObject({ type: `${h().url}/error/503/service-unavailable`, status: 503 });
      expect(await temporaryBlobs(h())).toEqual(temporary);
      const refusedAppend = await append(h(), alice.token, path, KiB, data.subarray(KiB), true);
      expect(refusedAppend.status).toBe(503);
      expect(refusedAppend.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
      expect((await uploadRow(h(), id))!.offset).toBe(KiB);
      expect((await h().request('GET', '/error/503/service-unavailable')).status).toBe(200);

      first.req.destroy();
      await first.closed;
      await waitFor('a slot to be free', () => slots() < 2);
      const done = await append(h(), alice.token, path, KiB, data.subarray(KiB), true);
      expect(done.status).toBe(201);
      second.req.destroy();
      await second.closed;
      await waitFor('every slot to be free', () => slots() === 0);
    });
  },
  { settings: { file: { ...file, maxConcurrentUploads: 2 } }, blobs: true },
);

describe('settings', () => {
  it('are validated', async () => {
    const { validateSettings } = await import('../../src/config/load.js');
    expect(() => validateSettings({ server: { maxConnections: 0 } })).toThrow(/server\.maxConnections/);
    expect(() => validateSettings({ file: { maxConcurrentUploads: 0 } })).toThrow(/file\.maxConcurrentUploads/);
    expect(validateSettings({ server: { bodyMinBytesPerSecond: 0 } }).server.bodyMinBytesPerSecond).toBe(0);
  });
});
