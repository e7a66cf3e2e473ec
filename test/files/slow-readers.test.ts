// Slow readers: a client that stops reading a download, or reads it slower than server.bodyMinBytesPerSecond, has
// its connection closed (so that slow readers cannot hold the instance's connections and descriptors), while one
// that keeps up gets every byte.
import { createHash } from 'node:crypto';
import net from 'node:net';
import { beforeAll, expect, it } from 'vitest';
import { attachFile, createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { noise, sha256 } from './fixtures.js';

const MiB = 1024 * 1024;
// Larger than what the kernel buffers on a loopback connection, so that a client that does not read holds the
// server up.
const SIZE = 48 * MiB;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Reading {
  /** Body bytes received, once the connection ended. */
  received: Promise<{ length: number; sha256: string; declared: number }>;
  /** Reads what has arrived (paused mode): at most the socket's buffer. */
  readSome(): void;
  /** Reads everything from now on. */
  flow(): void;
}

/** GET /<id>/file on a raw socket that reads only when told to. */
function download(h: Harness, token: string, id: string): Reading {
  const { port } = new URL(h.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.write(`GET /${id}/file HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  socket.pause();
  const hash = createHash('sha256');
  let head = Buffer.alloc(0);
  let declared = -1;
  let length = 0;
  const take = (chunk: Buffer) => {
    if (declared < 0) {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      declared = Number(/content-length: (\d+)/i.exec(head.subarray(0, end).toString('latin1'))?.[1] ?? -1);
      chunk = head.subarray(end + 4);
    }
    length += chunk.length;
    hash.update(chunk);
  };
  const received = new Promise<{ length: number; sha256: string; declared: number }>((resolve) => {
    socket.on('data', take);
    socket.on('error', () => {});
    socket.on('close', () => resolve({ length, sha256: hash.digest('hex'), declared }));
  });
  return {
    received,
    readSome() {
      // In paused mode each read() emits the chunk as 'data' too, which is where it is counted.
      while (socket.read() !== null);
    },
    flow() {
      socket.resume();
      // The answer is complete: nothing more is needed from this connection.
      const timer = setInterval(() => {
        if (declared >= 0 && length >= declared) {
          clearInterval(timer);
          socket.end();
        }
      }, 20);
      socket.once('close', () => clearInterval(timer));
    },
  };
}

const withFile = (h: () => Harness) => {
  const state: { token: string; id: string; bytes: Buffer } = { token: '', id: '', bytes: Buffer.alloc(0) };
  beforeAll(async () => {
    const alice = await userWithToken(h(), 'alice@slow-readers.dev');
    state.token = alice.token;
    state.id = await createElement(h(), alice.token, { type: 'Document', data: { name: 'big' } });
    state.bytes = noise(SIZE, 7);
    await attachFile(h(), alice.token, state.id, state.bytes, 'big.bin');
  });
  return state;
};

describeBackends(
  'slow readers: idle',
  (h) => {
    const file = withFile(h);

    it('closes the connection of a client that stops reading a download', async () => {
      const reading = download(h(), file.token, file.id);
      await sleep(3000);
      reading.flow();
      const got = await reading.received;
      expect(got.declared).toBe(SIZE);
      expect(got.length).toBeGreaterThan(0);
      expect(got.length).toBeLessThan(SIZE);
      // The service is unaffected: the file is still there, whole, for a client that reads it.
      const again = download(h(), file.token, file.id);
      again.flow();
      expect(await again.received).toEqual({
        length: SIZE,
        sha256: sha256(file.bytes).toString('hex'),
        declared: SIZE,
      });
    });

    it('sends every byte to a client that keeps reading', async () => {
      const reading = download(h(), file.token, file.id);
      const timer = setInterval(() => reading.readSome(), 5);
      const got = await Promise.race([
        reading.received,
        (async () => {
          // Read in small steps for longer than the idle time, then at full speed.
          await sleep(2500);
          clearInterval(timer);
          reading.flow();
          return reading.received;
        })(),
      ]);
      clearInterval(timer);
      expect(got).toEqual({ length: SIZE, sha256: sha256(file.bytes).toString('hex'), declared: SIZE });
    });
  },
  {
    settings: { server: { bodyIdleTimeoutInSeconds: 1, bodyMinBytesPerSecond: 0, bodyRateWindowInSeconds: 2 } },
    blobs: true,
  },
);

describeBackends(
  'slow readers: minimum rate',
  (h) => {
    const file = withFile(h);

    it('closes the connection of a client that reads slower than the minimum rate', async () => {
      const reading = download(h(), file.token, file.id);
      // About 1 MiB/s against a minimum of 8 MiB/s: never idle, always too slow.
      const timer = setInterval(() => reading.readSome(), 60);
      const started = Date.now();
      const got = await reading.received;
      clearInterval(timer);
      expect(got.length).toBeLessThan(SIZE);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    });
  },
  {
    settings: { server: { bodyIdleTimeoutInSeconds: 30, bodyMinBytesPerSecond: 8 * MiB, bodyRateWindowInSeconds: 2 } },
    blobs: true,
  },
);
