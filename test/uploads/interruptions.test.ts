// Interrupted and concurrent requests to one upload (issue: "an interrupted PATCH keeps what arrived", "two
// PATCHes to one upload at once never corrupt it", "a lock held by a dead connection must not block the upload
// forever"), on both blob stores. The offset HEAD reports is always what is durably stored and always accepted by the
// next PATCH; bytes still arriving are never counted; once an upload completed or was removed the store keeps nothing
// of it.
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { PART_BYTES } from '../../src/blob/s3-blob-store.js';
import { parseElementId } from '../../src/values.js';
import { noise, sha256 } from '../files/fixtures.js';
import { appendInStore, storedNames } from '../helpers/blobs.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import {
  anotherInstance,
  append,
  blobOf,
  head,
  leftovers,
  partialRequest,
  startUpload,
  uploadRow,
  waitFor,
} from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const KiB = 1024;
const MiB = 1024 * KiB;
const settings = {
  file: {
    maxFileSizeInBytes: 32 * MiB,
    uploadMinChunkSizeInBytes: KiB,
    // Room for an append longer than one part of the object store (a multipart upload there).
    uploadMaxChunkSizeInBytes: 16 * MiB,
  },
};

describeBackends(
  'resumable uploads: interruptions and concurrency',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@interrupt.dev');
    });

    const auth = () => ({ authorization: `Bearer ${alice.token}` });
    const patchHeaders = (offset: number, complete = false) => ({
      ...auth(),
      'content-type': 'application/partial-upload',
      'upload-offset': String(offset),
      'upload-complete': complete ? '?1' : '?0',
    });

    /** An upload of `data` (its first KiB already stored). */
    async function begin(data: Buffer) {
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      const started = await startUpload(h(), alice.token, elementId, { body: data.subarray(0, KiB) });
      expect(started.res.status).toBe(204);
      return { elementId, ...started };
    }

    /**
     * Finishes an upload from wherever HEAD says it is, after checking that the store holds exactly the bytes that
     * offset counts; then checks the element's file is exactly `data` and that nothing of the upload is left.
     */
    async function finishAndCheck(path: string, elementId: string, data: Buffer) {
      // Once the server is done with the cut-off request (its lease is released): until then it may still be writing
      // bytes past the offset HEAD reports and commit them, and a PATCH at that offset would rightly get 409.
      const id = path.slice('/upload/'.length);
      await waitFor('the lease to be released', async () => (await uploadRow(h(), id))?.lease_token === null);
      const probe = await head(h(), alice.token, path);
      expect(probe.status).toBe(204);
      const offset = Number(probe.headers.get('upload-offset'));
      expect((await blobOf(h(), id))!.equals(data.subarray(0, offset))).toBe(true);
      const done = await append(h(), alice.token, path, offset, data.subarray(offset), true);
      expect(done.status).toBe(201);
      const element = await h().request('GET', `/${elementId}`, { token: alice.token });
      expect(element.json.file.hash.sha256).toBe(sha256(data).toString('hex'));
      const download = await fetch(`${h().url}/${elementId}/file`, { headers: auth() });
      expect(sha256(Buffer.from(await download.arrayBuffer())).equals(sha256(data))).toBe(true);
      expect(await leftovers(h(), id, elementId)).toEqual([]);
      return offset;
    }

    describe('a client that goes away', () => {
      it('an interrupted PATCH keeps the bytes that arrived; HEAD reports them and the next PATCH goes on from there', async () => {
        const data = noise(600 * KiB, 31);
        const { path, id, elementId } = await begin(data);
        const sent = data.subarray(KiB, KiB + 300 * KiB);
        const cut = await partialRequest(h(), 'PATCH', path, patchHeaders(KiB), 599 * KiB, sent);
        expect((await uploadRow(h(), id))!.offset).toBe(KiB);
        cut.req.destroy();
        await cut.closed;
        const offset = await finishAndCheck(path, elementId, data);
        expect(offset).toBeGreaterThan(KiB);
        expect(offset).toBeLessThanOrEqual(KiB + 300 * KiB);
      });

      it('an append cut off once part of it is in the store keeps all that arrived; until then no instance counts it', async () => {
        // Longer than one part of the object store: there the append is a multipart upload with a part stored.
        const data = noise(PART_BYTES + 4 * MiB, 40);
        const { path, id, elementId } = await begin(data);
        const sent = data.subarray(KiB, KiB + PART_BYTES + MiB);
        const cut = await partialRequest(h(), 'PATCH', path, patchHeaders(KiB), data.length - KiB, sent, () =>
          appendInStore(h(), id, KiB),
        );
        // An instance with no request of its own to end answers with the committed offset, not the bytes in flight.
        const seen = await anotherInstance(h()).state({ userId: alice.id, tokenId: null }, parseElementId(id)!);
        expect(seen.offset).toBe(KiB);
        cut.req.destroy();
        await cut.closed;
        const offset = await finishAndCheck(path, elementId, data);
        expect(offset).toBeGreaterThan(KiB + PART_BYTES);
        expect(offset).toBeLessThanOrEqual(KiB + sent.length);
      });

      it('an interrupted completing PATCH does not complete the upload', async () => {
        const data = noise(500 * KiB, 32);
        const { path, elementId } = await begin(data);
        const cut = await partialRequest(
          h(),
          'PATCH',
          path,
          patchHeaders(KiB, true),
          499 * KiB,
          data.subarray(KiB, 200 * KiB),
        );
        cut.req.destroy();
        await cut.closed;
        const probe = await head(h(), alice.token, path);
        expect(probe.status).toBe(204);
        expect(probe.headers.get('upload-complete')).toBe('?0');
        expect((await h().request('GET', `/${elementId}`, { token: alice.token })).json.data.hasFile).toBeUndefined();
        expect(await storedNames(h(), elementId)).toEqual([]);
        await finishAndCheck(path, elementId, data);
      });

      it('a creating request cut off: kept for a client that was told where the upload is (104), removed otherwise', async () => {
        const data = noise(400 * KiB, 33);
        const elementId = await createElement(h(), alice.token, { type: 'Doc' });
        const uploadsOf = async () =>
          (await h().db.query<{ id: string }>('SELECT id FROM uploads WHERE element_id = $1', [elementId])).rows;
        const start = (interop: Record<string, string>) => ({ ...auth(), 'upload-complete': '?0', ...interop });

        // Cut off once the server has created the upload and taken part of its first chunk.
        let uploadId = '';
        const anonymous = await partialRequest(
          h(),
          'POST',
          `/${elementId}/file`,
          start({}),
          400 * KiB,
          data.subarray(0, 100 * KiB),
          async () => {
            uploadId = (await uploadsOf())[0]?.id ?? '';
            return uploadId !== '';
          },
        );
        anonymous.req.destroy();
        await anonymous.closed;
        // The row goes first, then the bytes (looked for by name: reading them could race with their removal).
        await waitFor(
          'the upload to be removed',
          async () => (await uploadsOf()).length === 0 && (await storedNames(h(), uploadId)).length === 0,
        );
        expect(await blobOf(h(), uploadId)).toBeNull();
        expect(await leftovers(h(), uploadId, elementId)).toEqual([]);

        const told = await partialRequest(
          h(),
          'POST',
          `/${elementId}/file`,
          start({ 'upload-draft-interop-version': '6' }),
          400 * KiB,
          data.subarray(0, 100 * KiB),
        );
        const location = String((await told.interim).headers.location);
        told.req.destroy();
        await told.closed;
        const offset = await finishAndCheck(location, elementId, data);
        expect(offset).toBeGreaterThan(0);
      });
    });

    describe('concurrent requests', () => {
      it('a new PATCH ends the one still running (its bytes kept); it then gets 409 with the offset to use', async () => {
        const data = noise(700 * KiB, 34);
        const { path, id, elementId } = await begin(data);
        const stalled = await partialRequest(
          h(),
          'PATCH',
          path,
          patchHeaders(KiB),
          699 * KiB,
          data.subarray(KiB, 200 * KiB),
        );
        // The client gave up on the stalled request and sends the same range again.
        const second = await append(h(), alice.token, path, KiB, data.subarray(KiB, 600 * KiB), false);
        await stalled.closed; // the server closed the older request's connection
        expect(await stalled.response).toBeNull();
        expect(second.status).toBe(409);
        const kept = Number(second.headers.get('upload-offset'));
        expect(second.json['expected-offset']).toBe(kept);
        expect(second.json['provided-offset']).toBe(KiB);
        expect(kept).toBeGreaterThan(KiB);
        expect((await uploadRow(h(), id))!.offset).toBe(kept);
        await finishAndCheck(path, elementId, data);
      });

      it('HEAD while a PATCH is still running ends it and answers the offset it reached, which the next PATCH accepts', async () => {
        const data = noise(500 * KiB, 35);
        const { path, id, elementId } = await begin(data);
        const stalled = await partialRequest(
          h(),
          'PATCH',
          path,
          patchHeaders(KiB),
          499 * KiB,
          data.subarray(KiB, 150 * KiB),
        );
        const probe = await head(h(), alice.token, path);
        await stalled.closed;
        const offset = Number(probe.headers.get('upload-offset'));
        expect(offset).toBeGreaterThan(KiB);
        expect(offset).toBe((await uploadRow(h(), id))!.offset);
        expect((await blobOf(h(), id))!.equals(data.subarray(0, offset))).toBe(true);
        const next = await append(h(), alice.token, path, offset, data.subarray(offset, offset + 100 * KiB), false);
        expect(next.status).toBe(204);
        await finishAndCheck(path, elementId, data);
      });

      it('DELETE while a PATCH is running ends it and removes the upload', async () => {
        const data = noise(300 * KiB, 36);
        const { path, id, elementId } = await begin(data);
        const stalled = await partialRequest(
          h(),
          'PATCH',
          path,
          patchHeaders(KiB),
          299 * KiB,
          data.subarray(KiB, 100 * KiB),
        );
        expect((await h().request('DELETE', path, { token: alice.token })).status).toBe(204);
        await stalled.closed;
        expect(await uploadRow(h(), id)).toBeNull();
        expect(await blobOf(h(), id)).toBeNull();
        expect(await leftovers(h(), id, elementId)).toEqual([]);
      });

      it('a lease held elsewhere (another instance) gives 409; a lease of a dead instance runs out', async () => {
        const data = noise(3 * KiB, 37);
        const { path, id, elementId } = await begin(data);
        const until = new Date(h().clock.now().getTime() + 60_000);
        await h().db.query('UPDATE uploads SET lease_token = $2, lease_until = $3 WHERE id = $1', [
          id,
          '11111111-2222-4333-8444-555555555555',
          until,
        ]);
        const busy = await append(h(), alice.token, path, KiB, data.subarray(KiB, 2 * KiB), false);
        expect(busy.status).toBe(409);
        expect(busy.json).toMatchObject({ 'expected-offset': KiB, 'provided-offset': KiB });
        expect(busy.headers.get('upload-offset')).toBe(String(KiB));
        expect((await blobOf(h(), id))!.equals(data.subarray(0, KiB))).toBe(true);
        h().clock.advance(61);
        expect((await append(h(), alice.token, path, KiB, data.subarray(KiB, 2 * KiB), false)).status).toBe(204);
        await finishAndCheck(path, elementId, data);
      });

      it('another instance goes on half-way: the completion reads all stored bytes back; the digest is right', async () => {
        const data = noise(300 * KiB, 39);
        const { path, id, elementId } = await begin(data);
        expect((await append(h(), alice.token, path, KiB, data.subarray(KiB, 100 * KiB), false)).status).toBe(204);
        // A second instance on the same database and blob store, with no hash state of its own.
        const result = await anotherInstance(h()).append(
          { userId: alice.id, tokenId: null },
          parseElementId(id)!,
          Readable.from([data.subarray(100 * KiB, 200 * KiB)]),
          { complete: false, offset: 100 * KiB, length: null, contentLength: 100 * KiB, expected: null },
          { abort: () => {} },
        );
        expect(result).toMatchObject({ complete: false, state: { offset: 200 * KiB } });
        await finishAndCheck(path, elementId, data);
      });

      it('many PATCHes at once at the same offset: the upload stays a consistent prefix of the data', async () => {
        const data = noise(400 * KiB, 38);
        const { path, elementId } = await begin(data);
        const results = await Promise.all(
          [0, 1, 2, 3].map(() =>
            fetch(`${h().url}${path}`, {
              method: 'PATCH',
              headers: patchHeaders(KiB),
              body: new Uint8Array(data.subarray(KiB, 300 * KiB)),
            }).then(
              (res) => res.status,
              () => null, // ended by a newer request
            ),
          ),
        );
        expect(results.every((s) => s === null || s === 204 || s === 409 || s === 400)).toBe(true);
        await finishAndCheck(path, elementId, data);
      });
    });
  },
  { settings, blobs: true },
);
