// The connections cap: at server.maxConnections a new connection closes the oldest idle one (between requests,
// still sending headers, or silent), so that one client holding that many idle connections cannot shut everyone
// else out; only when every connection has a request in progress is the new one closed at once. A connection that
// sends nothing is closed after server.bodyIdleTimeoutInSeconds.
import net from 'node:net';
import { expect, it } from 'vitest';
import { describeBackends, type Harness } from '../helpers/harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Client {
  socket: net.Socket;
  /** Resolves when the server closes the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
}

function connect(h: Harness): Promise<Client> {
  const { port } = new URL(h.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  let closed = false;
  const done = new Promise<void>((resolve) => {
    socket.on('close', () => {
      closed = true;
      resolve();
    });
  });
  socket.on('error', () => {});
  socket.on('data', () => {});
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve({ socket, closed: done, isClosed: () => closed }));
    socket.once('error', reject);
  });
}

/** Sends one request on `client` and resolves with the status line of its answer (null: closed first). */
function ask(client: Client, request = 'GET /error/404/not-found HTTP/1.1\r\nHost: x\r\n\r\n'): Promise<string | null> {
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      client.socket.off('close', onClose);
      resolve(chunk.toString('latin1').split('\r\n')[0]!);
    };
    const onClose = () => {
      client.socket.off('data', onData);
      resolve(null);
    };
    client.socket.once('data', onData);
    client.socket.once('close', onClose);
    client.socket.write(request);
  });
}

/** A connection with a request in progress: its headers sent, its body not. */
async function busy(h: Harness): Promise<Client> {
  const client = await connect(h);
  client.socket.write(
    'POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type":',
  );
  return client;
}

const connections = (h: Harness) => new Promise<number>((r) => h.app.server.getConnections((_e, n) => r(n)));

describeBackends(
  'the connections cap',
  (h) => {
    it('a new connection closes the oldest idle one: silent, between requests, or still sending headers', async () => {
      const silent = await connect(h());
      const keptAlive = await connect(h());
      expect(await ask(keptAlive)).toBe('HTTP/1.1 200 OK');
      const trickling = await connect(h());
      trickling.socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
      await sleep(50);

      const fourth = await connect(h());
      await silent.closed;
      expect(await ask(fourth)).toBe('HTTP/1.1 200 OK');
      expect([keptAlive.isClosed(), trickling.isClosed()]).toEqual([false, false]);

      const fifth = await connect(h());
      await keptAlive.closed;
      expect(await ask(fifth)).toBe('HTTP/1.1 200 OK');
      for (const c of [trickling, fourth, fifth]) c.socket.destroy();
    });

    it('when every connection has a request in progress, a new one is closed at once and they are unharmed', async () => {
      const working = [await busy(h()), await busy(h()), await busy(h())];
      await sleep(50);
      const refused = await connect(h());
      await refused.closed;
      expect(working.map((c) => c.isClosed())).toEqual([false, false, false]);
      // The requests in progress are still answered.
      const status = await ask(
        working[0]!,
        '"Token","uniqueUserIdentifier":"nobody@connections.dev","password":"not the password"}'.padEnd(92, ' '),
      );
      expect(status).toBe('HTTP/1.1 401 Unauthorized');
      for (const c of working) c.socket.destroy();
      while ((await connections(h())) > 0) await sleep(20);
    });

    it('a connection that sends nothing is closed after the idle time', async () => {
      const started = Date.now();
      const silent = await connect(h());
      await silent.closed;
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(Date.now() - started).toBeLessThan(5000);
    });
  },
  { settings: { server: { maxConnections: 3, bodyIdleTimeoutInSeconds: 1 } } },
);
