// Methods beyond the ones an endpoint serves: WebDAV's methods on an element (501 after the credentials), other
// methods (405 with Allow), and HEAD, which answers every GET route with exactly GET's headers (200, 304, errors).

import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PROBLEMS } from '../../src/errors.js';
import { attachFile, createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { checkExchange } from '../helpers/openapi-check.js';

const WEBDAV = ['COPY', 'LOCK', 'UNLOCK', 'MKCOL', 'MOVE', 'PROPFIND', 'PROPPATCH'];

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * One request with node:http over a socket (fetch refuses some methods; node:http sends any token), checked against
 * the OpenAPI document like the harness's requests.
 */
async function send(
  h: Harness,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  const response = await new Promise<RawResponse>((resolve, reject) => {
    const request = http.request(`${h.url}${path}`, { method, headers }, (res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (chunk) => (text += chunk))
        .on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    request.on('error', reject);
    request.end(body);
  });
  checkExchange(h.url, { method, path, ...response });
  return response;
}

/** Every header but Date, as sent (names lowercased by node:http). */
const headerSet = (res: RawResponse) =>
  Object.fromEntries(
    Object.entries(res.headers)
      .filter(([name]) => name !== 'date')
      .sort(),
  );

const securityTxt = join(tmpdir(), `trellis-methods-security-${process.pid}.txt`);
writeFileSync(securityTxt, 'Contact: mailto:security@example.dev\n');

describeBackends(
  'HTTP methods',
  (h) => {
    it('answers the WebDAV methods on an element with 501 not-implemented, after the credentials', async () => {
      const alice = await userWithToken(h(), 'alice@methods.dev');
      const doc = await createElement(h(), alice.token, { type: 'Doc' });
      const auth = { authorization: `Bearer ${alice.token}` };
      for (const method of WEBDAV) {
        for (const id of [doc, doc.toUpperCase(), '0b8e4a62-5d55-4c1c-9d5e-5c2b7e6a1a10']) {
          const res = await send(h(), method, `/${id}`, auth);
          expect(res.status, `${method} ${id}`).toBe(501);
          expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
          expect(JSON.parse(res.text)).toMatchObject({
            type: `${h().url}/error/501/not-implemented`,
            title: PROBLEMS['not-implemented'].title,
            status: 501,
          });
          expect(res.headers['cache-control']).toBe('no-cache, private');
          expect(res.headers['access-control-allow-origin']).toBe('*');
          expect(res.headers.allow).toBeUndefined();
        }
        // A body (WebDAV's XML) is never read or parsed: still 501, and the connection serves the next request.
        const withBody = await send(
          h(),
          method,
          `/${doc}`,
          { ...auth, 'content-type': 'application/xml' },
          '<?xml version="1.0"?><propfind xmlns="DAV:"><allprop/></propfind>',
        );
        expect(withBody.status, method).toBe(501);
        // Credentials first: a bad token is 401, no Authorization without an anonymous user 401 too.
        for (const headers of [
          { authorization: 'Bearer garbage' },
          { authorization: 'Bearer secret-token:1234567890ABCDEFabcdef' },
          {},
        ] as Record<string, string>[]) {
          const res = await send(h(), method, `/${doc}`, headers);
          expect(res.status, `${method} ${JSON.stringify(headers)}`).toBe(401);
          expect(JSON.parse(res.text).type).toBe(`${h().url}/error/401/unauthorized`);
        }
        // Not an element id: 404 as for any method.
        expect((await send(h(), method, '/not-a-uuid', auth)).status).toBe(404);
      }
      // The methods the element serves are unchanged, and it still exists.
      expect((await send(h(), 'GET', `/${doc}`, auth)).status).toBe(200);
    });

    it('keeps 405 with Allow for other methods, and for WebDAV methods on paths that are not an element', async () => {
      const alice = await userWithToken(h(), 'bob@methods.dev');
      const doc = await createElement(h(), alice.token, { type: 'Doc' });
      const auth = { authorization: `Bearer ${alice.token}` };
      for (const method of ['TRACE', 'QUERY', 'CONNECT']) {
        if (method === 'CONNECT') continue; // CONNECT is tested in foundation.test.ts (it closes the connection)
        const res = await send(h(), method, `/${doc}`, auth);
        expect(res.status, method).toBe(405);
        expect(res.headers.allow).toBe('GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
      }
      for (const [path, allow] of [
        ['/', 'GET, HEAD, POST, OPTIONS'],
        [`/${doc}/children`, 'GET, HEAD, OPTIONS'],
        [`/${doc}/file`, 'GET, HEAD, POST, PUT, DELETE, OPTIONS'],
        ['/me', 'GET, HEAD, OPTIONS'],
        ['/register', 'POST, OPTIONS'],
      ] as const) {
        for (const method of ['PROPFIND', 'MOVE']) {
          const res = await send(h(), method, path, auth);
          expect(res.status, `${method} ${path}`).toBe(405);
          expect(res.headers.allow, `${method} ${path}`).toBe(allow);
          expect(JSON.parse(res.text).type).toBe(`${h().url}/error/405/method-not-allowed`);
        }
      }
    });

    it('answers HEAD with exactly the headers of GET on every GET route, on 200, 304 and errors', async () => {
      const alice = await userWithToken(h(), 'carol@methods.dev');
      const folder = await createElement(h(), alice.token, { type: 'Folder', data: { name: 'box' } });
      const doc = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'letter' } }, folder);
      await attachFile(h(), alice.token, doc, Buffer.from('hello, head'), 'letter.txt');
      const auth = { authorization: `Bearer ${alice.token}` };

      const compare = async (path: string, headers: Record<string, string>, status: number) => {
        const get = await send(h(), 'GET', path, headers);
        const head = await send(h(), 'HEAD', path, headers);
        expect(get.status, `GET ${path}`).toBe(status);
        expect(head.status, `HEAD ${path}`).toBe(status);
        expect(head.text, `HEAD ${path}`).toBe('');
        expect(headerSet(head), `HEAD ${path} ${status}`).toEqual(headerSet(get));
        return get;
      };
      const withEtag = [
        `/${doc}`,
        `/${folder}/children`,
        `/${folder}/parents`,
        `/${doc}/related`,
        '/',
        '/?pageSize=5&page=2',
        `/${doc}/file`,
        '/me',
        '/token',
      ];
      for (const path of withEtag) {
        const get = await compare(path, auth, 200);
        const etag = get.headers.etag;
        expect(etag, path).toBeTruthy();
        const notModified = await compare(path, { ...auth, 'if-none-match': etag! }, 304);
        expect(notModified.headers['content-length'], path).toBeUndefined();
        await compare(path, { ...auth, 'if-match': '"other"' }, 412);
      }
      await compare(`/${doc}/file`, { ...auth, range: 'bytes=0-4' }, 206);
      for (const path of ['/instance-configuration', '/graph-structure', '/.well-known/security.txt'])
        await compare(path, {}, 200);
      for (const [slug, entry] of Object.entries(PROBLEMS)) await compare(`/error/${entry.status}/${slug}`, {}, 200);
      // Errors of GET routes: the same problem headers.
      await compare(`/${doc}`, { authorization: 'Bearer garbage' }, 401);
      await compare('/0b8e4a62-5d55-4c1c-9d5e-5c2b7e6a1a10', auth, 404);
      await compare(`/${folder}/children?page=x`, auth, 400);
      await compare('/me', {}, 401);
      await compare('/token', {}, 401);
    });
  },
  { settings: { securityTxt } },
);
