// Element files over HTTP with real bytes: upload (POST/PUT), metadata, download with ranges and conditions,
// digests, removal, and what is stored afterwards, on disk and in the object store.
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { currentNames, elementBytes, storedNames, temporaryBlobs } from '../helpers/blobs.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { noise, pdfHeader, reprDigest, sha256, tinyPng, utf8Text } from './fixtures.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

function upload(
  h: Harness,
  method: 'POST' | 'PUT',
  id: string,
  token: string,
  bytes: Buffer,
  headers: Record<string, string> = {},
) {
  return h.request(method, `/${id}/file`, {
    token,
    raw: new Uint8Array(bytes),
    headers: { 'upload-complete': '?1', ...headers },
  });
}

async function download(h: Harness, id: string, token: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.url}/${id}/file`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

describeBackends(
  'element files',
  (h) => {
    let alice: User;
    let bob: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@files.dev');
      bob = await userWithToken(h(), 'bob@files.dev');
    });

    describe('upload and metadata', () => {
      it('stores a PNG with POST: 201, Location, metadata on the element, bytes on disk', async () => {
        const png = tinyPng();
        const id = await createElement(h(), alice.token, { type: 'Picture', data: { name: 'Tiny picture' } });
        const res = await upload(h(), 'POST', id, alice.token, png, {
          'content-disposition': 'attachment; filename="Holiday.Photo.PNG"',
          'content-type': 'image/png',
        });
        expect(res.status).toBe(201);
        expect(res.headers.get('location')).toBe(`/${id}/file`);
        expect(res.text).toBe('');
        expect(res.headers.get('upload-limit')).toBeNull();
        const file = {
          contentLength: png.length,
          extension: 'png',
          mimeType: 'image/png',
          hash: { sha256: sha256(png).toString('hex') },
        };
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json.file).toEqual(file);
        expect(element.json.data.file).toEqual(file);
        expect(element.json.data.hasFile).toBe(true);
        expect(element.json.data.name).toBe('Tiny picture');
        const { rows } = await h().db.query<{ file: unknown }>('SELECT file FROM elements WHERE id = $1', [id]);
        expect(rows[0]!.file).toEqual(file);
        expect((await elementBytes(h(), id))!.equals(png)).toBe(true);
        expect(await temporaryBlobs(h())).toEqual([]);
      });

      it('detects a PDF from its header and takes the extension from filename*', async () => {
        const pdf = pdfHeader();
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const res = await upload(h(), 'POST', id, alice.token, pdf, {
          'content-disposition': `attachment; filename="report.bin"; filename*=UTF-8''Gr%C3%BC%C3%9Fe%20Bericht.Pdf`,
        });
        expect(res.status).toBe(201);
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json.file).toEqual({
          contentLength: pdf.length,
          extension: 'pdf',
          mimeType: 'application/pdf',
          hash: { sha256: sha256(pdf).toString('hex') },
        });
      });

      it('recognises UTF-8 text as text/plain; no Content-Disposition gives extension bin', async () => {
        const text = utf8Text();
        const id = await createElement(h(), alice.token, { type: 'Note' });
        const res = await upload(h(), 'POST', id, alice.token, text, { 'content-type': 'application/json' });
        expect(res.status).toBe(201);
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json.file).toMatchObject({
          contentLength: text.length,
          extension: 'bin',
          mimeType: 'text/plain',
        });
        const got = await download(h(), id, alice.token);
        expect(got.body.equals(text)).toBe(true);
        expect(got.headers.get('content-type')).toBe('text/plain');
        expect(got.headers.get('content-disposition')).toBe(`attachment; filename="${id}.bin"`);
      });

      it('stores binary without a known signature as application/octet-stream, with no Content-Type sent', async () => {
        const bytes = noise(5000, 7);
        const id = await createElement(h(), alice.token, { type: 'Blob' });
        const res = await upload(h(), 'POST', id, alice.token, bytes, {
          'content-disposition': 'attachment; filename="data.tar.GZ"',
        });
        expect(res.status).toBe(201);
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json.file).toMatchObject({
          extension: 'gz',
          mimeType: 'application/octet-stream',
          contentLength: 5000,
        });
      });

      it('maps odd filenames to a safe extension', async () => {
        const cases: Array<[string | undefined, string]> = [
          ['attachment; filename="README"', 'bin'],
          ['attachment; filename=".profile"', 'bin'],
          ['attachment; filename="x.tx t"', 'bin'],
          ['attachment; filename="../../etc/passwd.CONF"', 'conf'],
          ['attachment; filename="C:\\\\dir\\\\Movie.MKV"', 'mkv'],
          ['this is ; not = a valid header', 'bin'],
          // Not valid RFC 6266, but the filename is plain to see (the spec: "bin if none can be determined").
          ['attachment; filename=my report.pdf', 'pdf'],
          ['attachment; filename="a.PNG";', 'png'],
          ['filename="notes.md"', 'md'],
          ["attachment; filename*=UTF-8''na%C3%AFve%20plan.odt; foo", 'odt'],
          ['attachment; filename="unterminated.txt', 'txt'],
          ['attachment; filename=', 'bin'],
        ];
        for (const [disposition, extension] of cases) {
          const id = await createElement(h(), alice.token, { type: 'Blob' });
          const res = await upload(
            h(),
            'POST',
            id,
            alice.token,
            Buffer.from('x'),
            disposition ? { 'content-disposition': disposition } : {},
          );
          expect(res.status).toBe(201);
          const element = await h().request('GET', `/${id}`, { token: alice.token });
          expect([disposition, element.json.file.extension]).toEqual([disposition, extension]);
        }
      });

      it('accepts an empty file and serves it', async () => {
        const id = await createElement(h(), alice.token, { type: 'Empty' });
        const res = await upload(h(), 'POST', id, alice.token, Buffer.alloc(0), {
          'content-disposition': 'attachment; filename="nothing.txt"',
        });
        expect(res.status).toBe(201);
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json.file).toEqual({
          contentLength: 0,
          extension: 'txt',
          mimeType: 'application/octet-stream',
          hash: { sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
        });
        const got = await download(h(), id, alice.token);
        expect(got.status).toBe(200);
        expect(got.headers.get('content-length')).toBe('0');
        expect(got.body.length).toBe(0);
        const ranged = await download(h(), id, alice.token, { range: 'bytes=0-' });
        expect(ranged.status).toBe(416);
        expect(JSON.parse(ranged.body.toString())).toMatchObject({
          status: 416,
          'requested-start': 0,
          'total-length': 0,
        });
        expect(ranged.headers.get('content-range')).toBe('bytes */0');
      });

      it('streams a body larger than the JSON body limit (the body is never parsed)', async () => {
        const big = noise(9 * 1024 * 1024, 3);
        const id = await createElement(h(), alice.token, { type: 'Big' });
        const res = await upload(h(), 'POST', id, alice.token, big, {
          'content-type': 'application/json',
          'repr-digest': reprDigest(big),
        });
        expect(res.status).toBe(201);
        const got = await download(h(), id, alice.token);
        expect(got.body.equals(big)).toBe(true);
      });

      it('refuses to set file or hasFile through the element data', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        for (const body of [{ hasFile: true }, { file: { contentLength: 1 } }]) {
          for (const method of ['PATCH', 'PUT']) {
            const res = await h().request(method, `/${id}`, { token: alice.token, body });
            expect(res.status).toBe(400);
            expect(res.json.type).toMatch(/\/error\/400\/forbidden-property$/);
          }
        }
        const created = await h().request('POST', '/', {
          token: alice.token,
          body: { type: 'Doc', data: { hasFile: true } },
        });
        expect(created.status).toBe(400);
        expect(created.json.type).toMatch(/forbidden-property$/);
      });
    });

    describe('POST, PUT and conditions', () => {
      it('answers 409 conflict to POST onto a file and keeps the file', async () => {
        const first = Buffer.from('first version');
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        expect((await upload(h(), 'POST', id, alice.token, first)).status).toBe(201);
        const res = await upload(h(), 'POST', id, alice.token, Buffer.from('second version'));
        expect(res.status).toBe(409);
        expect(res.json.type).toMatch(/\/error\/409\/conflict$/);
        expect((await download(h(), id, alice.token)).body.equals(first)).toBe(true);
        expect(await temporaryBlobs(h())).toEqual([]);
      });

      it('PUT creates and replaces, each 201 + Location (spec: a direct upload answers 201); If-Match is checked against the file ETag', async () => {
        const v1 = Buffer.from('version one\n');
        const v2 = pdfHeader();
        const v3 = tinyPng();
        const id = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'Spec' } });
        const created = await upload(h(), 'PUT', id, alice.token, v1, {
          'content-disposition': 'attachment; filename="a.txt"',
        });
        expect(created.status).toBe(201);
        expect(created.headers.get('location')).toBe(`/${id}/file`);
        const etag1 = (await download(h(), id, alice.token)).headers.get('etag')!;
        expect(etag1).toMatch(/^"sha256-[A-Za-z0-9_-]{27}"$/);

        const replaced = await upload(h(), 'PUT', id, alice.token, v2, {
          'if-match': etag1,
          'content-disposition': 'attachment; filename="a.pdf"',
        });
        expect(replaced.status).toBe(201);
        expect(replaced.text).toBe('');
        expect(replaced.headers.get('location')).toBe(`/${id}/file`);
        const after = await download(h(), id, alice.token);
        expect(after.body.equals(v2)).toBe(true);
        expect(after.headers.get('content-type')).toBe('application/pdf');
        expect(after.headers.get('content-disposition')).toBe('attachment; filename="Spec.pdf"');
        const etag2 = after.headers.get('etag')!;
        expect(etag2).not.toBe(etag1);

        const stale = await upload(h(), 'PUT', id, alice.token, v3, { 'if-match': etag1 });
        expect(stale.status).toBe(412);
        expect(stale.json.type).toMatch(/precondition-failed$/);
        expect((await download(h(), id, alice.token)).body.equals(v2)).toBe(true);
        const weak = await upload(h(), 'PUT', id, alice.token, v3, { 'if-match': `W/${etag2}` });
        expect(weak.status).toBe(412);

        // If-None-Match: * means "only if there is no file yet".
        const onlyNew = await upload(h(), 'PUT', id, alice.token, v3, { 'if-none-match': '*' });
        expect(onlyNew.status).toBe(412);
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json.file.hash.sha256).toBe(sha256(v2).toString('hex'));
        expect(await temporaryBlobs(h())).toEqual([]);
      });

      it('changes the element ETag and updated timestamp when the file changes', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const before = await h().request('GET', `/${id}`, { token: alice.token });
        h().clock.advance(5);
        await upload(h(), 'POST', id, alice.token, Buffer.from('abc'));
        const after = await h().request('GET', `/${id}`, { token: alice.token });
        expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
        expect(after.json.data.updated).not.toBe(before.json.data.updated);
      });
    });

    describe('digests and declared lengths', () => {
      it('accepts a matching Repr-Digest and a matching Content-Digest', async () => {
        const bytes = utf8Text();
        const a = await createElement(h(), alice.token, { type: 'Doc' });
        expect((await upload(h(), 'POST', a, alice.token, bytes, { 'repr-digest': reprDigest(bytes) })).status).toBe(
          201,
        );
        const b = await createElement(h(), alice.token, { type: 'Doc' });
        expect(
          (
            await upload(h(), 'POST', b, alice.token, bytes, {
              'content-digest': `sha-512=:AAAA:, ${reprDigest(bytes)}`,
            })
          ).status,
        ).toBe(201);
      });

      it('rejects a digest mismatch with 400 and leaves the old file and metadata intact', async () => {
        const old = tinyPng();
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        await upload(h(), 'POST', id, alice.token, old, { 'content-disposition': 'attachment; filename="p.png"' });
        const before = await h().request('GET', `/${id}`, { token: alice.token });
        const replacement = pdfHeader();
        const cases: Record<string, string>[] = [
          { 'repr-digest': reprDigest(Buffer.from('something else')) },
          { 'content-digest': reprDigest(Buffer.from('something else')) },
          // Repr-Digest wins over Content-Digest.
          { 'repr-digest': reprDigest(Buffer.from('x')), 'content-digest': reprDigest(replacement) },
          { 'repr-digest': 'sha-512=:AAAA:' }, // another algorithm only
          { 'repr-digest': 'md5=:AAAA:' },
          { 'repr-digest': 'sha-256=abc' }, // malformed
          { 'repr-digest': 'sha-256=:AAAA:' }, // not 32 bytes
          { 'repr-digest': 'sha-256="not bytes"' },
          { 'repr-digest': '' },
        ];
        for (const headers of cases) {
          const res = await upload(h(), 'PUT', id, alice.token, replacement, headers);
          expect([headers, res.status]).toEqual([headers, 400]);
          expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
        }
        const after = await h().request('GET', `/${id}`, { token: alice.token });
        expect(after.text).toBe(before.text);
        expect((await download(h(), id, alice.token)).body.equals(old)).toBe(true);
        expect(await temporaryBlobs(h())).toEqual([]);
        expect(await storedNames(h(), id)).toEqual(await currentNames(h(), id));
      });

      it('requires Upload-Complete and checks Upload-Length against what arrived', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const bytes = Buffer.from('twelve bytes');
        const bad: Record<string, string>[] = [
          { 'upload-complete': 'yes' },
          { 'upload-complete': '1' },
          { 'upload-complete': '?1', 'upload-length': '13' }, // disagrees with Content-Length
          { 'upload-complete': '?1', 'upload-length': '-1' },
          { 'upload-complete': '?1', 'upload-length': 'twelve' },
          { 'upload-complete': '?1', 'upload-length': '12.0' }, // an sf-decimal, not an sf-integer
          { 'upload-complete': '?0', 'upload-length': '12.0' },
        ];
        for (const headers of bad) {
          const res = await h().request('POST', `/${id}/file`, {
            token: alice.token,
            raw: new Uint8Array(bytes),
            headers,
          });
          expect([headers, res.status, res.json?.type]).toEqual([headers, 400, expect.stringMatching(/bad-content$/)]);
        }
        const missing = await h().request('POST', `/${id}/file`, { token: alice.token, raw: new Uint8Array(bytes) });
        expect(missing.status).toBe(400);
        expect(missing.json.detail).toMatch(/Upload-Complete/);
        const ok = await upload(h(), 'POST', id, alice.token, bytes, { 'upload-length': '12' });
        expect(ok.status).toBe(201);
        expect(await temporaryBlobs(h())).toEqual([]);
      });
    });

    describe('download', () => {
      const original = noise(1000, 42);
      let id: string;
      let etag: string;
      beforeAll(async () => {
        id = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'Bericht "Q1" – Köln' } });
        const res = await upload(h(), 'POST', id, alice.token, original, {
          'content-disposition': 'attachment; filename="r.DAT"',
        });
        expect(res.status).toBe(201);
        etag = (await download(h(), id, alice.token)).headers.get('etag')!;
      });

      it('sends the whole file with its headers', async () => {
        const got = await download(h(), id, alice.token);
        expect(got.status).toBe(200);
        expect(got.body.equals(original)).toBe(true);
        expect(got.headers.get('content-length')).toBe('1000');
        expect(got.headers.get('content-type')).toBe('application/octet-stream');
        expect(got.headers.get('accept-ranges')).toBe('bytes');
        expect(got.headers.get('repr-digest')).toBe(reprDigest(original));
        expect(got.headers.get('etag')).toBe(`"sha256-${sha256(original).toString('base64url').slice(0, 27)}"`);
        expect(got.headers.get('content-range')).toBeNull();
        expect(got.headers.get('cache-control')).toBe('no-cache, private');
        expect(got.headers.get('content-disposition')).toBe(
          `attachment; filename="Bericht \\"Q1\\" _ K_ln.dat"; filename*=UTF-8''Bericht%20%22Q1%22%20%E2%80%93%20K%C3%B6ln.dat`,
        );
      });

      it('answers HEAD with the same headers and no body', async () => {
        const get = await download(h(), id, alice.token);
        const head = await h().request('HEAD', `/${id}/file`, { token: alice.token });
        expect(head.status).toBe(200);
        expect(head.text).toBe('');
        for (const name of [
          'content-length',
          'content-type',
          'etag',
          'repr-digest',
          'accept-ranges',
          'content-disposition',
        ])
          expect([name, head.headers.get(name)]).toEqual([name, get.headers.get(name)]);
        const ranged = await h().request('HEAD', `/${id}/file`, {
          token: alice.token,
          headers: { range: 'bytes=10-19' },
        });
        expect(ranged.status).toBe(206);
        expect(ranged.headers.get('content-length')).toBe('10');
        expect(ranged.headers.get('content-range')).toBe('bytes 10-19/1000');
      });

      it('serves single ranges byte-exactly', async () => {
        const cases: Array<[string, number, number]> = [
          ['bytes=0-0', 0, 0],
          ['bytes=0-99', 0, 99],
          ['bytes=10-19', 10, 19],
          ['bytes=999-999', 999, 999],
          ['bytes=500-', 500, 999],
          ['bytes=990-5000', 990, 999], // end clamped
          ['bytes=-1', 999, 999],
          ['bytes=-100', 900, 999],
          ['bytes=-5000', 0, 999], // suffix longer than the file: all of it
          ['BYTES=3-4', 3, 4],
        ];
        for (const [range, start, end] of cases) {
          const got = await download(h(), id, alice.token, { range });
          expect([range, got.status]).toEqual([range, 206]);
          expect(got.body.equals(original.subarray(start, end + 1))).toBe(true);
          expect(got.headers.get('content-range')).toBe(`bytes ${start}-${end}/1000`);
          expect(got.headers.get('content-length')).toBe(String(end - start + 1));
          expect(got.headers.get('accept-ranges')).toBe('bytes');
          expect(got.headers.get('repr-digest')).toBe(reprDigest(original)); // of the whole file
        }
      });

      it('rejects unparsable and multi-ranges with 400, unsatisfiable ones with 416', async () => {
        for (const range of [
          'bytes=5-3',
          'bytes=0-1,5-6',
          'bytes=a-b',
          'bytes=',
          'bytes=-',
          'items=0-5',
          '0-5',
          'bytes=1.5-2',
          'bytes=--1',
        ]) {
          const got = await download(h(), id, alice.token, { range });
          expect([range, got.status]).toEqual([range, 400]);
          expect(JSON.parse(got.body.toString()).type).toMatch(/\/error\/400\/bad-content$/);
        }
        for (const [range, start] of [
          ['bytes=1000-', 1000],
          ['bytes=1000-2000', 1000],
          ['bytes=5000-6000', 5000],
          ['bytes=-0', 1000],
        ] as const) {
          const got = await download(h(), id, alice.token, { range });
          expect([range, got.status]).toEqual([range, 416]);
          expect(got.headers.get('content-range')).toBe('bytes */1000');
          expect(got.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
          expect(JSON.parse(got.body.toString())).toMatchObject({
            type: `${h().url}/error/416/range-not-satisfiable`,
            status: 416,
            'requested-start': start,
            'total-length': 1000,
          });
        }
      });

      it('honours If-None-Match, If-Match and If-Range', async () => {
        const notModified = await download(h(), id, alice.token, { 'if-none-match': etag });
        expect(notModified.status).toBe(304);
        expect(notModified.body.length).toBe(0);
        expect(notModified.headers.get('etag')).toBe(etag);
        expect((await download(h(), id, alice.token, { 'if-none-match': '"other"' })).status).toBe(200);
        expect((await download(h(), id, alice.token, { 'if-match': '"other"' })).status).toBe(412);
        expect((await download(h(), id, alice.token, { 'if-match': etag })).status).toBe(200);
        const sameRange = await download(h(), id, alice.token, { range: 'bytes=0-9', 'if-range': etag });
        expect(sameRange.status).toBe(206);
        const staleRange = await download(h(), id, alice.token, { range: 'bytes=0-9', 'if-range': '"stale"' });
        expect(staleRange.status).toBe(200);
        expect(staleRange.body.equals(original)).toBe(true);
        const dateRange = await download(h(), id, alice.token, {
          range: 'bytes=0-9',
          'if-range': 'Wed, 21 Oct 2015 07:28:00 GMT',
        });
        expect(dateRange.status).toBe(200);
      });
    });

    describe('access and 404', () => {
      it('gives the same 404 for a missing element, an inaccessible element and an element without file', async () => {
        const withFile = await createElement(h(), bob.token, { type: 'Secret' });
        await upload(h(), 'POST', withFile, bob.token, Buffer.from('bob only'));
        const noFile = await createElement(h(), alice.token, { type: 'Doc' });
        const missing = '0b8e4a62-5d55-4c1c-9d5e-5c2b7e6a1a10';
        const answers = [];
        for (const target of [missing, withFile, noFile]) {
          const get = await h().request('GET', `/${target}/file`, { token: alice.token });
          const head = await h().request('HEAD', `/${target}/file`, { token: alice.token });
          const del = await h().request('DELETE', `/${target}/file`, { token: alice.token });
          expect([get.status, head.status, del.status]).toEqual([404, 404, 404]);
          answers.push([get.text, del.text, get.headers.get('content-type')]);
        }
        expect(answers[1]).toEqual(answers[0]);
        expect(answers[2]).toEqual(answers[0]);
        // Writing without access is the same 404 and stores nothing.
        const put = await upload(h(), 'PUT', withFile, alice.token, Buffer.from('mine now'));
        expect(put.status).toBe(404);
        expect(put.text).toBe(answers[0]![0]);
        expect((await download(h(), withFile, bob.token)).body.toString()).toBe('bob only');
        expect((await h().request('GET', '/not-a-uuid/file', { token: alice.token })).status).toBe(404);
      });

      it('lets a reader download but not write or delete the file', async () => {
        const id = await createElement(h(), bob.token, { type: 'Shared' });
        await upload(h(), 'POST', id, bob.token, Buffer.from('shared bytes'));
        const grant = await h().request('POST', '/', {
          token: bob.token,
          body: { type: 'HAS_READ_ACCESS', start: alice.id, end: id },
        });
        expect(grant.status).toBe(201);
        expect((await download(h(), id, alice.token)).body.toString()).toBe('shared bytes');
        expect((await upload(h(), 'PUT', id, alice.token, Buffer.from('overwritten'))).status).toBe(404);
        expect((await h().request('DELETE', `/${id}/file`, { token: alice.token })).status).toBe(404);
        expect((await download(h(), id, bob.token)).body.toString()).toBe('shared bytes');
      });

      it('needs authentication', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        expect((await h().request('GET', `/${id}/file`)).status).toBe(401);
        expect(
          (
            await h().request('POST', `/${id}/file`, {
              raw: new TextEncoder().encode('x'),
              headers: { 'upload-complete': '?1' },
            })
          ).status,
        ).toBe(401);
      });

      it('answers other methods with 405 and Allow', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const res = await h().request('PATCH', `/${id}/file`, {
          token: alice.token,
          raw: new TextEncoder().encode('x'),
        });
        expect(res.status).toBe(405);
        expect(res.headers.get('allow')).toBe('GET, HEAD, POST, PUT, DELETE, OPTIONS');
      });
    });

    describe('other holders of files', () => {
      it('attaches files to relations exactly like to nodes', async () => {
        const a = await createElement(h(), alice.token, { type: 'Doc' });
        const b = await createElement(h(), alice.token, { type: 'Doc' });
        const rel = await h().request('POST', '/', {
          token: alice.token,
          body: { type: 'HAS_TAG', start: a, end: b, data: { name: 'link' } },
        });
        expect(rel.status).toBe(201);
        const id = rel.headers.get('location')!.slice(1);
        expect(
          (
            await upload(h(), 'POST', id, alice.token, pdfHeader(), {
              'content-disposition': 'attachment; filename="x.pdf"',
            })
          ).status,
        ).toBe(201);
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json).toMatchObject({
          start: a,
          end: b,
          file: { mimeType: 'application/pdf', extension: 'pdf' },
          data: { hasFile: true },
        });
        const got = await download(h(), id, alice.token);
        expect(got.body.equals(pdfHeader())).toBe(true);
        expect(got.headers.get('content-disposition')).toBe('attachment; filename="link.pdf"');
      });

      it('serves a file stored without a hash (older backups): strong ETag, no Repr-Digest', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const bytes = Buffer.from('from an old backup');
        const { blobs } = h().services;
        const temp = await blobs.write(Readable.from([bytes]), { maxBytes: bytes.length });
        await (await blobs.replace(id, temp, { previous: 'none', next: 'unhashed' })).finish();
        await blobs.discard(temp);
        const meta = {
          contentLength: bytes.length,
          extension: 'txt',
          mimeType: 'text/plain\r\nx-injected: 1',
          hash: { sha256: null },
        };
        await h().db.query('UPDATE elements SET file = $2 WHERE id = $1', [id, meta]);
        const got = await download(h(), id, alice.token);
        expect(got.status).toBe(200);
        expect(got.body.equals(bytes)).toBe(true);
        expect(got.headers.get('repr-digest')).toBeNull();
        expect(got.headers.get('content-type')).toBe('application/octet-stream');
        expect(got.headers.get('x-injected')).toBeNull();
        const etag = got.headers.get('etag')!;
        expect(etag).toMatch(/^"file-[A-Za-z0-9_-]{27}"$/);
        expect((await download(h(), id, alice.token, { 'if-none-match': etag })).status).toBe(304);
        // Replacing it works and the previous bytes are settled like any other.
        expect((await upload(h(), 'PUT', id, alice.token, Buffer.from('fresh'), { 'if-match': etag })).status).toBe(
          201,
        );
        expect((await download(h(), id, alice.token)).body.toString()).toBe('fresh');
        expect(await storedNames(h(), id)).toEqual(await currentNames(h(), id));
      });
    });

    describe('concurrency', () => {
      it('keeps bytes and metadata together under concurrent PUTs and downloads', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        const versions = Array.from({ length: 6 }, (_, i) => noise(200_000 + i * 1000, 100 + i));
        await upload(h(), 'POST', id, alice.token, versions[0]!);
        const work: Promise<unknown>[] = [];
        const downloads: Array<Awaited<ReturnType<typeof download>>> = [];
        for (const bytes of versions.slice(1)) {
          work.push(upload(h(), 'PUT', id, alice.token, bytes).then((res) => expect(res.status).toBe(201)));
          work.push(download(h(), id, alice.token).then((d) => downloads.push(d)));
        }
        await Promise.all(work);
        // Every download is one whole version, and its headers describe exactly those bytes.
        for (const d of downloads) {
          expect(d.status).toBe(200);
          expect(d.headers.get('repr-digest')).toBe(reprDigest(d.body));
          expect(d.headers.get('content-length')).toBe(String(d.body.length));
        }
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        const stored = (await elementBytes(h(), id))!;
        expect(element.json.file.hash.sha256).toBe(sha256(stored).toString('hex'));
        expect(await storedNames(h(), id)).toEqual(await currentNames(h(), id));
        expect(await temporaryBlobs(h())).toEqual([]);
      });
    });

    describe('removal', () => {
      it('DELETE /<id>/file removes bytes and metadata (204), honouring If-Match', async () => {
        const bytes = tinyPng();
        const id = await createElement(h(), alice.token, { type: 'Doc', data: { keep: 1 } });
        await upload(h(), 'POST', id, alice.token, bytes);
        const etag = (await download(h(), id, alice.token)).headers.get('etag')!;
        const stale = await h().request('DELETE', `/${id}/file`, {
          token: alice.token,
          headers: { 'if-match': '"nope"' },
        });
        expect(stale.status).toBe(412);
        expect(await storedNames(h(), id)).toHaveLength(1);
        const res = await h().request('DELETE', `/${id}/file`, { token: alice.token, headers: { 'if-match': etag } });
        expect(res.status).toBe(204);
        expect(res.text).toBe('');
        const element = await h().request('GET', `/${id}`, { token: alice.token });
        expect(element.json.file).toBeUndefined();
        expect(element.json.data).not.toHaveProperty('hasFile');
        expect(element.json.data).not.toHaveProperty('file');
        expect(element.json.data.keep).toBe(1);
        expect(await storedNames(h(), id)).toEqual([]);

        expect((await download(h(), id, alice.token)).status).toBe(404);
        expect((await h().request('DELETE', `/${id}/file`, { token: alice.token })).status).toBe(404);
        // And a new file can be POSTed again.
        expect((await upload(h(), 'POST', id, alice.token, bytes)).status).toBe(201);
      });

      it('deleting the element deletes its file', async () => {
        const id = await createElement(h(), alice.token, { type: 'Doc' });
        await upload(h(), 'POST', id, alice.token, pdfHeader());
        expect(await storedNames(h(), id)).toHaveLength(1);
        expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
        expect(await storedNames(h(), id)).toEqual([]);
        expect((await download(h(), id, alice.token)).status).toBe(404);
      });
    });
  },
  { blobs: true },
);
