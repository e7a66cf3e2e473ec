import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { PROBLEMS } from '../../src/errors.js';
import { describeBackends, userWithToken } from '../helpers/harness.js';

const CORS_ALLOW = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'Range',
  'Upload-Complete',
  'Upload-Offset',
  'Upload-Length',
  'Repr-Digest',
  'Content-Digest',
  'Content-Disposition',
];
const CORS_EXPOSE = [
  'ETag',
  'Location',
  'Upload-Offset',
  'Upload-Limit',
  'Upload-Complete',
  'Upload-Length',
  'Content-Range',
  'Repr-Digest',
  'Content-Disposition',
];

function expectCommonHeaders(headers: Headers) {
  expect(headers.get('cache-control')).toBe('no-cache, private');
  expect(headers.get('access-control-allow-origin')).toBe('*');
  expect(headers.get('access-control-allow-methods')).toContain('PATCH');
  for (const h of CORS_ALLOW) expect(headers.get('access-control-allow-headers')).toContain(h);
  for (const h of CORS_EXPOSE) expect(headers.get('access-control-expose-headers')).toContain(h);
}

describeBackends('HTTP foundation', (h) => {
  it('serves every canonical problem with 200 and the problem shape', async () => {
    for (const [slug, entry] of Object.entries(PROBLEMS)) {
      const res = await h().request('GET', `/error/${entry.status}/${slug}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expectCommonHeaders(res.headers);
      expect(res.json).toEqual({
        type: `${h().url}/error/${entry.status}/${slug}`,
        title: entry.title,
        status: entry.status,
        detail: entry.detail,
      });
    }
  });

  it('answers HEAD like GET with identical headers and no body', async () => {
    const get = await h().request('GET', '/error/404/not-found');
    const head = await h().request('HEAD', '/error/404/not-found');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    for (const name of ['content-type', 'content-length', 'cache-control', 'access-control-expose-headers'])
      expect(head.headers.get(name)).toBe(get.headers.get(name));
  });

  it('answers OPTIONS on any path with 204 and the CORS headers', async () => {
    for (const path of ['/', '/register', '/0b8e4a62-5d55-4c1c-9d5e-5c2b7e6a1a10/file', '/no/such/path']) {
      const res = await h().request('OPTIONS', path);
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectCommonHeaders(res.headers);
    }
  });

  it('answers a known path with a wrong method with 405 and Allow', async () => {
    const res = await h().request('DELETE', '/register');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, OPTIONS');
    expect(res.json.type).toBe(`${h().url}/error/405/method-not-allowed`);
    expectCommonHeaders(res.headers);
    const me = await h().request('PUT', '/me');
    expect(me.status).toBe(405);
    expect(me.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    const el = await h().request('PUT', '/0b8e4a62-5d55-4c1c-9d5e-5c2b7e6a1a10/children');
    expect(el.status).toBe(405);
    expect(el.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    // TRACE and QUERY, which Fastify also routes, and a body that is not JSON: still 405, the body is never read.
    // (fetch refuses to send TRACE; node:http does not.)
    for (const method of ['TRACE', 'QUERY']) {
      const other = await new Promise<http.IncomingMessage>((resolve, reject) =>
        http
          .request(`${h().url}/register`, { method }, (res) => resolve(res.resume()))
          .on('error', reject)
          .end(),
      );
      expect(other.statusCode).toBe(405);
      expect(other.headers.allow).toBe('POST, OPTIONS');
    }
    const withBody = await h().request('DELETE', '/register', {
      raw: '{"type":',
      headers: { 'content-type': 'application/json' },
    });
    expect(withBody.status).toBe(405);
    expect(withBody.json.type).toBe(`${h().url}/error/405/method-not-allowed`);
    const preflight = await h().request('OPTIONS', '/', {
      raw: '{"type":',
      headers: { 'content-type': 'application/json' },
    });
    expect(preflight.status).toBe(204);
  });

  it('answers unknown paths with a 404 problem', async () => {
    for (const path of ['/no/such/path', '/not-a-uuid', '/error/999/nothing']) {
      const res = await h().request('GET', path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(res.json).toMatchObject({ type: `${h().url}/error/404/not-found`, title: 'Not Found', status: 404 });
      expectCommonHeaders(res.headers);
    }
  });

  it('answers requests the router or the HTTP parser refuse with a problem and the common headers', async () => {
    const badUrl = await h().request('GET', '/%zz');
    expect(badUrl.status).toBe(400);
    expect(badUrl.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expectCommonHeaders(badUrl.headers);
    expect(badUrl.json).toMatchObject({ type: `${h().url}/error/400/bad-content`, status: 400 });
    const long = await h().request('GET', `/${'a'.repeat(300)}`);
    expect(long.status).toBe(404);
    expectCommonHeaders(long.headers);
    expect(long.json).toMatchObject({ type: `${h().url}/error/404/not-found`, status: 404 });

    // Below Fastify: Node's HTTP parser. A raw exchange, since fetch cannot send these.
    const exchange = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(h().url).port), '127.0.0.1', () => socket.end(request));
        let text = '';
        socket
          .setEncoding('latin1')
          .on('data', (chunk) => (text += chunk))
          .on('close', () => resolve(text))
          .on('error', reject);
      });
    const parse = (text: string) => {
      const [head, body] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head!.split('\r\n');
      const headers = new Headers(
        lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]),
      );
      return { status: Number(statusLine!.split(' ')[1]), headers, json: JSON.parse(body!) };
    };
    const badMethod = parse(await exchange('FOO / HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(badMethod.status).toBe(400);
    expectCommonHeaders(badMethod.headers);
    expect(badMethod.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(badMethod.json).toMatchObject({ type: '/error/400/bad-content', title: 'Bad content', status: 400 });
    // HTTP/1.1 without Host: 400 (RFC 9112), as a problem with the common headers, not Node's bare answer.
    for (const path of ['/', '/error/404/not-found', '/no/such/path']) {
      const noHost = parse(await exchange(`GET ${path} HTTP/1.1\r\nConnection: close\r\n\r\n`));
      expect(noHost.status, path).toBe(400);
      expectCommonHeaders(noHost.headers);
      expect(noHost.json).toMatchObject({
        type: '/error/400/bad-content',
        status: 400,
        detail: expect.stringMatching(/Host/),
      });
    }
    const http10 = await exchange('GET /error/404/not-found HTTP/1.0\r\n\r\n');
    expect(http10).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(http10.split('\r\n\r\n')[1]!).type).toBe('/error/404/not-found');
    const huge = parse(await exchange(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`));
    expect(huge.status).toBe(431);
    expectCommonHeaders(huge.headers);
    expect(huge.json).toMatchObject({ type: 'about:blank', status: 431 });
    // CONNECT, which Node hands to a listener of its own (none would mean no answer at all): routed like any other
    // method, so a known path answers 405 with Allow and a proxy target 404; then the connection closes.
    const connect = parse(await exchange('CONNECT /register HTTP/1.1\r\nHost: x\r\n\r\n'));
    expect(connect.status).toBe(405);
    expect(connect.headers.get('allow')).toBe('POST, OPTIONS');
    expect(connect.headers.get('connection')).toBe('close');
    expectCommonHeaders(connect.headers);
    expect(connect.json).toMatchObject({
      type: expect.stringMatching(/\/error\/405\/method-not-allowed$/),
      status: 405,
    });
    const proxy = parse(await exchange('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
    expect(proxy.status).toBe(404);
    expectCommonHeaders(proxy.headers);
    expect(proxy.json).toMatchObject({ type: expect.stringMatching(/\/error\/404\/not-found$/), status: 404 });
  });

  it('rejects malformed JSON, wrong content types and oversized bodies with 400 bad-content', async () => {
    const malformed = await h().request('POST', '/register', {
      raw: '{"type": "User",',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.json.type).toBe(`${h().url}/error/400/bad-content`);
    expect(malformed.json.detail).toMatch(/Malformed request body/);
    const wrongType = await h().request('POST', '/register', {
      raw: 'type=User',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.json.detail).toMatch(/Content-Type/);
    const big = await h().request('POST', '/register', {
      raw: `{"x":"${'a'.repeat(9 * 1024 * 1024)}"}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(big.status).toBe(400);
    expect(big.json.detail).toMatch(/larger/);
  });

  it('answers bad credentials with 401 before a body error, except where the credentials are in the body', async () => {
    const { token } = await userWithToken(h(), 'precedence@foundation.dev');
    const unknownToken = `secret-token:${'1'.repeat(22)}`;
    const count = async () => (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const before = await count();
    const malformed = { raw: '{"type": "Doc",', headers: { 'content-type': 'application/json' } };
    for (const [method, path] of [
      ['POST', '/'],
      ['POST', '/search'],
      ['PATCH', '/0b8e4a62-5d55-4c1c-9d5e-5c2b7e6a1a10'],
    ] as const) {
      for (const [authorization, status] of [
        ['Bearer nonsense', 401],
        [`Bearer ${unknownToken}`, 401],
        [undefined, 401],
        [`Bearer ${token}`, 400],
      ] as const) {
        const res = await h().request(method, path, {
          ...malformed,
          headers: { ...malformed.headers, ...(authorization ? { authorization } : {}) },
        });
        expect(res.status, `${method} ${path} with ${authorization}`).toBe(status);
        expect(res.json.type).toBe(`${h().url}/error/${status}/${status === 401 ? 'unauthorized' : 'bad-content'}`);
      }
    }
    const wrongType = await h().request('POST', '/', {
      token: unknownToken,
      raw: 'x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(wrongType.status).toBe(401);
    // /register, POST /token and POST /change-password ignore the header: their body is the credential.
    for (const path of ['/register', '/token', '/change-password']) {
      const res = await h().request('POST', path, {
        ...malformed,
        headers: { ...malformed.headers, authorization: `Bearer ${unknownToken}` },
      });
      expect(res.status).toBe(400);
      expect(res.json.type).toBe(`${h().url}/error/400/bad-content`);
    }
    expect(await count()).toBe(before);
  });

  it('serves the system and error endpoints without credentials, but refuses a bad token', async () => {
    const { token } = await userWithToken(h(), 'system@foundation.dev');
    for (const path of [
      '/instance-configuration',
      '/graph-structure',
      '/.well-known/security.txt',
      '/error/404/not-found',
      '/error/401/unauthorized',
    ]) {
      expect((await h().request('GET', path)).status).toBe(200);
      expect((await h().request('GET', path, { token })).status).toBe(200);
      for (const authorization of ['Bearer nonsense', `Bearer secret-token:${'1'.repeat(22)}`, 'Basic eDp5']) {
        const res = await h().request('GET', path, { headers: { authorization } });
        expect(res.status, `${path} with ${authorization}`).toBe(401);
        expect(res.json.type).toBe(`${h().url}/error/401/unauthorized`);
      }
    }
  });

  it('serves security.txt as UTF-8 text', async () => {
    const res = await h().request('GET', '/.well-known/security.txt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.text).toMatch(/^Contact: /m);
  });

  it('uses the configured base URL in problem types', async () => {
    // fetch cannot set Host; node:http can.
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get(`${h().url}/error/403/forbidden`, { headers: { host: 'example.test:9999' } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    expect(JSON.parse(body).type).toBe('http://example.test:9999/error/403/forbidden');
  });
});

describeBackends(
  'HTTP foundation with baseUrl',
  (h) => {
    it('takes {base_url} from the configuration when set', async () => {
      const res = await h().request('GET', '/nope/nope');
      expect(res.json.type).toBe('https://api.example.org/error/404/not-found');
    });
  },
  { settings: { baseUrl: 'https://api.example.org/' } },
);

describe('unexpected errors', () => {
  it('answer a 500 problem without internals, and are logged', async () => {
    const { Writable } = await import('node:stream');
    const pino = (await import('pino')).default;
    const { buildApp } = await import('../../src/http/app.js');
    const { validateSettings } = await import('../../src/config/load.js');
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, cb) {
          lines.push(String(chunk));
          cb();
        },
      }),
    );
    const config = {
      settings: validateSettings({}),
      runtime: {
        port: 0,
        host: '127.0.0.1',
        dataDir: '/tmp',
        databaseUrl: null,
        anonymousUserId: null,
        logLevel: 'info',
        configPath: null,
        s3Credentials: null,
      },
    };
    // No database is needed for this route; of the services only the free-space guard (off) and the change feed,
    // which the app ends on close, are looked at.
    const events = { onError: () => {}, close: async () => {} };
    const app = await buildApp({ config, services: { capacity: { enabled: false }, events } as never, logger });
    app.get('/boom', async () => {
      throw new Error('database password is hunter2');
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const res = await fetch(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/boom`, {
        headers: { authorization: 'Bearer secret-token:abc' },
      });
      expect(res.status).toBe(500);
      expect(res.headers.get('cache-control')).toBe('no-cache, private');
      const text = await res.text();
      expect(JSON.parse(text)).toMatchObject({
        title: 'Internal Server Error',
        status: 500,
        detail: 'The server failed to handle the request.',
      });
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('at ');
      const log = lines.join('');
      expect(log).toContain('hunter2'); // the operator sees the cause
      expect(log).not.toContain('secret-token:abc'); // but never the credentials
      // Every line about the request names it (the request's logger is made lazily: src/http/request-logger.ts).
      const entries = lines.map((line) => JSON.parse(line) as { msg: string; reqId?: string; level: number });
      const unexpected = entries.find((e) => e.msg === 'unexpected error')!;
      expect(unexpected.level).toBe(50);
      expect(unexpected.reqId).toMatch(/^req-/);
      expect(entries.filter((e) => e.reqId === unexpected.reqId).map((e) => e.msg)).toEqual([
        'incoming request',
        'unexpected error',
        'request completed',
      ]);
    } finally {
      await app.close();
    }
  });
});
