// Answers given while the request body is still arriving (a file over the limit, bad credentials, a missing
// element, a JSON body over its limit) reach the client: the server sends the answer, then reads and discards the
// rest of the body up to a bound in bytes and in time before it closes the connection (a lingering close, as
// nginx does). Closing at once, with the body still arriving, made the kernel reset the connection, and the client
// lost the answer with it (EPIPE or ECONNRESET instead of the 400). A client that sends beyond the bound is cut off.
import { execFile } from 'node:child_process';
import net from 'node:net';
import { beforeAll, expect, it } from 'vitest';
import { LINGER_MAX_BYTES, LINGER_MAX_MS } from '../../src/http/lingering-close.js';
import { temporaryBlobs } from '../helpers/blobs.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

const MiB = 1024 * 1024;
const TRIES = Number(process.env.LINGER_TRIES ?? 20);

interface Answer {
  status: number | null;
  headers: Record<string, string>;
  body: string;
  /** The whole answer arrived: headers and Content-Length bytes of body. */
  complete: boolean;
  /** The first socket error the client saw (after or instead of the answer). */
  error: string | null;
  /** Bytes the client handed to the kernel before the connection closed. */
  sent: number;
  /** From the first byte of the answer to the connection's close, in ms (null: no answer). */
  answeredToClosedMs: number | null;
}

type Sender =
  /** The head, then 64 KiB writes as fast as the kernel takes them, until the connection closes. */
  | { kind: 'endless' }
  /** The head, then 1 KiB every 100 ms until the connection closes. */
  | { kind: 'trickle' };

/** One request over a raw socket: the client reads whatever arrives while it writes, and never stops writing. */
function rawExchange(h: Harness, head: string, sender: Sender): Promise<Answer> {
  const { port } = new URL(h.url);
  // Half-open allowed: the client goes on sending after the server's FIN, as one that ignores the answer would.
  const socket = net.connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
  const chunks: Buffer[] = [];
  let error: string | null = null;
  let answeredAt: number | null = null;
  socket.on('data', (chunk: Buffer) => {
    answeredAt ??= Date.now();
    chunks.push(chunk);
  });
  socket.on('error', (e: NodeJS.ErrnoException) => {
    error ??= e.code ?? e.message;
  });
  socket.once('connect', () => {
    socket.write(head);
    if (sender.kind === 'endless') {
      const block = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!socket.destroyed && socket.writable && socket.write(block));
      };
      socket.on('drain', pump);
      pump();
    } else {
      const block = Buffer.alloc(1024, 0x61);
      const timer = setInterval(() => {
        if (socket.destroyed || !socket.writable) clearInterval(timer);
        else socket.write(block);
      }, 100);
      socket.once('close', () => clearInterval(timer));
    }
  });
  return new Promise((resolve) => {
    socket.once('close', () => {
      const closedAt = Date.now();
      const text = Buffer.concat(chunks);
      const end = text.indexOf('\r\n\r\n');
      const headers: Record<string, string> = {};
      let status: number | null = null;
      let body = '';
      let complete = false;
      if (end !== -1) {
        const [statusLine, ...lines] = text.subarray(0, end).toString('latin1').split('\r\n');
        status = Number(statusLine!.split(' ')[1]);
        for (const line of lines) {
          const colon = line.indexOf(':');
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        const length = Number(headers['content-length']);
        const rest = text.subarray(end + 4);
        body = rest.subarray(0, length).toString('utf8');
        complete = rest.length >= length;
      }
      resolve({
        status,
        headers,
        body,
        complete,
        error,
        sent: socket.bytesWritten - socket.writableLength,
        answeredToClosedMs: answeredAt === null ? null : closedAt - answeredAt,
      });
    });
  });
}

const head = (method: string, path: string, headers: Record<string, string | number>) =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

/**
 * The tries of one client, in a process of its own: the reset only loses the answer when the client writes while
 * the server closes, which a client sharing the server's event loop never does.
 */
