// The 104 (Upload Resumption Supported) interim response of the draft, seen on the wire: sent before the final
// response to clients that announce a draft interop version we speak, with the upload's Location and
// Upload-Limit; never sent to other clients, to HTTP/1.0 clients, or into the middle of a pipelined response.
import http from 'node:http';
import { beforeAll, expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { rawExchange } from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** The status lines and header blocks of the responses in a raw HTTP/1.1 byte stream (bodies are empty here). */
function messages(stream: string): Array<{ status: number; headers: Record<string, string>; raw: string }> {
  const out: Array<{ status: number; headers: Record<string, string>; raw: string }> = [];
  let rest = stream;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`incomplete message: ${JSON.stringify(rest)}`);
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    );
    let next = end + 4;
    const length = Number(headers['content-length'] ?? 0);
    next += length;
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, raw: rest.slice(0, next) });
    rest = rest.slice(next);
  }
  return out;
}

describeBackends(
  'resumable uploads: 104 Upload Resumption Supported',
  (h) => {
    let alice: User;
    let elementId: string;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@interim.dev');
      elementId = await createElement(h(), alice.token, { type: 'Doc' });
    });

    const creation = (fields: string, version = '1.1') =>
      `POST /${elementId}/file HTTP/${version}\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${alice.token}\r\n` +
      `Upload-Complete: ?0\r\nContent-Length: 5\r\nConnection: close\r\n${fields}\r\nhello`;

    it('sends 104 with Location and Upload-Limit, then the final 204 with the same Location', async () => {
      for (const version of ['6', '5', '3']) {
        const fields =
          version === '3'
            ? 'Upload-Draft-Interop-Version: 3\r\nUpload-Incomplete: ?1\r\n'
            : `Upload-Draft-Interop-Version: ${version}\r\n`;
        const stream = await rawExchange(
          h(),
          creation(fields).replace('Upload-Complete: ?0\r\n', version === '3' ? '' : 'Upload-Complete: ?0\r\n'),
        );
        expect(stream).toMatch(
          new RegExp(
            `^HTTP/1\\.1 104 Upload Resumption Supported\\r\\nLocation: /upload/${UUID}\\r\\nUpload-Limit: max-age=10800, max-size=\\d+, min-append-size=\\d+, max-append-size=\\d+\\r\\n\\r\\nHTTP/1\\.1 204 No Content\\r\\n`,
          ),
        );
        const [interim, final] = messages(stream);
        expect(interim!.status).toBe(104);
        expect(final!.status).toBe(204);
        expect(final!.headers.location).toBe(interim!.headers.location);
        expect(final!.headers['upload-limit']).toBe(interim!.headers['upload-limit']);
        expect(final!.headers['upload-offset']).toBe('5');
      }
    });

    it('sends no 104 without a supported interop version, or to an HTTP/1.0 client; the final response is the same', async () => {
      for (const fields of ['', 'Upload-Draft-Interop-Version: 7\r\n', 'Upload-Draft-Interop-Version: x\r\n']) {
        const stream = await rawExchange(h(), creation(fields));
        const all = messages(stream);
        expect(all.map((m) => m.status)).toEqual([204]);
        expect(all[0]!.headers.location).toMatch(new RegExp(`^/upload/${UUID}$`));
      }
      const old = messages(await rawExchange(h(), creation('Upload-Draft-Interop-Version: 6\r\n', '1.0')));
      expect(old.map((m) => m.status)).toEqual([204]);
    });

    it('never writes a 104 into the middle of another response on a pipelined connection', async () => {
      const get = `GET /${elementId} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${alice.token}\r\n\r\n`;
      for (let i = 0; i < 5; i++) {
        const stream = await rawExchange(h(), get + creation('Upload-Draft-Interop-Version: 6\r\n'));
        const statuses = messages(stream).map((m) => m.status);
        // The GET's response comes whole first; the 104 may follow it (if the POST got the connection in time).
        expect([
          [200, 204],
          [200, 104, 204],
        ]).toContainEqual(statuses);
      }
    });

    it('node:http clients see it as an informational response and go on to the final one', async () => {
      const seen: Array<{ status: number; location: unknown }> = [];
      const final = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.request(
          `${h().url}/${elementId}/file`,
          {
            method: 'PUT',
            headers: {
              authorization: `Bearer ${alice.token}`,
              'upload-complete': '?0',
              'upload-draft-interop-version': '6',
            },
          },
          (res) => {
            res.resume();
            resolve(res);
          },
        );
        req.on('information', (info) => seen.push({ status: info.statusCode, location: info.headers.location }));
        req.on('error', reject);
        req.end();
      });
      expect(final.statusCode).toBe(204);
      expect(seen).toEqual([{ status: 104, location: final.headers.location }]);
      // fetch (undici) skips it just as well.
      const res = await h().request('POST', `/${elementId}/file`, {
        token: alice.token,
        headers: { 'upload-complete': '?0', 'upload-draft-interop-version': '6' },
      });
      expect(res.status).toBe(204);
    });
  },
  { blobs: true },
);
