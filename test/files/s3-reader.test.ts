// The S3 store's GetObject handler (src/blob/s3-reader.ts). Against the real object store of the test run: a file
// version piped into an HTTP answer arrives whole through a client that reads in fits and starts (the buffers it lends
// come back and are used again), and one read as a stream gives chunks its reader may keep. Against a local HTTP
// server scripted byte by byte: the framings and connection behaviours a store may show that Ceph cannot be made to
// (chunked answers split anywhere, answers framed by the connection's end, a kept connection the store closed, a
// store that falls silent or cuts an answer short).
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { S3BlobStore } from '../../src/blob/s3-blob-store.js';
import type { SignedRequest } from '../../src/blob/s3-http.js';
import { ObjectReader } from '../../src/blob/s3-reader.js';
import { collect } from '../helpers/blobs.js';
import { emptyPrefix, newS3Prefix } from '../helpers/bucket.js';
import { blobStoresUnderTest } from '../helpers/harness.js';
import { noise } from './fixtures.js';

const MiB = 1024 * 1024;
const ELEMENT = '5d1f0e2a-1111-4222-8333-944445555666';
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Serves `body` through `open()` piped into the answer, and GETs it with a client that pauses now and then. The
 * answer's high-water mark is larger than the handler's pieces, so that its writes are accepted while the socket
 * still holds their bytes: a buffer used again before its write's callback would show in the bytes.
 */
async function throughAnswer(open: () => Promise<Readable>): Promise<Buffer> {
  const server = http.createServer({ highWaterMark: 4 * MiB }, async (_req, res) => {
    const body = await open();
    res.writeHead(200);
    body.pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as net.AddressInfo;
    return await new Promise<Buffer>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/' }, (res) => {
          const parts: Buffer[] = [];
          let n = 0;
          res.on('data', (chunk: Buffer) => {
            parts.push(chunk);
            // Every so often the client stops reading for a while: the server's writes back up.
            if (++n % 16 === 0) {
              res.pause();
              setTimeout(() => res.resume(), 20);
            }
          });
          res.on('end', () => resolve(Buffer.concat(parts)));
          res.on('error', reject);
        })
        .on('error', reject);
    });
  } finally {
    server.close();
  }
}