const CLIENT = `
import net from 'node:net';
const { url, method, path, headers, size, tries, mode } = JSON.parse(process.argv[1]);
const body = Buffer.alloc(size, 0x61);
const results = [];
for (let i = 0; i < tries; i++) {
  if (mode === 'fetch') {
    try {
      const res = await fetch(url + path, { method, headers, body });
      results.push({ status: res.status, type: res.headers.get('content-type'), text: await res.text(), error: null });
    } catch (e) {
      results.push({ status: null, text: '', error: e.cause?.code ?? e.cause?.message ?? String(e) });
    }
    continue;
  }
  const { port, hostname } = new URL(url);
  results.push(await new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname);
    const chunks = [];
    let error = null;
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (e) => { error ??= e.code ?? e.message; });
    socket.on('connect', () => {
      const fields = { host: 'x', ...headers, 'content-length': size };
      socket.write(method + ' ' + path + ' HTTP/1.1\\r\\n' +
        Object.entries(fields).map(([k, v]) => k + ': ' + v + '\\r\\n').join('') + '\\r\\n');
      socket.write(body);
    });
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\\r\\n\\r\\n');
      if (end === -1) return resolve({ status: null, text: '', error, complete: false });
      const head = all.subarray(0, end).toString('latin1');
      const length = Number(/content-length: (\\d+)/i.exec(head)?.[1]);
      const rest = all.subarray(end + 4);
      resolve({
        status: Number(head.split(' ')[1]),
        type: /content-type: ([^\\r]*)/i.exec(head)?.[1] ?? null,
        connection: /connection: ([^\\r]*)/i.exec(head)?.[1] ?? null,
        text: rest.subarray(0, length).toString('utf8'),
        complete: rest.length >= length,
        error,
      });
    });
  }));
}
process.stdout.write(JSON.stringify(results));
`;

interface TryResult {
  status: number | null;
  type?: string | null;
  connection?: string | null;
  text: string;
  complete?: boolean;
  error: string | null;
}

