// Resumable uploads from start to completion (spec "Resumable upload" state table, "File and upload endpoints";
// DESIGN.md "Collections and files, exact"): the exact statuses and fields of every step, what is stored after
// each, completion replacing the previous file, parallel uploads to one element, cancellation.
import { beforeAll, describe, expect, it } from 'vitest';
import { noise, reprDigest, sha256, tinyPng } from '../files/fixtures.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { append, blobOf, head, limitsOf, startUpload, uploadRow } from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const KiB = 1024;
const settings = {
  file: {
    maxFileSizeInBytes: 256 * KiB,
    uploadMinChunkSizeInBytes: 16,
    uploadMaxChunkSizeInBytes: 64 * KiB,
    uploadExpiresInSecondsAfterFirstRequest: 3600,
    expiredUploadCanBeDeletedAfterExpirationInSeconds: 600,
  },
};

async function fileOf(h: Harness, token: string, id: string) {
  const element = await h.request('GET', `/${id}`, { token });
  const res = await fetch(`${h.url}/${id}/file`, { headers: { authorization: `Bearer ${token}` } });
  return { element: element.json, status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

describeBackends(
  'resumable uploads: lifecycle',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@uploads.dev');
    });

    describe('start', () => {
      it('POST with Upload-Complete: ?0 and no body: 204, Location, Upload-Limit, offset 0; the row is stored', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const before = h().clock.now().getTime();
        const { res, path, id: uploadId } = await startUpload(h(), alice.token, id);
        expect(res.status).toBe(204);
        expect(res.text).toBe('');
        expect(path).toMatch(/^\/upload\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        expect(limitsOf(res)).toEqual({
          'max-age': 3600,
          'max-size': 256 * KiB,
          'min-append-size': 16,
          'max-append-size': 64 * KiB,
        });
        expect(res.headers.get('upload-offset')).toBe('0');
        expect(res.headers.get('upload-complete')).toBe('?0');
        const row = await uploadRow(h(), uploadId);
        expect(row).toMatchObject({ offset: 0, length: null, chunks: 0, element_id: id });
        expect(row!.expires.getTime() - before).toBeGreaterThanOrEqual(3600 * 1000);
        expect(row!.expires.getTime() - h().clock.now().getTime()).toBeLessThanOrEqual(3600 * 1000);
        // The element is untouched until the upload completes.
        expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data.hasFile).toBeUndefined();
      });

      it('HEAD: 204 with Upload-Offset, Upload-Complete, Upload-Length only when declared, Upload-Limit, Expires, no-store', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const plain = await startUpload(h(), alice.token, id);
        const res = await head(h(), alice.token, plain.path);
        expect(res.status).toBe(204);
        expect(res.headers.get('upload-offset')).toBe('0');
        expect(res.headers.get('upload-complete')).toBe('?0');
        expect(res.headers.has('upload-length')).toBe(false);
        expect(res.headers.get('cache-control')).toBe('no-store');
        const row = await uploadRow(h(), plain.id);
        expect(res.headers.get('expires')).toBe(row!.expires.toUTCString());
        expect(res.headers.get('expires')).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
        expect(limitsOf(res)['max-age']).toBeLessThanOrEqual(3600);

        const declared = await startUpload(h(), alice.token, id, {
          method: 'PUT',
          body: Buffer.from('first chunk'),
          headers: { 'upload-length': '100' },
        });
        expect(declared.res.status).toBe(204);
        expect(declared.res.headers.get('upload-offset')).toBe('11');
        const res2 = await head(h(), alice.token, declared.path);
        expect(res2.headers.get('upload-offset')).toBe('11');
        expect(res2.headers.get('upload-length')).toBe('100');
        expect(await uploadRow(h(), declared.id)).toMatchObject({ offset: 11, length: 100, chunks: 1 });
        expect((await blobOf(h(), declared.id))!.toString()).toBe('first chunk');
      });

      it('refuses bad starts with 400 and stores nothing; needs UPDATE on the element; honours If-Match', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const count = async () =>
          (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM uploads WHERE element_id = $1', [id]))
            .rows[0]!.n;
        const bad = async (headers: Record<string, string>, body?: Buffer) => {
          const { res } = await startUpload(h(), alice.token, id, { headers, body });
          expect(res.status).toBe(400);
          expect(res.json).toMatchObject({ status: 400, type: expect.stringMatching(/\/error\/400\/bad-content$/) });
        };
        await bad({ 'upload-length': String(256 * KiB + 1) });
        await bad({ 'upload-length': 'ten' });
        await bad({ 'upload-length': '4' }, Buffer.from('longer than four'));
        await bad({ 'repr-digest': 'md5=:AAAA:' });
        await bad({}, noise(64 * KiB + 1)); // the first chunk is limited by max-append-size
        await bad({ 'upload-complete': 'yes' });
        expect(await count()).toBe(0);

        const bob = await userWithToken(h(), 'bob@uploads.dev');
        const denied = await startUpload(h(), bob.token, id);
        expect(denied.res.status).toBe(404);
        const missing = await startUpload(h(), alice.token, '00000000-0000-4000-8000-000000000000');
        expect(missing.res.status).toBe(404);
        const stale = await startUpload(h(), alice.token, id, { headers: { 'if-match': '"nope"' } });
        expect(stale.res.status).toBe(412);
        expect(await count()).toBe(0);
      });
    });

    describe('append and complete', () => {
      it('takes chunks, completes with an empty PATCH: 201, Location, Upload-Complete ?1; the element gets the file', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'picture' } });
        // A PNG cut across chunks: the content type is still detected from the whole file's head.
        const png = Buffer.concat([tinyPng(), noise(100, 3)]);
        const parts = [png.subarray(0, 20), png.subarray(20, 60), png.subarray(60)];
        const {
          res,
          path,
          id: uploadId,
        } = await startUpload(h(), alice.token, id, {
          body: parts[0],
          headers: { 'content-disposition': 'attachment; filename="Holiday.PNG"', 'upload-length': String(png.length) },
        });
        expect(res.status).toBe(204);

        const second = await append(h(), alice.token, path, 20, parts[1]!, false);
        expect(second.status).toBe(204);
        expect(second.text).toBe('');
        expect(second.headers.get('upload-offset')).toBe('60');
        expect(second.headers.get('upload-complete')).toBe('?0');
        expect(limitsOf(second)['max-size']).toBe(256 * KiB);
        expect(second.headers.has('location')).toBe(false);

        const third = await append(h(), alice.token, path, 60, parts[2]!, false);
        expect(third.headers.get('upload-offset')).toBe(String(png.length));
        expect(await uploadRow(h(), uploadId)).toMatchObject({ offset: png.length, chunks: 3 });

        const done = await append(h(), alice.token, path, png.length, Buffer.alloc(0), true);
        expect(done.status).toBe(201);
        expect(done.text).toBe('');
        expect(done.headers.get('location')).toBe(`/${id}/file`);
        expect(done.headers.get('upload-complete')).toBe('?1');
        expect(done.headers.get('upload-offset')).toBe(String(png.length));

        const stored = await fileOf(h(), alice.token, id);
        expect(stored.status).toBe(200);
        expect(stored.body.equals(png)).toBe(true);
        expect(stored.element.file).toEqual({
          contentLength: png.length,
          extension: 'png',
          mimeType: 'image/png',
          hash: { sha256: sha256(png).toString('hex') },
        });
        expect(stored.element.data.hasFile).toBe(true);

        // The upload ceased to exist, with its row and its blob.
        expect((await head(h(), alice.token, path)).status).toBe(404);
        expect((await append(h(), alice.token, path, png.length, Buffer.alloc(0), true)).status).toBe(404);
        expect(await uploadRow(h(), uploadId)).toBeNull();
        expect(await blobOf(h(), uploadId)).toBeNull();
      });

      it('completes with bytes in the last PATCH, below min-append-size; a PUT start replaces a previous file, a POST start gets 409', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const old = await h().request('POST', `/${id}/file`, {
          token: alice.token,
          raw: new Uint8Array(Buffer.from('old')),
          headers: { 'upload-complete': '?1' },
        });
        expect(old.status).toBe(201);
        const data = noise(40, 7);
        // Spec: "POST fails with 409 if a file exists", a resumable start included; nothing is started or stored.
        const refused = await h().request('POST', `/${id}/file`, {
          token: alice.token,
          raw: new Uint8Array(data.subarray(0, 32)),
          headers: { 'upload-complete': '?0' },
        });
        expect(refused.status).toBe(409);
        expect(refused.json.type).toMatch(/\/error\/409\/conflict$/);
        expect(refused.headers.has('location')).toBe(false);
        expect(
          (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM uploads WHERE element_id = $1', [id]))
            .rows[0]!.n,
        ).toBe(0);
        const { res, path } = await startUpload(h(), alice.token, id, { method: 'PUT', body: data.subarray(0, 32) });
        expect(res.status).toBe(204);
        const done = await append(h(), alice.token, path, 32, data.subarray(32), true, {
          'repr-digest': reprDigest(data),
        });
        expect(done.status).toBe(201);
        const stored = await fileOf(h(), alice.token, id);
        expect(stored.body.equals(data)).toBe(true);
        expect(stored.element.file.hash.sha256).toBe(sha256(data).toString('hex'));
        expect(stored.element.file.extension).toBe('bin');
      });

      it('an empty file: start without bytes, complete without bytes', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const { path } = await startUpload(h(), alice.token, id, { headers: { 'upload-length': '0' } });
        const done = await append(h(), alice.token, path, 0, Buffer.alloc(0), true);
        expect(done.status).toBe(201);
        const stored = await fileOf(h(), alice.token, id);
        expect(stored.element.file).toMatchObject({ contentLength: 0, mimeType: 'application/octet-stream' });
        expect(stored.element.file.hash.sha256).toBe(sha256(Buffer.alloc(0)).toString('hex'));
      });

      it('accepts empty non-final appends without counting them', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const { path, id: uploadId } = await startUpload(h(), alice.token, id, {
          body: Buffer.from('0123456789abcdef'),
        });
        const empty = await append(h(), alice.token, path, 16, Buffer.alloc(0), false);
        expect(empty.status).toBe(204);
        expect(empty.headers.get('upload-offset')).toBe('16');
        expect(await uploadRow(h(), uploadId)).toMatchObject({ offset: 16, chunks: 1 });
      });

      it('several uploads to one element run in parallel; the last to complete wins, whether POST or PUT started it', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const a = await startUpload(h(), alice.token, id, {
          method: 'PUT',
          body: Buffer.from('upload A, first part '),
        });
        const b = await startUpload(h(), alice.token, id, {
          method: 'PUT',
          body: Buffer.from('upload B, first part '),
        });
        expect(a.id).not.toBe(b.id);
        const aDone = Buffer.from('upload A, first part and its end');
        const bDone = Buffer.from('upload B, first part and its end');
        expect((await append(h(), alice.token, b.path, 21, Buffer.from('and its end'), true)).status).toBe(201);
        expect((await fileOf(h(), alice.token, id)).body.equals(bDone)).toBe(true);
        expect((await append(h(), alice.token, a.path, 21, Buffer.from('and its end'), true)).status).toBe(201);
        const stored = await fileOf(h(), alice.token, id);
        expect(stored.body.equals(aDone)).toBe(true);
        expect(stored.element.file.hash.sha256).toBe(sha256(aDone).toString('hex'));

        // POST refuses to start when a file exists (409); two started before there was one both complete, and the
        // later replaces the earlier ("The previous file, if any, is replaced").
        const other = await createElement(h(), alice.token, { type: 'Doc' });
        const c = await startUpload(h(), alice.token, other, { body: Buffer.from('upload C, first part ') });
        const d = await startUpload(h(), alice.token, other, { body: Buffer.from('upload D, first part ') });
        expect((await append(h(), alice.token, d.path, 21, Buffer.from('and its end'), true)).status).toBe(201);
        const late = await append(h(), alice.token, c.path, 21, Buffer.from('and its end'), true);
        expect(late.status).toBe(201);
        const cDone = Buffer.from('upload C, first part and its end');
        const replaced = await fileOf(h(), alice.token, other);
        expect(replaced.body.equals(cDone)).toBe(true);
        expect(replaced.element.file.hash.sha256).toBe(sha256(cDone).toString('hex'));
        expect((await head(h(), alice.token, c.path)).status).toBe(404);
        const refused = await h().request('POST', `/${other}/file`, {
          token: alice.token,
          raw: new Uint8Array(Buffer.from('E')),
          headers: { 'upload-complete': '?0' },
        });
        expect(refused.status).toBe(409);
        expect(refused.json.type).toMatch(/\/error\/409\/conflict$/);
      });

      it('evaluates the preconditions of the start again at completion: a file written meanwhile is not replaced', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const first = await h().request('PUT', `/${id}/file`, {
          token: alice.token,
          raw: new Uint8Array(Buffer.from('first')),
          headers: { 'upload-complete': '?1' },
        });
        expect(first.status).toBe(201);
        const etag = (await h().request('HEAD', `/${id}/file`, { token: alice.token })).headers.get('etag')!;
        const guarded = await startUpload(h(), alice.token, id, {
          method: 'PUT',
          body: Buffer.from('guarded upload, part one '),
          headers: { 'if-match': etag },
        });
        expect(guarded.res.status).toBe(204);
        const unguarded = await startUpload(h(), alice.token, id, {
          method: 'PUT',
          body: Buffer.from('plain upload, part one '),
        });
        // Someone else replaces the file in between.
        const meanwhile = await h().request('PUT', `/${id}/file`, {
          token: alice.token,
          raw: new Uint8Array(Buffer.from('meanwhile')),
          headers: { 'upload-complete': '?1' },
        });
        expect(meanwhile.status).toBe(201);
        const done = await append(h(), alice.token, guarded.path, 25, Buffer.from('and two'), true);
        expect(done.status).toBe(412);
        expect(done.json.type).toMatch(/\/error\/412\/precondition-failed$/);
        expect(done.headers.get('upload-offset')).toBe('25');
        expect((await fileOf(h(), alice.token, id)).body.toString()).toBe('meanwhile');
        // Without a precondition the completion replaces whatever is there, as a direct PUT does.
        expect((await append(h(), alice.token, unguarded.path, 23, Buffer.from('and two'), true)).status).toBe(201);
        expect((await fileOf(h(), alice.token, id)).body.toString()).toBe('plain upload, part one and two');
        // If-None-Match: * (create only if there is none) started before a file existed, completed after.
        const empty = await createElement(h(), alice.token, { type: 'Doc' });
        const createOnly = await startUpload(h(), alice.token, empty, {
          method: 'PUT',
          body: Buffer.from('create only, part one '),
          headers: { 'if-none-match': '*' },
        });
        expect(createOnly.res.status).toBe(204);
        expect(
          (
            await h().request('PUT', `/${empty}/file`, {
              token: alice.token,
              raw: new Uint8Array(Buffer.from('x')),
              headers: { 'upload-complete': '?1' },
            })
          ).status,
        ).toBe(201);
        expect((await append(h(), alice.token, createOnly.path, 22, Buffer.alloc(0), true)).status).toBe(412);
        expect((await fileOf(h(), alice.token, empty)).body.toString()).toBe('x');
      });
    });

    describe('cancel', () => {
      it('DELETE by the creator: 204, the row and the bytes are gone, later requests 404', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const { path, id: uploadId } = await startUpload(h(), alice.token, id, { body: Buffer.from('some bytes') });
        expect(await blobOf(h(), uploadId)).not.toBeNull();
        const res = await h().request('DELETE', path, { token: alice.token });
        expect(res.status).toBe(204);
        expect(res.text).toBe('');
        expect(await uploadRow(h(), uploadId)).toBeNull();
        expect(await blobOf(h(), uploadId)).toBeNull();
        expect((await head(h(), alice.token, path)).status).toBe(404);
        expect((await h().request('DELETE', path, { token: alice.token })).status).toBe(404);
        expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data.hasFile).toBeUndefined();
      });

      it('a DELETE racing the completing PATCH: 204 only when it cancelled, 404 when the completion committed', async () => {
        for (let round = 0; round < 8; round++) {
          const id = await createElement(h(), alice.token, { type: 'Doc' });
          const { path } = await startUpload(h(), alice.token, id, { body: Buffer.from('some bytes') });
          const [completed, cancelled] = await Promise.all([
            // The PATCH's whole body (none) is in at once: a DELETE arriving while it works waits for it instead of
            // closing its connection (a newer request ends only one whose body is still arriving).
            append(h(), alice.token, path, 10, Buffer.alloc(0), true),
            h().request('DELETE', path, { token: alice.token }),
          ]);
          const element = (await h().request('GET', `/${id}`, { token: alice.token })).json;
          if (element.data.hasFile === true) {
            // The completion committed, and its client got the answer: nothing was left to cancel.
            expect(completed.status).toBe(201);
            expect(cancelled.status).toBe(404);
          } else {
            expect(completed.status).toBe(404);
            expect(cancelled.status).toBe(204);
          }
        }
      });
    });

    describe('routing', () => {
      it('answers other methods with 405 and Allow, and unknown ids with 404', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const { path } = await startUpload(h(), alice.token, id);
        for (const method of ['GET', 'POST', 'PUT']) {
          const res = await h().request(method, path, { token: alice.token });
          expect(res.status).toBe(405);
          expect(res.headers.get('allow')).toBe('HEAD, PATCH, DELETE, OPTIONS');
        }
        expect((await h().request('PATCH', '/upload/not-a-uuid', { token: alice.token })).status).toBe(404);
        expect((await head(h(), alice.token, '/upload/00000000-0000-4000-8000-000000000000')).status).toBe(404);
        const options = await h().request('OPTIONS', path);
        expect(options.status).toBe(204);
      });
    });
  },
  { settings, blobs: true },
);
