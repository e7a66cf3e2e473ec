// What keeps clients from holding the instance's connections (src/http/connection-guard.ts), on a Fastify app with
// the guard and a few routes of its own, over real sockets on 127.0.0.1: the connection cap, silent connections,
// stalled and slow request bodies, slow readers, and the lingering close after an early answer. The whole service
// behind the guard is tested in test/http/connections.test.ts and test/http/lingering-close.test.ts.
import { once } from 'node:events';
import net from 'node:net';
import { Writable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Settings } from '../../../src/config/schema.js';
import { ConnectionGuard, guardConnections } from '../../../src/http/connection-guard.js';
import { LingeringClose } from '../../../src/http/lingering-close.js';
import type { App } from '../../../src/http/types.js';

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

interface Guarded {
  port: number;
  guard: ConnectionGuard;
  lingering: LingeringClose;
  log: LogLine[];
  /** Answers every request waiting in GET /hold. */
  release(): void;
  close(): Promise<void>;
}

const BIG = Buffer.alloc(64 * 1024 * 1024, 'x');

let running: Guarded | null = null;
const clients = new Set<net.Socket>();
afterEach(async () => {
  // Connections that never sent a request would keep the server's close waiting.
  for (const socket of clients) socket.destroy();
  clients.clear();
  await running?.close();
  running = null;
});

async function guarded(server: Partial<Settings['server']>): Promise<Guarded> {
  const log: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) log.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const app = Fastify({ loggerInstance: pino({ level: 'info' }, sink) }).withTypeProvider<TypeBoxTypeProvider>();
  const lingering = new LingeringClose();
  const guard = guardConnections(
    app as unknown as App,
    {
      maxConnections: 1000,
      bodyIdleTimeoutInSeconds: 30,
      bodyMinBytesPerSecond: 0,
      bodyRateWindowInSeconds: 30,
      trustedProxies: [],
      forwardedHeader: 'x-forwarded-for',
      ...server,
    },
    lingering,
  );
  let holds: Array<() => void> = [];
  app.get('/', async () => 'ok');
  app.get('/hold', () => new Promise<string>((resolve) => holds.push(() => resolve('held'))));
  app.get('/big', async (_request, reply) => reply.type('application/octet-stream').send(BIG));
  // Reads the whole body (a stream), then answers its length.
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  app.post('/read', async (request) => {
    let bytes = 0;
    for await (const chunk of request.body as AsyncIterable<Buffer>) bytes += chunk.length;
    return { bytes };
  });
  // Answers before reading any of the body, as a refusal of a too large file does.
  app.post('/early', async (_request, reply) => reply.code(413).send({ refused: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as net.AddressInfo).port;
  running = {
    port,
    guard,
    lingering,
    log,
    release: () => {
      for (const hold of holds) hold();
      holds = [];
    },
    close: async () => {
      running?.release();
      await app.close();
    },
  };
  return running;
}

/**
 * A client socket that keeps what it receives, and notes whether the server closed it. `halfOpen`: the client goes
 * on sending after the server's FIN, as one that has not read the answer yet does.
 */
async function connect(port: number, halfOpen = false) {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: halfOpen });
  clients.add(socket);
  await once(socket, 'connect');
  const client = {
    socket,
    received: '',
    closed: false,
    error: null as NodeJS.ErrnoException | null,
    // (not events.once, which rejects on the 'error' before the close)
    ended: new Promise<void>((resolve) =>
      socket.once('close', () => {
        client.closed = true;
        resolve();
      }),
    ),
  };
  socket.on('data', (chunk: Buffer) => {
    client.received += chunk.toString('latin1');
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    client.error = error;
  });
  return client;
}

