// A chunked request body far over the file limit: the server answers 400 once the limit is passed, and goes on
// reading and discarding until the client has sent the whole body (or the lingering close's time bound passes).
// Node's fetch of a stream writes the whole body before it reads the answer; cut off at a byte bound while it still
// wrote, it saw EPIPE instead of the 400 (a chunked body has no length that would have told the server to expect
// it). Content-Length bodies and the bounds of the lingering close: lingering-close.test.ts.
import net from 'node:net';
import { beforeAll, expect, it } from 'vitest';
import { LINGER_MAX_BYTES } from '../../src/http/lingering-close.js';
import { temporaryBlobs } from '../helpers/blobs.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

const MiB = 1024 * 1024;
/** Far more than the lingering close's byte bound, and sent at the speed of the loopback. */
const BODY_BYTES = LINGER_MAX_BYTES + 56 * MiB;

interface Exchange {
  status: number | null;
  body: string;
  /** The first socket error the client saw. */
  error: string | null;
  /** Body bytes the client wrote before the connection closed, and whether the terminal chunk went out. */
  sentBody: number;
  finished: boolean;
}

/**
 * One chunked PUT over a raw socket: 64 KiB chunks as fast as the kernel takes them, then the terminal chunk, while
 * it reads whatever arrives; it closes its side once its body is sent (the answer says `Connection: close`).
 */
function chunkedPut(h: Harness, path: string, headers: Record<string, string>): Promise<Exchange> {
  const { port } = new URL(h.url);
  const socket = net.connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
  const chunks: Buffer[] = [];
  let error: string | null = null;
  let sentBody = 0;
  let finished = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', (e: NodeJS.ErrnoException) => {
    error ??= e.code ?? e.message;
  });
  socket.once('connect', () => {
    const fields = { host: 'x', 'transfer-encoding': 'chunked', ...headers };
    socket.write(
      `PUT ${path} HTTP/1.1\r\n${Object.entries(fields)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`,
    );
    const block = Buffer.alloc(64 * 1024, 0x61);
    const frame = Buffer.concat([Buffer.from(`${block.length.toString(16)}\r\n`), block, Buffer.from('\r\n')]);
    const pump = () => {
      while (!socket.destroyed && socket.writable && sentBody < BODY_BYTES) {
        sentBody += block.length;
        if (sentBody >= BODY_BYTES) {
          socket.write(frame);
          socket.end('0\r\n\r\n', () => (finished = true));
          return;
        }
        if (!socket.write(frame)) return;
      }
    };
    socket.on('drain', pump);
    pump();
  });
  return new Promise((resolve) =>
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      resolve({
        status: end === -1 ? null : Number(text.slice(0, end).split(' ')[1]),
        body: end === -1 ? '' : text.slice(end + 4),
        error,
        sentBody,
        finished,
      });
    }),
  );
}

describeBackends(
  'a chunked body far over the file limit',
  (h) => {
    let token: string;
    let id: string;

    beforeAll(async () => {
      ({ token } = await userWithToken(h(), 'alice@lingering.dev'));
      id = await createElement(h(), token, { type: 'Doc', data: { name: 'target' } });
    });

    it('is read to its end after the 400, so the client sends it whole and reads the answer', async () => {
      for (let i = 0; i < 3; i++) {
        const got = await chunkedPut(h(), `/${id}/file`, { authorization: `Bearer ${token}`, 'upload-complete': '?1' });
        expect({ error: got.error, finished: got.finished, status: got.status }).toEqual({
          error: null,
          finished: true,
          status: 400,
        });
        expect(JSON.parse(got.body).detail).toMatch(/larger than the maximum of 1048576 bytes/);
      }
      const element = await h().request('GET', `/${id}`, { token });
      expect(element.json.data).toEqual({ name: 'target', created: expect.any(String), updated: expect.any(String) });
      expect(await temporaryBlobs(h())).toEqual([]);
      // The instance answers as before.
      expect((await h().request('GET', `/${id}`, { token })).status).toBe(200);
    }, 60_000);
  },
  { settings: { file: { maxFileSizeInBytes: MiB } } },
);
