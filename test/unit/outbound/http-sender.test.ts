// The webhook sender over real loopback sockets: every address a lookup gives is checked before the connection (a
// name that resolves inward after it was accepted gains nothing), redirects are failures, and an answer is read only
// so far. Retry-After as a receiver may send it.
import { describe, expect, it } from 'vitest';
import { AddressPolicy } from '../../../src/outbound/address-policy.js';
import { HttpSender, type Resolve, retryAfterSeconds } from '../../../src/outbound/http-sender.js';
import { startReceiver } from '../../helpers/receiver.js';

describe('HttpSender', () => {
  it('refuses at delivery a name that resolved to a public address when it was checked and to loopback now', async () => {
    const receiver = await startReceiver();
    try {
      const answers = [[{ address: '93.184.215.14', family: 4 }], [{ address: '127.0.0.1', family: 4 }]];
      let calls = 0;
      const resolve: Resolve = (_host, callback) => callback(null, answers[Math.min(calls++, 1)]!);
      const sender = new HttpSender(new AddressPolicy([]), 2000, resolve);
      const url = `http://hooks.example.test:${new URL(receiver.url).port}/hook`;
      expect(await sender.check(url)).toBeNull();
      const outcome = await sender.send({ url, headers: {}, body: '{}' });
      expect(outcome).toMatchObject({ status: null, error: 'blocked-address' });
      expect(await sender.check(url)).toMatch(/resolves to an address that may not be called/);
      expect(receiver.hits).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });

  it('follows no redirect, keeps the first KiB of an answer, and tells a refused connection', async () => {
    const receiver = await startReceiver();
    try {
      const sender = new HttpSender(new AddressPolicy(['127.0.0.1']), 2000);
      receiver.script.push(
        { status: 302, headers: { location: 'http://example.org/' } },
        { body: 'x'.repeat(100_000) },
        { status: 500, body: `\u0000${'y'.repeat(1022)}😀` },
      );
      const moved = await sender.send({ url: receiver.url, headers: { 'webhook-id': 'msg_1' }, body: '{"a":1}' });
      expect(moved).toMatchObject({ status: 302, error: 'redirect' });
      const long = await sender.send({ url: receiver.url, headers: {}, body: '{}' });
      expect(long.status).toBe(200);
      expect(long.response).toBe('x'.repeat(1024));
      // What the delivery log cannot store (U+0000, half of a pair cut at the KiB) is not kept.
      const odd = await sender.send({ url: receiver.url, headers: {}, body: '{}' });
      expect(odd).toMatchObject({ status: 500, error: null, response: `\ufffd${'y'.repeat(1022)}` });
      expect(receiver.hits).toHaveLength(3);
      expect(receiver.hits[0]).toMatchObject({
        body: '{"a":1}',
        headers: { 'webhook-id': 'msg_1', 'content-length': '7' },
      });
      const port = new URL(receiver.url).port;
      await receiver.close();
      const refused = await sender.send({ url: `http://127.0.0.1:${port}/hook`, headers: {}, body: '{}' });
      expect(refused).toMatchObject({ status: null, error: 'connection-refused' });
      const literal = new HttpSender(new AddressPolicy([]), 2000);
      expect(await literal.send({ url: `http://127.0.0.1:${port}/`, headers: {}, body: '{}' })).toMatchObject({
        error: 'blocked-address',
      });
    } finally {
      await receiver.close().catch(() => {});
    }
  });
});

describe('retryAfterSeconds', () => {
  // HTTP dates have whole seconds.
  const now = Math.floor(Date.now() / 1000) * 1000;
  const httpDate = (offsetMs: number) => new Date(now + offsetMs).toUTCString();
  it('reads delta-seconds and HTTP dates, and nothing else', () => {
    expect(retryAfterSeconds('120', now)).toBe(120);
    expect(retryAfterSeconds(' 7 ', now)).toBe(7);
    expect(retryAfterSeconds(httpDate(90_000), now)).toBe(90);
    expect(retryAfterSeconds(httpDate(-3_600_000), now)).toBe(0);
    expect(retryAfterSeconds(undefined, now)).toBeNull();
    expect(retryAfterSeconds('soon', now)).toBeNull();
    expect(retryAfterSeconds('-5', now)).toBeNull();
  });
});