const request = (method: string, path: string, headers: Record<string, string> = {}) =>
  `${method} ${path} HTTP/1.1\r\nhost: test\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

/** Waits until `condition` holds, checking every 20 ms, for at most `ms`. */
async function until(condition: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the connection cap', () => {
  it('closes the oldest idle connection for a new one at the cap', async () => {
    const { port } = await guarded({ maxConnections: 2 });
    const silent = await connect(port);
    const keptAlive = await connect(port);
    keptAlive.socket.write(request('GET', '/'));
    await until(() => keptAlive.received.endsWith('ok'), 5000);
    const fresh = await connect(port);
    await silent.ended;
    fresh.socket.write(request('GET', '/'));
    await until(() => fresh.received.endsWith('ok'), 5000);
    expect(fresh.received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    // The next one closes the keep-alive connection, now the oldest idle one.
    const next = await connect(port);
    await keptAlive.ended;
    expect(next.closed).toBe(false);
  });

  it('closes the new connection when every connection is busy, and says so once', async () => {
    const server = await guarded({ maxConnections: 2 });
    const busy = [await connect(server.port), await connect(server.port)];
    for (const client of busy) client.socket.write(request('GET', '/hold'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let i = 0; i < 3; i++) {
      const refused = await connect(server.port);
      await refused.ended;
      expect(refused.received).toBe('');
    }
    const warnings = server.log.filter((line) => line.level === 40);
    expect(warnings).toEqual([
      expect.objectContaining({
        maxConnections: 2,
        msg: 'connections refused: server.maxConnections reached and every connection busy',
      }),
    ]);
    server.release();
    for (const client of busy) await until(() => client.received.endsWith('held'), 5000);
  });
});

describe('silent and slow clients', () => {
  it('closes a connection that sends nothing, and not one that sent a request', async () => {
    const { port } = await guarded({ bodyIdleTimeoutInSeconds: 1 });
    const started = Date.now();
    const silent = await connect(port);
    const used = await connect(port);
    used.socket.write(request('GET', '/'));
    await silent.ended;
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(silent.received).toBe('');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(used.closed).toBe(false);
    used.socket.write(request('GET', '/'));
    await until(() => used.received.split('ok').length === 3, 5000);
  });

  it('cuts off a request body that stalls, with a 408 problem, and closes the connection', async () => {
    const server = await guarded({ bodyIdleTimeoutInSeconds: 1 });
    const client = await connect(server.port);
    client.socket.write(
      request('POST', '/read', { 'content-type': 'application/octet-stream', 'content-length': '100' }),
    );
    client.socket.write('0123456789');
    await client.ended;
    const [head, body] = client.received.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(head).toMatch(/\r\ncontent-type: application\/problem\+json/);
    expect(head).toMatch(/\r\nconnection: close/);
    expect(JSON.parse(body!)).toEqual({
      type: 'about:blank',
      title: 'Request Timeout',
      status: 408,
      detail: 'The request body sent nothing for 1 s.',
    });
    expect(server.log).toContainEqual(
      expect.objectContaining({ msg: 'slow request body cut off', method: 'POST', url: '/read' }),
    );
  });

  it('cuts off a request body that arrives slower than the minimum rate', async () => {
    const server = await guarded({
      bodyIdleTimeoutInSeconds: 10,
      bodyMinBytesPerSecond: 1000,
      bodyRateWindowInSeconds: 1,
    });
    const client = await connect(server.port);
    client.socket.write(
      request('POST', '/read', { 'content-type': 'application/octet-stream', 'content-length': '100000' }),
    );
    const drip = setInterval(() => client.socket.write('x'), 100);
    try {
      await client.ended;
    } finally {
      clearInterval(drip);
    }
    expect(client.received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(client.received).toContain('"detail":"The request body arrived slower than 1000 bytes per second."');
  });

  it('lets a body that moves steadily arrive whole', async () => {
    const { port } = await guarded({
      bodyIdleTimeoutInSeconds: 1,
      bodyMinBytesPerSecond: 1000,
      bodyRateWindowInSeconds: 1,
    });
    const client = await connect(port);
    client.socket.write(
      request('POST', '/read', { 'content-type': 'application/octet-stream', 'content-length': String(4 * 65536) }),
    );
    for (let i = 0; i < 4; i++) {
      client.socket.write(Buffer.alloc(65536, 'y'));
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    await until(() => client.received.includes('{"bytes":262144}'), 5000);
    expect(client.received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  it('closes a connection whose client does not read the answer', async () => {
    const server = await guarded({ bodyIdleTimeoutInSeconds: 1 });
    const client = await connect(server.port);
    client.socket.pause();
    client.socket.write(request('GET', '/big'));
    await until(() => server.log.some((line) => line.msg === 'slow reader cut off'), 10_000);
    expect(server.log.find((line) => line.msg === 'slow reader cut off')).toMatchObject({
      verdict: 'idle',
      remoteAddress: '127.0.0.1',
    });
    const line = server.log.find((l) => l.msg === 'slow reader cut off')!;
    expect(line.bytesSent as number).toBeLessThan(BIG.length);
    expect(line.queued as number).toBeGreaterThan(0);
    client.socket.destroy();
  });
});

describe('the lingering close', () => {
  it('answers before the body has arrived, then reads the rest and closes gracefully, so the client sees the answer', async () => {
    const { port } = await guarded({});
    const client = await connect(port, true);
    const length = 4 * 1024 * 1024;
    client.socket.write(
      request('POST', '/early', { 'content-type': 'application/octet-stream', 'content-length': String(length) }),
    );
    // The client writes all of its body before it reads anything, as many do.
    for (let sent = 0; sent < length; sent += 65536) {
      if (!client.socket.write(Buffer.alloc(65536, 'z'))) await once(client.socket, 'drain');
    }
    await until(() => client.received.includes('{"refused":true}'), 10_000);
    expect(client.received).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
    expect(client.received).toMatch(/\r\nconnection: close\r\n/i);
    // The server has sent its FIN; the socket closes once the client ends its side.
    client.socket.end();
    await client.ended;
    expect(client.error).toBeNull();
  });

  it('drops connections still lingering when the instance shuts down', async () => {
    const server = await guarded({});
    const client = await connect(server.port, true);
    client.socket.write(
      request('POST', '/early', { 'content-type': 'application/octet-stream', 'content-length': '1000000' }),
    );
    client.socket.write(Buffer.alloc(1000, 'z'));
    await until(() => client.received.includes('{"refused":true}'), 5000);
    // Lingering: what the client still sends is read and discarded.
    client.socket.write(Buffer.alloc(1000, 'z'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(client.closed).toBe(false);
    expect(client.error).toBeNull();
    server.lingering.drop();
    // Dropped: the next bytes meet a closed socket (the kernel answers them with a reset, seen at a later write).
    await until(() => {
      if (!client.socket.destroyed) client.socket.write(Buffer.alloc(1000, 'z'));
      return client.error !== null;
    }, 5000);
    await client.ended;
    expect(['ECONNRESET', 'EPIPE']).toContain(client.error?.code);
  });
});

describe('ticks', () => {
  it('notices the shortest limit within a quarter of it, at most once a second', () => {
    const log = pino({ level: 'silent' });
    const tick = (idle: number, window: number) =>
      new ConnectionGuard(
        {
          maxConnections: 1,
          bodyIdleTimeoutInSeconds: idle,
          bodyMinBytesPerSecond: 0,
          bodyRateWindowInSeconds: window,
          trustedProxies: [],
          forwardedHeader: 'x-forwarded-for',
        },
        log,
        new LingeringClose(),
      ).tickMs;
    expect(tick(30, 30)).toBe(1000);
    expect(tick(1, 30)).toBe(250);
    expect(tick(30, 2)).toBe(500);
  });
});