describe.skipIf(!blobStoresUnderTest().includes('s3'))('S3 GetObject handler against a real object store', () => {
  let prefix: string;
  let store: S3BlobStore;
  const bytes = noise(12 * MiB, 34);

  beforeAll(async () => {
    const s3 = inject('s3')!;
    prefix = newS3Prefix();
    store = new S3BlobStore({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: s3.bucket,
      prefix: `${prefix}/`,
      timeoutMs: 10_000,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    const temp = await store.write(
      (async function* () {
        for (let i = 0; i < bytes.length; i += MiB) yield bytes.subarray(i, i + MiB);
      })(),
      { maxBytes: bytes.length },
    );
    await (await store.replace(ELEMENT, temp, { previous: 'none', next: sha(bytes) })).finish();
    await store.discard(temp);
  });
  afterAll(() => emptyPrefix(`${prefix}/`));

  const open = async (range?: { start: number; end: number }) => (await store.open(ELEMENT, range, sha(bytes)))!.stream;

  it('pipes a version into an HTTP answer byte-exactly, also to a client that reads in fits and starts', async () => {
    for (let i = 0; i < 2; i++) expect(sha(await throughAnswer(() => open()))).toBe(sha(bytes));
    const ranged = await throughAnswer(() => open({ start: 5 * MiB + 3, end: 9 * MiB }));
    expect(ranged.equals(bytes.subarray(5 * MiB + 3, 9 * MiB + 1))).toBe(true);
  });

  it('gives a reader of the stream chunks of its own, which stay as they were', async () => {
    const stream = await open();
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(chunks.length).toBeGreaterThan(1);
    expect(sha(Buffer.concat(chunks))).toBe(sha(bytes));
  });

  it('stays usable after a reader that gave up halfway', async () => {
    const stream = await open();
    for await (const _chunk of stream) break; // destroys the stream after the first chunk
    expect(sha(await collect(await open()))).toBe(sha(bytes));
    expect(await store.open(ELEMENT, undefined, 'f'.repeat(64))).toBeNull();
  });
});

/** A store scripted per request: `answer` gets the request head, its number, and the socket to write to. */
async function scriptedStore(answer: (head: string, n: number, socket: net.Socket) => void) {
  const heads: string[] = [];
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let pending = '';
    socket.on('data', (data) => {
      pending += data.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        heads.push(head);
        answer(head, heads.length, socket);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const request: SignedRequest = {
    method: 'GET',
    protocol: 'http:',
    hostname: '127.0.0.1',
    port,
    path: '/bucket/some%20key',
    query: { 'x-id': 'GetObject', partNumber: null },
    headers: { 'x-amz-date': '20260101T000000Z', authorization: 'AWS4-HMAC-SHA256 signed' },
  };
  return {
    request,
    heads,
    connections: () => connections,
    closeAll: () => {
      for (const s of sockets) s.destroy();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

describe('S3 GetObject handler against a scripted HTTP server', () => {
  let stores: Array<{ close(): void }> = [];
  let readers: ObjectReader[] = [];
  const setUp = async (answer: Parameters<typeof scriptedStore>[0], timeoutMs = 5000) => {
    const store = await scriptedStore(answer);
    const reader = new ObjectReader(timeoutMs);
    stores.push(store);
    readers.push(reader);
    return { store, reader };
  };
  afterEach(() => {
    for (const r of readers) r.destroy();
    for (const s of stores) s.close();
    stores = [];
    readers = [];
  });

  it('reads a chunked answer that arrives in pieces, and keeps the connection for the next GET', async () => {
    const body = noise(300 * 1024, 5);
    const { store, reader } = await setUp(async (_head, _n, socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-Amz-Meta-A: 1\r\n');
      await sleep(10);
      socket.write('x-amz-meta-a: 2\r\nTransfer-Encoding: chunked\r\n\r\n');
      await sleep(10);
      const half = 150 * 1024;
      socket.write(`${half.toString(16)};ext=1\r\n`);
      socket.write(body.subarray(0, 1000));
      await sleep(10);
      socket.write(Buffer.concat([body.subarray(1000, half), Buffer.from('\r\n')]));
      socket.write(`${(body.length - half).toString(16)}\r\n`);
      socket.write(Buffer.concat([body.subarray(half), Buffer.from('\r\n0\r\nx-trailer: t\r')]));
      await sleep(10);
      socket.write('\n\r\n');
    });
    for (let i = 0; i < 2; i++) {
      const { response } = await reader.handle(store.request);
      expect(response.statusCode).toBe(200);
      expect(response.headers).toMatchObject({ 'content-type': 'application/octet-stream', 'x-amz-meta-a': '1, 2' });
      expect((await collect(response.body)).equals(body)).toBe(true);
    }
    expect(store.connections()).toBe(1);
    expect(store.heads[0]).toMatch(/^GET \/bucket\/some%20key\?partNumber&x-id=GetObject HTTP\/1\.1\r\n/);
    expect(store.heads[0]).toMatch(/\r\nhost: 127\.0\.0\.1:\d+\r\n/);
    expect(store.heads[0]).toContain('\r\nauthorization: AWS4-HMAC-SHA256 signed');
  });

  it('reads an answer framed by the end of the connection, and the next GET gets a new one', async () => {
    const { store, reader } = await setUp((_head, _n, socket) => {
      socket.end(
        'HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\n\r\n<Error><Code>NoSuchKey</Code></Error>',
      );
    });
    for (let i = 0; i < 2; i++) {
      const { response } = await reader.handle(store.request);
      expect(response.statusCode).toBe(404);
      expect((await collect(response.body)).toString()).toBe('<Error><Code>NoSuchKey</Code></Error>');
    }
    expect(store.connections()).toBe(2);
  });

  it('lets go of a kept connection the store closes, and sends a GET again when the store closes one under it', async () => {
    const { store, reader } = await setUp((_head, n, socket) => {
      // The second GET arrives on the kept connection just as the store closes it.
      if (n === 2) socket.destroy();
      else socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello');
    });
    const get = async () => (await collect((await reader.handle(store.request)).response.body)).toString();
    expect(await get()).toBe('hello');
    expect(await get()).toBe('hello');
    expect(store.connections()).toBe(2);
    store.closeAll();
    await sleep(50);
    expect(await get()).toBe('hello');
    expect(store.connections()).toBe(3);
    expect(store.heads).toHaveLength(4);
  });

  it('fails when the store falls silent, before the answer and in its body', async () => {
    const silent = await setUp(() => {}, 300);
    await expect(silent.reader.handle(silent.store.request)).rejects.toMatchObject({ name: 'TimeoutError' });

    const stalled = await setUp((_head, _n, socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789');
    }, 300);
    const { response } = await stalled.reader.handle(stalled.store.request);
    await expect(collect(response.body)).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it("does not count the time its reader pauses as the store's silence", async () => {
    const body = noise(2 * MiB, 9);
    const { store, reader } = await setUp((_head, _n, socket) => {
      socket.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
    }, 300);
    const { response } = await reader.handle(store.request);
    await sleep(1000);
    expect((await collect(response.body)).equals(body)).toBe(true);
  });

  it('fails a body the store cuts short, and one whose head is no HTTP', async () => {
    const cut = await setUp((_head, _n, socket) => {
      socket.end('HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly this');
    });
    const { response } = await cut.reader.handle(cut.store.request);
    await expect(collect(response.body)).rejects.toThrow(/closed the connection/);

    const garbage = await setUp((_head, _n, socket) => {
      socket.end('SMTP ready\r\n\r\n');
    });
    await expect(garbage.reader.handle(garbage.store.request)).rejects.toThrow(/no HTTP/);
  });

  it('lends its buffers to an HTTP answer and uses them again once written', async () => {
    const body = noise(6 * MiB, 11);
    const { store, reader } = await setUp((_head, _n, socket) => {
      socket.write(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
    });
    const got = await throughAnswer(async () => (await reader.handle(store.request)).response.body);
    expect(got.equals(body)).toBe(true);
  });
});
