// Every answer given before the server has read the whole request closes with a lingering close (issue 52 item 6):
// the 408 of a body sent too slowly, the 400 of a malformed request line and the 431 of headers over the limit
// reach a client that is still writing, whole, followed by a clean FIN, never a reset. Before, the socket was
// destroyed right after the answer was written, and the bytes still arriving made the kernel reset the connection.
import { execFile } from 'node:child_process';
import { beforeAll, expect, it } from 'vitest';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

const TRIES = Number(process.env.LINGER_TRIES ?? 10);

interface Exchange {
  status: number | null;
  headers: Record<string, string>;
  json: any;
  /** The whole answer arrived: headers and Content-Length bytes of body. */
  complete: boolean;
  /** The server's FIN arrived (the socket's 'end'). */
  fin: boolean;
  /** The first socket error the client saw. */
  error: string | null;
}

/**
 * The client, in a process of its own (a reset only loses the answer when it reaches the client before the client
 * has read the answer, which a client sharing the server's event loop never lets happen): `tries` times, it writes
 * `head` and `fill` more bytes at once, then `trickle` bytes every millisecond until the server's FIN arrives, and then ends its side, as an
 * HTTP client does once it has its answer and the server closes.
 */
const CLIENT = `
import { execFile } from 'node:child_process';
const { port, head, fill, trickle, tries } = JSON.parse(process.argv[1]);
const first = Buffer.concat([Buffer.from(head, 'latin1'), Buffer.alloc(fill, 0x62)]);
const results = [];
for (let i = 0; i < tries; i++)
  results.push(await new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const chunks = [];
    let error = null;
    let fin = false;
    let timer;
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (e) => { error ??= e.code ?? e.message; });
    socket.once('end', () => { fin = true; clearInterval(timer); socket.end(); });
    socket.once('connect', () => {
      socket.write(first);
      if (trickle > 0) timer = setInterval(() => socket.writable && socket.write(Buffer.alloc(trickle, 0x61)), 1);
    });
    socket.once('close', () => {
      clearInterval(timer);
      resolve({ answer: Buffer.concat(chunks).toString('base64'), fin, error });
    });
  }));
process.stdout.write(JSON.stringify(results));
`;

function parse({ answer, fin, error }: { answer: string; fin: boolean; error: string | null }): Exchange {
  const all = Buffer.from(answer, 'base64');
  const end = all.indexOf('\r\n\r\n');
  const headers: Record<string, string> = {};
  if (end === -1) return { status: null, headers, json: null, complete: false, fin, error };
  const [statusLine, ...lines] = all.subarray(0, end).toString('latin1').split('\r\n');
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length']);
  const rest = all.subarray(end + 4);
  const complete = rest.length >= length;
  const json = complete ? JSON.parse(rest.subarray(0, length).toString('utf8')) : null;
  return { status: Number(statusLine!.split(' ')[1]), headers, json, complete, fin, error };
}

/** `tries` exchanges of the client above with the harness's server. */
function exchanges(h: Harness, head: string, { fill = 0, trickle = 0 } = {}): Promise<Exchange[]> {
  const spec = { port: Number(new URL(h.url).port), head, fill, trickle, tries: TRIES };
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', CLIENT, JSON.stringify(spec)],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}: ${stderr}`)) : resolve(JSON.parse(stdout).map(parse)),
    );
  });
}

/** The answer is the whole problem document, then the server's FIN, and no error on the client's side. */
function expectCleanAnswer(got: Exchange, status: number, type: string) {
  expect({ status: got.status, complete: got.complete, fin: got.fin, error: got.error }).toEqual({
    status,
    complete: true,
    fin: true,
    error: null,
  });
  expect(got.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  expect(got.headers.connection).toBe('close');
  expect(got.headers['access-control-allow-origin']).toBe('*');
  expect(got.json).toMatchObject({ type, status });
}

describeBackends(
  'early answers close gracefully',
  (h) => {
    let token: string;
    let id: string;

    beforeAll(async () => {
      ({ token } = await userWithToken(h(), 'alice@early.dev'));
      id = await createElement(h(), token, { type: 'Doc' });
    });

    it('a body sent too slowly: the whole 408, then a FIN, while the client is still sending', async () => {
      const head =
        `PUT /${id}/file HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
        'Upload-Complete: ?1\r\nContent-Length: 1000000\r\n\r\n';
      // 20 bytes every millisecond at most, below the minimum of 100 000 a second: bytes are always on their way.
      for (const got of await exchanges(h(), head, { trickle: 20 })) {
        expectCleanAnswer(got, 408, 'about:blank');
        expect(got.json.detail).toBe('The request body arrived slower than 100000 bytes per second.');
      }
      // Nothing of the cut bodies was kept, and the instance answers as before.
      const element = await h().request('GET', `/${id}`, { token });
      expect(element.status).toBe(200);
      const { rows } = await h().db.query<{ file: unknown }>('SELECT file FROM elements WHERE id = $1', [id]);
      expect(rows[0]!.file).toBeNull();
    }, 60_000);

    it('a malformed request line followed by more bytes: the whole 400, then a FIN', async () => {
      for (const got of await exchanges(h(), 'NOT HTTP AT ALL\r\n', { fill: 1 << 20 })) {
        // No Host was parsed and no baseUrl is set: the type is relative.
        expectCleanAnswer(got, 400, '/error/400/bad-content');
        expect(got.json.detail).toBe('The request is not valid HTTP.');
      }
    });

    it('headers over the limit, sent in one piece with a body behind them: the whole 431, then a FIN', async () => {
      const head = `POST / HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(64 * 1024)}\r\nContent-Length: 1048576\r\n\r\n`;
      for (const got of await exchanges(h(), head, { fill: 1 << 20 })) {
        expectCleanAnswer(got, 431, 'about:blank');
        expect(got.json.detail).toBe('The request headers are larger than the server accepts.');
      }
      expect((await h().request('GET', `/${id}`, { token })).status).toBe(200);
    });
  },
  { settings: { server: { bodyIdleTimeoutInSeconds: 2, bodyMinBytesPerSecond: 100_000, bodyRateWindowInSeconds: 1 } } },
);