function clientTries(spec: {
  url: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  size: number;
  tries: number;
  mode: 'fetch' | 'raw';
}): Promise<TryResult[]> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', CLIENT, JSON.stringify(spec)],
      { maxBuffer: 64 * MiB },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}: ${stderr}`)) : resolve(JSON.parse(stdout)),
    );
  });
}

/** `request` once with fetch: the answer, or the error fetch failed with. */
async function fetchOnce(url: string, init: RequestInit) {
  try {
    const res = await fetch(url, init);
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type'), text, error: null };
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { status: null, type: null, text: '', error: cause?.code ?? cause?.message ?? String(error) };
  }
}

/** A request body as a stream: fetch sends it chunked (no Content-Length). */
function streamed(total: number): ReadableStream<Uint8Array> {
  let left = total;
  return new ReadableStream({
    pull(controller) {
      const n = Math.min(left, 256 * 1024);
      if (n === 0) return controller.close();
      left -= n;
      controller.enqueue(new Uint8Array(n).fill(0x61));
    },
  });
}

describeBackends(
  'answers before the request body has arrived',
  (h) => {
    let token: string;
    let id: string;
    const missing = '0b9f6a54-0d4b-4c21-9d59-3e1f0d3b7a11';

    beforeAll(async () => {
      ({ token } = await userWithToken(h(), 'alice@lingering.dev'));
      id = await createElement(h(), token, { type: 'Doc', data: { name: 'target' } });
    });

    /**
     * Each try, from another process, reads the whole problem document of `status` and `slug`: with fetch, and with a
     * raw socket that writes the whole body of `size` bytes (with its Content-Length) while it reads.
     */
    async function everyTryIsAnswered(
      method: string,
      path: string,
      headers: Record<string, string>,
      status: number,
      slug: string,
      size = 4 * MiB,
    ) {
      const failures: string[] = [];
      for (const mode of ['fetch', 'raw'] as const) {
        const results = await clientTries({ url: h().url, method, path, headers, size, tries: TRIES, mode });
        expect(results).toHaveLength(TRIES);
        for (const [i, got] of results.entries()) {
          if (got.status !== status || (mode === 'raw' && !got.complete) || !got.text.includes(`/error/${status}/`)) {
            failures.push(`${mode} ${i}: ${got.status ?? got.error} ${got.text}`);
            continue;
          }
          expect(got.type).toBe('application/problem+json; charset=utf-8');
          if (mode === 'raw') expect(got.connection).toBe('close');
          expect(JSON.parse(got.text)).toMatchObject({
            status,
            type: expect.stringContaining(`/error/${status}/${slug}`),
          });
        }
      }
      expect(failures).toEqual([]);
    }

    it('a direct upload over the file limit: every try reads the whole 400, and nothing is stored', async () => {
      await everyTryIsAnswered(
        'POST',
        `/${id}/file`,
        { authorization: `Bearer ${token}`, 'upload-complete': '?1' },
        400,
        'bad-content',
      );
      const element = await h().request('GET', `/${id}`, { token });
      expect(element.status).toBe(200);
      expect(element.json.data).toEqual({ name: 'target', created: expect.any(String), updated: expect.any(String) });
      const { rows } = await h().db.query<{ file: unknown }>('SELECT file FROM elements WHERE id = $1', [id]);
      expect(rows[0]!.file).toBeNull();
      expect(await temporaryBlobs(h())).toEqual([]);
    });

    it('bad credentials with a body: every try reads the whole 401', async () => {
      await everyTryIsAnswered(
        'POST',
        `/${id}/file`,
        { authorization: 'Bearer 1111111111111111111111', 'upload-complete': '?1' },
        401,
        'unauthorized',
      );
    });

    it('an upload to a missing element, or to a path that names none: every try reads the whole 404', async () => {
      await everyTryIsAnswered(
        'POST',
        `/${missing}/file`,
        { authorization: `Bearer ${token}`, 'upload-complete': '?1' },
        404,
        'not-found',
        // Within the file limit: the size is checked before the element is looked up.
        MiB,
      );
      await everyTryIsAnswered('POST', '/not-an-id/file', { 'upload-complete': '?1' }, 404, 'not-found');
    });

    it('a chunked upload over the file limit is read up to the limit, then answered 400', async () => {
      for (let i = 0; i < 5; i++) {
        const got = await fetchOnce(`${h().url}/${id}/file`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'upload-complete': '?1' },
          body: streamed(4 * MiB),
          duplex: 'half',
        } as RequestInit);
        expect([got.error, got.status]).toEqual([null, 400]);
        expect(JSON.parse(got.text).detail).toMatch(/larger than the maximum of 1048576 bytes/);
      }
    });

    it('a JSON body over its limit, chunked: the whole 400', async () => {
      for (let i = 0; i < 5; i++) {
        const got = await fetchOnce(`${h().url}/${id}`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: streamed(9 * MiB),
          duplex: 'half',
        } as RequestInit);
        expect([got.error, got.status]).toEqual([null, 400]);
        expect(JSON.parse(got.text).detail).toMatch(/larger than this endpoint accepts/);
      }
    });

    it('an answer that finds the body complete closes no connection', async () => {
      const res = await fetch(`${h().url}/${id}/file`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'upload-complete': '?1' },
        body: new Uint8Array(Buffer.from('small enough')),
      });
      expect(res.status).toBe(201);
      expect(res.headers.get('connection')).not.toBe('close');
      await res.arrayBuffer();
      await h().request('DELETE', `/${id}/file`, { token });
    });

    it('a client that sends far beyond the byte bound is cut off soon after it, having read the answer', async () => {
      const got = await rawExchange(
        h(),
        head('POST', `/${id}/file`, {
          authorization: `Bearer ${token}`,
          'upload-complete': '?1',
          'content-length': 64 * 1024 * MiB,
        }),
        { kind: 'endless' },
      );
      expect(got.status).toBe(400);
      expect(got.complete).toBe(true);
      expect(JSON.parse(got.body).detail).toMatch(/larger than the maximum/);
      // The bound, plus what the kernel buffers on both sides of a loopback connection.
      expect(got.sent).toBeGreaterThan(LINGER_MAX_BYTES);
      expect(got.sent).toBeLessThan(LINGER_MAX_BYTES + 48 * MiB);
      expect(got.answeredToClosedMs).toBeLessThan(LINGER_MAX_MS);
      expect(['EPIPE', 'ECONNRESET']).toContain(got.error);
    });

    it('a client that keeps trickling is cut off at the time bound, having read the answer', async () => {
      const got = await rawExchange(
        h(),
        head('POST', `/${id}/file`, {
          authorization: `Bearer ${token}`,
          'upload-complete': '?1',
          'content-length': 64 * MiB,
        }),
        { kind: 'trickle' },
      );
      expect(got.status).toBe(400);
      expect(got.complete).toBe(true);
      expect(got.answeredToClosedMs).toBeGreaterThanOrEqual(LINGER_MAX_MS - 100);
      expect(got.answeredToClosedMs).toBeLessThan(LINGER_MAX_MS + 2000);
      // The client's writes after the close fail: the server closed the connection, not the client.
      expect(['EPIPE', 'ECONNRESET']).toContain(got.error);
      // The instance answers as before.
      expect((await h().request('GET', `/${id}`, { token })).status).toBe(200);
    }, 20_000);
  },
  { settings: { file: { maxFileSizeInBytes: MiB } } },
);
