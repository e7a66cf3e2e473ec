// The change feed's bounds: subscribers per instance (503) and per user (429), a heartbeat on idle streams, and a
// client that reads too slowly has its stream ended instead of growing the server's memory.
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

/** Opens GET /events and returns its response, reading nothing of the body yet. */
const open = (url: string, token: string, signal: AbortSignal) =>
  fetch(`${url}/events`, { headers: { authorization: `Bearer ${token}` }, signal });

describeBackends(
  'change feed bounds',
  (h) => {
    it('refuses a user past maxSubscribersPerUser (429) and the instance past maxSubscribers (503)', async () => {
      const alice = await userWithToken(h(), 'alice@bounds.dev');
      const bob = await userWithToken(h(), 'bob@bounds.dev');
      const carol = await userWithToken(h(), 'carol@bounds.dev');
      const stop = new AbortController();
      try {
        expect((await open(h().url, alice.token, stop.signal)).status).toBe(200);
        const second = await h().request('GET', '/events', { token: alice.token });
        expect([second.status, second.json.type, second.headers.get('retry-after')]).toEqual([
          429,
          `${h().url}/error/429/too-many-requests`,
          '5',
        ]);
        expect((await open(h().url, bob.token, stop.signal)).status).toBe(200);
        const third = await h().request('GET', '/events', { token: carol.token });
        expect([third.status, third.headers.get('retry-after')]).toEqual([503, '5']);
      } finally {
        stop.abort();
      }
      // Closed streams free their places.
      await sleep(200);
      const stop2 = new AbortController();
      expect((await open(h().url, carol.token, stop2.signal)).status).toBe(200);
      stop2.abort();
    });

    it('sends a heartbeat comment on an idle stream', async () => {
      const alice = await userWithToken(h(), 'alice@heartbeat.dev');
      const stop = new AbortController();
      const res = await open(h().url, alice.token, stop.signal);
      const reader = res.body!.getReader();
      let text = '';
      const started = Date.now();
      while (!text.includes(': heartbeat') && Date.now() - started < 5000)
        text += new TextDecoder().decode((await reader.read()).value);
      stop.abort();
      expect(text).toContain('event: ready');
      expect(text).toContain(': heartbeat\n\n');
    });

    it('ends the stream of a client that does not read, and keeps serving the others', async () => {
      const alice = await userWithToken(h(), 'alice@slow.dev');
      const { port } = new URL(h().url);
      // A raw connection whose reading is paused: the kernel's buffers fill, then the server's.
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(`GET /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.token}\r\n\r\n`);
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.once('data', () => socket.pause());
      await sleep(200);
      expect(h().services.events.size).toBe(1);
      const big = 'x'.repeat(60_000);
      let ended = false;
      void closed.then(() => {
        ended = true;
      });
      for (let i = 0; i < 200 && h().services.events.size > 0; i++)
        await createElement(h(), alice.token, { type: 'Doc', data: { big, i } });
      await sleep(500);
      expect(h().services.events.size).toBe(0);
      socket.resume();
      await closed;
      expect(ended).toBe(true);
      // The instance still serves streams.
      const stop = new AbortController();
      expect((await open(h().url, alice.token, stop.signal)).status).toBe(200);
      stop.abort();
    }, 120_000);
  },
  {
    settings: {
      events: { maxSubscribers: 2, maxSubscribersPerUser: 1, heartbeatInSeconds: 1, maxBufferedBytes: 256 * 1024 },
    },
  },
);

describeBackends(
  'change feed streams and the connection cap',
  (h) => {
    it('a healthy stream is a busy connection: at the cap the idle ones are closed first, never the stream', async () => {
      const alice = await userWithToken(h(), 'alice@cap.dev');
      const { port } = new URL(h().url);
      const stream = connect(Number(port), '127.0.0.1');
      await new Promise((resolve) => stream.once('connect', resolve));
      let received = '';
      stream.on('data', (chunk: Buffer) => {
        received += chunk.toString();
      });
      stream.write(`GET /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.token}\r\n\r\n`);
      while (!received.includes('event: ready')) await sleep(20);
      // Silent connections up to the cap and past it: each new one closes the oldest silent one.
      const silent = [];
      for (let i = 0; i < 4; i++) {
        const s = connect(Number(port), '127.0.0.1');
        s.on('error', () => {});
        await new Promise((resolve) => s.once('connect', resolve));
        silent.push(s);
        await sleep(100);
      }
      await sleep(300);
      expect(silent.filter((s) => s.destroyed || s.readableEnded).length).toBeGreaterThan(0);
      expect(stream.destroyed).toBe(false);
      for (const s of silent) s.destroy();
      await sleep(100);
      // The stream still delivers.
      const doc = await createElement(h(), alice.token, { type: 'Doc' });
      const deadline = Date.now() + 5000;
      while (!received.includes(doc) && Date.now() < deadline) await sleep(20);
      expect(received).toContain(doc);
      stream.destroy();
    });
  },
  { settings: { server: { maxConnections: 3 } } },
);
