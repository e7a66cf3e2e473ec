// The rules a PATCH is held to (spec "PATCH /upload/<upload_id>", "Limits"; DESIGN.md "Collections and files,
// exact"): offsets, chunk sizes, the total, the chunk count, digests, media type, expiry and access. Each refusal
// is the exact problem, carries the upload's current offset, and changes nothing that it should not.

import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { noise, rawRequest, reprDigest, sha256 } from '../files/fixtures.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { append, blobOf, head, limitsOf, startUpload, uploadRow } from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const KiB = 1024;
const settings = {
  file: {
    maxFileSizeInBytes: 200 * KiB,
    uploadMinChunkSizeInBytes: 1 * KiB,
    uploadMaxChunkSizeInBytes: 64 * KiB,
    uploadChunkDigitsLength: 1, // at most 10 chunks
    uploadExpiresInSecondsAfterFirstRequest: 3600,
    expiredUploadCanBeDeletedAfterExpirationInSeconds: 600,
  },
};

const badContent = expect.stringMatching(/\/error\/400\/bad-content$/);

describeBackends(
  'resumable uploads: rules',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@rules.dev');
    });

    /** An upload holding `size` bytes of noise (seed 5). */
    async function uploadWith(size: number, headers: Record<string, string> = {}) {
      const id = await createElement(h(), alice.token, { type: 'Doc' });
      const data = noise(size, 5);
      const started = await startUpload(h(), alice.token, id, { body: data, headers });
      expect(started.res.status).toBe(204);
      return { elementId: id, data, ...started };
    }

    /** Asserts a 400 bad-content that left the upload at `offset`, with nothing extra stored. */
    async function expectRefused(
      res: Awaited<ReturnType<typeof append>>,
      uploadId: string,
      path: string,
      offset: number,
      stored: Buffer,
    ) {
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ status: 400, type: badContent });
      expect(res.headers.get('upload-offset')).toBe(String(offset));
      expect(res.headers.get('upload-complete')).toBe('?0');
      expect(res.headers.has('upload-limit')).toBe(true);
      expect((await head(h(), alice.token, path)).headers.get('upload-offset')).toBe(String(offset));
      expect((await uploadRow(h(), uploadId))!.offset).toBe(offset);
      expect((await blobOf(h(), uploadId))!.equals(stored)).toBe(true);
    }

    describe('offsets', () => {
      it('a wrong Upload-Offset: 409 conflict with expected-offset, provided-offset and the current Upload-Offset', async () => {
        const u = await uploadWith(2 * KiB);
        for (const provided of [0, 2 * KiB + 1, 1]) {
          const res = await append(h(), alice.token, u.path, provided, noise(KiB, 1), false);
          expect(res.status).toBe(409);
          expect(res.json).toEqual({
            type: expect.stringMatching(/\/error\/409\/conflict$/),
            title: 'Conflict',
            status: 409,
            detail: expect.any(String),
            'expected-offset': 2 * KiB,
            'provided-offset': provided,
          });
          expect(res.headers.get('upload-offset')).toBe(String(2 * KiB));
        }
        expect((await blobOf(h(), u.id))!.equals(u.data)).toBe(true);
      });

      it('a missing or malformed Upload-Offset or Upload-Complete: 400', async () => {
        const u = await uploadWith(KiB);
        const send = (headers: Record<string, string>) =>
          h().request('PATCH', u.path, {
            token: alice.token,
            raw: new Uint8Array(noise(KiB, 2)),
            headers: { 'content-type': 'application/partial-upload', ...headers },
          });
        const cases: Record<string, string>[] = [
          { 'upload-complete': '?0' },
          { 'upload-complete': '?0', 'upload-offset': '-1' },
          { 'upload-complete': '?0', 'upload-offset': '1.5' },
          { 'upload-offset': String(KiB) },
          { 'upload-offset': String(KiB), 'upload-complete': '1' },
        ];
        for (const headers of cases) {
          const res = await send(headers);
          expect(res.status).toBe(400);
          expect(res.json.type).toMatch(/bad-content$/);
          expect(res.headers.get('upload-offset')).toBe(String(KiB));
        }
        expect((await uploadRow(h(), u.id))!.offset).toBe(KiB);
      });
    });

    describe('chunk and file sizes', () => {
      it('a non-final chunk below min-append-size: 400; empty and completing small chunks are fine', async () => {
        const u = await uploadWith(KiB);
        await expectRefused(
          await append(h(), alice.token, u.path, KiB, noise(KiB - 1, 3), false),
          u.id,
          u.path,
          KiB,
          u.data,
        );
        expect((await append(h(), alice.token, u.path, KiB, Buffer.alloc(0), false)).status).toBe(204);
        const last = noise(10, 4);
        expect((await append(h(), alice.token, u.path, KiB, last, true)).status).toBe(201);
        const file = await h().request('GET', `/${u.elementId}`, { token: alice.token });
        expect(file.json.file.hash.sha256).toBe(sha256(Buffer.concat([u.data, last])).toString('hex'));
      });

      it('a chunk above max-append-size: 400 and nothing appended, declared or streamed without a length', async () => {
        const u = await uploadWith(KiB);
        await expectRefused(
          await append(h(), alice.token, u.path, KiB, noise(64 * KiB + 1, 3), false),
          u.id,
          u.path,
          KiB,
          u.data,
        );
        // Chunked transfer: the size is only known while streaming; the server stops at the limit and cuts back.
        const chunked = await rawRequest(
          h().url,
          'PATCH',
          u.path,
          {
            authorization: `Bearer ${alice.token}`,
            'content-type': 'application/partial-upload',
            'upload-offset': String(KiB),
            'upload-complete': '?0',
          },
          [noise(32 * KiB, 6), noise(32 * KiB, 7), noise(KiB, 8)],
        );
        expect(chunked.status).toBe(400);
        expect(chunked.headers['upload-offset']).toBe(String(KiB));
        await expectRefused(
          await append(h(), alice.token, u.path, KiB, noise(64 * KiB + 1, 3), true),
          u.id,
          u.path,
          KiB,
          u.data,
        );
        // A chunked non-final body below the minimum is cut back too.
        const small = await rawRequest(
          h().url,
          'PATCH',
          u.path,
          {
            authorization: `Bearer ${alice.token}`,
            'content-type': 'application/partial-upload',
            'upload-offset': String(KiB),
            'upload-complete': '?0',
          },
          [noise(100, 6)],
        );
        expect(small.status).toBe(400);
        expect((await blobOf(h(), u.id))!.equals(u.data)).toBe(true);
      });

      it('a non-final chunk past max-size or the declared Upload-Length: 400 and nothing appended', async () => {
        const big = await uploadWith(60 * KiB);
        const full = Buffer.concat([big.data, noise(60 * KiB, 9), noise(60 * KiB, 10)]);
        expect(
          (await append(h(), alice.token, big.path, 60 * KiB, full.subarray(60 * KiB, 120 * KiB), false)).status,
        ).toBe(204);
        expect((await append(h(), alice.token, big.path, 120 * KiB, full.subarray(120 * KiB), false)).status).toBe(204);
        await expectRefused(
          await append(h(), alice.token, big.path, 180 * KiB, noise(21 * KiB, 11), false),
          big.id,
          big.path,
          180 * KiB,
          full,
        );

        const declared = await uploadWith(KiB, { 'upload-length': String(3 * KiB) });
        await expectRefused(
          await append(h(), alice.token, declared.path, KiB, noise(2 * KiB + 1, 12), false),
          declared.id,
          declared.path,
          KiB,
          declared.data,
        );
        const fixed = await append(h(), alice.token, declared.path, KiB, noise(KiB, 12), false, {
          'upload-length': String(5 * KiB),
        });
        await expectRefused(fixed, declared.id, declared.path, KiB, declared.data);
      });

      it('an Upload-Length first announced on an append is kept from then on (the draft allows it on any request)', async () => {
        const later = await uploadWith(KiB);
        expect((await head(h(), alice.token, later.path)).headers.has('upload-length')).toBe(false);
        const announced = await append(h(), alice.token, later.path, KiB, noise(KiB, 13), false, {
          'upload-length': String(4 * KiB),
        });
        expect(announced.status).toBe(204);
        expect((await head(h(), alice.token, later.path)).headers.get('upload-length')).toBe(String(4 * KiB));
        expect(await uploadRow(h(), later.id)).toMatchObject({ length: 4 * KiB, offset: 2 * KiB });
        // Another length is refused, and so is a completion short of the one announced.
        const changed = await append(h(), alice.token, later.path, 2 * KiB, noise(KiB, 14), false, {
          'upload-length': String(9 * KiB),
        });
        expect(changed.status).toBe(400);
        expect(changed.headers.get('upload-offset')).toBe(String(2 * KiB));
        const short = await append(h(), alice.token, later.path, 2 * KiB, noise(KiB, 14), true);
        expect(short.status).toBe(400);
        expect(short.json.detail).toMatch(/Upload-Length is 4096/);
      });

      it('a completion whose total breaks max-size or the declared length: 400, nothing appended, the chunks kept', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const before = await h().request('POST', `/${id}/file`, {
          token: alice.token,
          raw: new Uint8Array(Buffer.from('kept')),
          headers: { 'upload-complete': '?1' },
        });
        expect(before.status).toBe(201);
        const data = noise(2 * KiB, 13);
        const { path, id: uploadId } = await startUpload(h(), alice.token, id, {
          method: 'PUT',
          body: data.subarray(0, KiB),
          headers: { 'upload-length': String(2 * KiB) },
        });
        const short = await append(h(), alice.token, path, KiB, data.subarray(KiB, KiB + 10), true);
        expect(short.status).toBe(400);
        expect(short.json.type).toMatch(/bad-content$/);
        expect(short.headers.get('upload-offset')).toBe(String(KiB));
        expect(short.headers.get('upload-complete')).toBe('?0');
        expect((await head(h(), alice.token, path)).headers.get('upload-offset')).toBe(String(KiB));
        expect(await uploadRow(h(), uploadId)).toMatchObject({ offset: KiB, chunks: 1 });
        expect((await blobOf(h(), uploadId))!.equals(data.subarray(0, KiB))).toBe(true);
        const file = await fetch(`${h().url}/${id}/file`, { headers: { authorization: `Bearer ${alice.token}` } });
        expect(await file.text()).toBe('kept');

        // The rest sent from the offset completes it.
        const done = await append(h(), alice.token, path, KiB, data.subarray(KiB), true);
        expect(done.status).toBe(201);
        expect(
          Buffer.from(
            await (
              await fetch(`${h().url}/${id}/file`, { headers: { authorization: `Bearer ${alice.token}` } })
            ).arrayBuffer(),
          ).equals(data),
        ).toBe(true);

        const over = await uploadWith(60 * KiB);
        const stored = Buffer.concat([over.data, noise(60 * KiB, 14), noise(60 * KiB, 15)]);
        expect(
          (await append(h(), alice.token, over.path, 60 * KiB, stored.subarray(60 * KiB, 120 * KiB), false)).status,
        ).toBe(204);
        expect((await append(h(), alice.token, over.path, 120 * KiB, stored.subarray(120 * KiB), false)).status).toBe(
          204,
        );
        await expectRefused(
          await append(h(), alice.token, over.path, 180 * KiB, noise(21 * KiB, 16), true),
          over.id,
          over.path,
          180 * KiB,
          stored,
        );
        // Completed with an empty request at the offset, within max-size.
        expect((await append(h(), alice.token, over.path, 180 * KiB, Buffer.alloc(0), true)).status).toBe(201);
      });

      it(`at most 10^uploadChunkDigitsLength chunks; an empty completion still works`, async () => {
        const u = await uploadWith(KiB); // chunk 1
        let offset = KiB;
        for (let i = 2; i <= 10; i++) {
          const res = await append(h(), alice.token, u.path, offset, noise(KiB, i), false);
          expect(res.status).toBe(204);
          offset += KiB;
        }
        expect((await uploadRow(h(), u.id))!.chunks).toBe(10);
        const stored = (await blobOf(h(), u.id))!;
        await expectRefused(
          await append(h(), alice.token, u.path, offset, noise(KiB, 11), false),
          u.id,
          u.path,
          offset,
          stored,
        );
        await expectRefused(
          await append(h(), alice.token, u.path, offset, noise(10, 11), true),
          u.id,
          u.path,
          offset,
          stored,
        );
        expect((await append(h(), alice.token, u.path, offset, Buffer.alloc(0), true)).status).toBe(201);
      });
    });

    describe('digests', () => {
      it('a completing digest that does not match: 400, nothing merged, the chunks discarded, offset 0', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const data = noise(3 * KiB, 17);
        const { path, id: uploadId } = await startUpload(h(), alice.token, id, { body: data.subarray(0, 2 * KiB) });
        const res = await append(h(), alice.token, path, 2 * KiB, data.subarray(2 * KiB), true, {
          'repr-digest': reprDigest(Buffer.from('something else')),
        });
        expect(res.status).toBe(400);
        expect(res.json.type).toMatch(/bad-content$/);
        expect(res.headers.get('upload-offset')).toBe('0');
        expect((await head(h(), alice.token, path)).headers.get('upload-offset')).toBe('0');
        expect(await blobOf(h(), uploadId)).toBeNull();
        expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data.hasFile).toBeUndefined();
        // Content-Digest is accepted as the fallback name; sent again with the right digest it completes.
        expect((await append(h(), alice.token, path, 0, data.subarray(0, 2 * KiB), false)).status).toBe(204);
        const ok = await append(h(), alice.token, path, 2 * KiB, data.subarray(2 * KiB), true, {
          'content-digest': reprDigest(data),
        });
        expect(ok.status).toBe(201);
      });

      it('a Repr-Digest sent when the upload started is checked when it completes', async () => {
        const data = noise(2 * KiB, 18);
        const wrong = await uploadWith(KiB, { 'repr-digest': reprDigest(Buffer.from('not it')) });
        const res = await append(h(), alice.token, wrong.path, KiB, noise(KiB, 19), true);
        expect(res.status).toBe(400);
        expect(res.headers.get('upload-offset')).toBe('0');

        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const { path } = await startUpload(h(), alice.token, id, {
          body: data.subarray(0, KiB),
          headers: { 'repr-digest': reprDigest(data) },
        });
        expect((await append(h(), alice.token, path, KiB, data.subarray(KiB), true)).status).toBe(201);
      });

      it('an unsupported algorithm on the completing PATCH: 400 and the upload is unchanged', async () => {
        const u = await uploadWith(KiB);
        await expectRefused(
          await append(h(), alice.token, u.path, KiB, noise(10, 1), true, { 'repr-digest': 'sha-512=:AAAA:' }),
          u.id,
          u.path,
          KiB,
          u.data,
        );
      });
    });

    describe('media type', () => {
      it('requires application/partial-upload, except from clients of draft interop 3 to 5 sending none', async () => {
        const u = await uploadWith(KiB);
        const send = (headers: Record<string, string>) =>
          h().request('PATCH', u.path, {
            token: alice.token,
            raw: new Uint8Array(noise(KiB, 20)),
            headers: { 'upload-offset': String(KiB), 'upload-complete': '?0', ...headers },
          });
        await expectRefused(await send({}), u.id, u.path, KiB, u.data);
        await expectRefused(
          await send({ 'content-type': 'application/offset+octet-stream' }),
          u.id,
          u.path,
          KiB,
          u.data,
        );
        await expectRefused(await send({ 'upload-draft-interop-version': '6' }), u.id, u.path, KiB, u.data);
        expect((await send({ 'upload-draft-interop-version': '5' })).status).toBe(204);
        const withParams = await h().request('PATCH', u.path, {
          token: alice.token,
          raw: new Uint8Array(noise(KiB, 21)),
          headers: {
            'upload-offset': String(2 * KiB),
            'upload-complete': '?0',
            'content-type': 'Application/Partial-Upload; x=y',
          },
        });
        expect(withParams.status).toBe(204);
      });

      it('speaks draft interop 3: Upload-Incomplete instead of Upload-Complete', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const data = noise(KiB + 5, 22);
        const start = await h().request('POST', `/${id}/file`, {
          token: alice.token,
          raw: new Uint8Array(data.subarray(0, KiB)),
          headers: { 'upload-draft-interop-version': '3', 'upload-incomplete': '?1' },
        });
        expect(start.status).toBe(204);
        expect(start.headers.get('upload-incomplete')).toBe('?1');
        const path = start.headers.get('location')!;
        const probe = await h().request('HEAD', path, {
          token: alice.token,
          headers: { 'upload-draft-interop-version': '3' },
        });
        expect(probe.headers.get('upload-incomplete')).toBe('?1');
        // An append without Upload-Incomplete is the last one in draft-01.
        const done = await h().request('PATCH', path, {
          token: alice.token,
          raw: new Uint8Array(data.subarray(KiB)),
          headers: { 'upload-draft-interop-version': '3', 'upload-offset': String(KiB) },
        });
        expect(done.status).toBe(201);
        expect(done.headers.get('upload-incomplete')).toBe('?0');
        expect((await h().request('GET', `/${id}`, { token: alice.token })).json.file.hash.sha256).toBe(
          sha256(data).toString('hex'),
        );
      });
    });

    describe('expiry', () => {
      it('max-age counts down, PATCH and HEAD answer 410 after expiry, and appends never extend it', async () => {
        const u = await uploadWith(KiB);
        const expires = (await uploadRow(h(), u.id))!.expires.getTime();
        h().clock.advance(1000);
        const later = await head(h(), alice.token, u.path);
        expect(limitsOf(later)['max-age']).toBeLessThanOrEqual(2600);
        expect(limitsOf(later)['max-age']).toBeGreaterThan(2590);
        expect((await append(h(), alice.token, u.path, KiB, noise(KiB, 23), false)).status).toBe(204);
        expect((await uploadRow(h(), u.id))!.expires.getTime()).toBe(expires);
        h().clock.advance(2600);
        const gone = await append(h(), alice.token, u.path, 2 * KiB, noise(KiB, 24), false);
        expect(gone.status).toBe(410);
        expect(gone.json).toMatchObject({ status: 410, type: expect.stringMatching(/\/error\/410\/gone$/) });
        expect((await head(h(), alice.token, u.path)).status).toBe(410);
        expect((await uploadRow(h(), u.id))!.offset).toBe(2 * KiB);
        // The creator may still cancel it.
        expect((await h().request('DELETE', u.path, { token: alice.token })).status).toBe(204);
      });
    });

    describe('access', () => {
      it("another user's upload is not there: 404 for HEAD, PATCH and DELETE, and it stays untouched", async () => {
        const u = await uploadWith(KiB);
        const eve = await userWithToken(h(), 'eve@rules.dev');
        expect((await head(h(), eve.token, u.path)).status).toBe(404);
        const patch = await append(h(), eve.token, u.path, KiB, noise(KiB, 25), false);
        expect(patch.status).toBe(404);
        expect(patch.json.type).toMatch(/\/error\/404\/not-found$/);
        expect((await h().request('DELETE', u.path, { token: eve.token })).status).toBe(404);
        expect((await head(h(), alice.token, u.path)).headers.get('upload-offset')).toBe(String(KiB));
        expect((await blobOf(h(), u.id))!.equals(u.data)).toBe(true);
        expect((await h().request('HEAD', u.path)).status).toBe(401);
      });

      it('a creator who lost UPDATE on the target: the upload is cancelled at the next request', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const bob = await userWithToken(h(), 'bob@rules.dev');
        const grant = await h().request('POST', '/', {
          token: alice.token,
          body: { type: 'HAS_UPDATE_ACCESS', start: bob.id, end: id },
        });
        expect(grant.status).toBe(201);
        const { res, path, id: uploadId } = await startUpload(h(), bob.token, id, { body: noise(KiB, 26) });
        expect(res.status).toBe(204);
        expect((await head(h(), bob.token, path)).status).toBe(204);
        expect((await h().request('DELETE', grant.headers.get('location')!, { token: alice.token })).status).toBe(204);
        const patch = await append(h(), bob.token, path, KiB, noise(KiB, 27), false);
        expect(patch.status).toBe(404);
        expect(await uploadRow(h(), uploadId)).toBeNull();
        expect(await blobOf(h(), uploadId)).toBeNull();
      });

      it('an upload whose target was deleted is gone, row and bytes', async () => {
        const u = await uploadWith(KiB);
        expect((await h().request('DELETE', `/${u.elementId}`, { token: alice.token })).status).toBe(204);
        expect((await head(h(), alice.token, u.path)).status).toBe(404);
        expect(await uploadRow(h(), u.id)).toBeNull();
        expect(await blobOf(h(), u.id)).toBeNull();
      });

      it('an upload whose bytes were lost is deactivated: 410', async () => {
        const u = await uploadWith(KiB);
        await h().services.blobs.delete(u.id);
        expect((await append(h(), alice.token, u.path, KiB, noise(KiB, 28), false)).status).toBe(410);
        expect(await uploadRow(h(), u.id)).toBeNull();
      });
    });

    it('a PATCH refused before its body was read closes the connection instead of reading the body', async () => {
      const u = await uploadWith(KiB);
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          `${h().url}${u.path}`,
          {
            method: 'PATCH',
            headers: {
              authorization: `Bearer ${alice.token}`,
              'content-type': 'application/partial-upload',
              'upload-offset': '0',
              'upload-complete': '?0',
              'content-length': String(60 * KiB),
            },
          },
          (res) => {
            expect(res.headers.connection).toBe('close');
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.write(noise(KiB, 29)); // the rest never comes
      });
      expect(status).toBe(409);
    });
  },
  { settings, blobs: true },
);
