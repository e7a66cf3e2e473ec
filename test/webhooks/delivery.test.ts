// Webhooks end to end: a real receiver on a loopback socket (allowed by webhooks.allowedHosts), deliveries signed as
// Standard Webhooks' own `verify` checks them, only what the owner may read, in commit order, retried on the
// schedule (the test's manual clock moves past each delay), a 410 that disables, ping and redelivery.
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';

const SETTINGS = {
  webhooks: { allowedHosts: ['127.0.0.1'], retryScheduleInSeconds: [10, 20], timeoutInSeconds: 2 },
};

describeBackends(
  'webhooks',
  (h) => {
    // A receiver of its own for each test: a webhook another test left behind cannot reach it.
    let receiver: Receiver;
    beforeAll(() => h().services.dispatcher.start());
    afterAll(() => h().services.dispatcher.stop());
    beforeEach(async () => {
      receiver = await startReceiver();
    });
    afterEach(() => receiver.close());

    const create = async (token: string, body: Record<string, unknown>) => {
      const res = await h().request('POST', '/webhooks', { token, body: { url: receiver.url, ...body } });
      expect(res.status, res.text).toBe(201);
      return res.json as { id: string; secret: string };
    };
    const deliveries = async (token: string, id: string) =>
      (await h().request('GET', `/webhooks/${id}/deliveries`, { token })).json.items as any[];
    const userToken = async (identifier: string) =>
      (
        await h().request('POST', '/token', {
          body: { type: 'Token', uniqueUserIdentifier: identifier, password: 'correct horse battery staple' },
        })
      ).json.token as string;
    const verified = (secret: string, hit: { headers: Record<string, unknown>; body: string }) =>
      new Webhook(secret).verify(hit.body, hit.headers as Record<string, string>);

    it('signs each delivery as Standard Webhooks verifies it, with the data GET /events sends', async () => {
      const alice = await userWithToken(h(), 'alice@hooks.dev');
      const { id, secret } = await create(alice.token, { events: ['created', 'changed'], description: 'sync' });
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const shown = await h().request('GET', `/webhooks/${id}`, { token: alice.token });
      expect(shown.status).toBe(200);
      expect(shown.json).toMatchObject({
        id,
        url: receiver.url,
        events: ['created', 'changed'],
        watch: {},
        enabled: true,
      });
      expect(shown.text).not.toContain(secret.slice(6));

      const doc = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'one' } });
      const element = await h().request('GET', `/${doc}`, { token: alice.token });
      const hits = await receiver.until(3);
      expect(hits.map((x) => [x.json.data.kind, x.json.data.type])).toEqual([
        ['node', 'Doc'],
        ['relation', 'OWNS'],
        ['relation', 'CREATED'],
      ]);
      const payload = verified(secret, hits[0]!) as any;
      expect(payload).toEqual({
        type: 'element.created',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        data: {
          change: 'created',
          id: doc,
          kind: 'node',
          type: 'Doc',
          etag: element.headers.get('etag'),
          element: element.json,
        },
      });
      expect(hits[0]!.headers['webhook-id']).toMatch(/^msg_\d+-\d+$/);
      expect(hits[0]!.headers['content-type']).toBe('application/json');
      // A tampered body fails verification: the signature covers it.
      expect(() => verified(secret, { ...hits[0]!, body: hits[0]!.body.replace('one', 'two') })).toThrow();
      // The node's OWNS and CREATED relations are created (and delivered) with it.
      const log = await eventually(async () => {
        const items = await deliveries(alice.token, id);
        return items.length === 3 ? items : null;
      });
      expect(log.map((d) => d.eventId)).toEqual(
        hits
          .slice(0, 3)
          .map((x) => x.headers['webhook-id'])
          .reverse(),
      );
      expect(log.at(-1)).toMatchObject({
        eventId: hits[0]!.headers['webhook-id'],
        eventType: 'element.created',
        status: 200,
        attempt: 1,
        error: null,
        nextRetry: null,
      });
      expect((await h().request('GET', `/webhooks/${id}`, { token: alice.token })).json.lastDelivery.status).toBe(200);
      // The metrics count the deliveries and say how many webhooks are enabled.
      const metrics = await h().services.metrics!.registry.metrics();
      expect(metrics).toMatch(/^trellis_webhook_deliveries_total\{outcome="success"\} [1-9]\d*$/m);
      expect(metrics).toMatch(/^trellis_webhooks_enabled [1-9]\d*$/m);
      expect(metrics).toMatch(/^trellis_webhook_lag_seconds \d/m);
      expect((await h().request('DELETE', `/webhooks/${id}`, { token: alice.token })).status).toBe(204);
    });

    it('sends only what the owner may read, and another user’s webhook is 404', async () => {
      const alice = await userWithToken(h(), 'alice@private-hooks.dev');
      const bob = await userWithToken(h(), 'bob@private-hooks.dev');
      const { id } = await create(alice.token, {});
      await createElement(h(), bob.token, { type: 'Secret', data: { name: 'bob only' } });
      const mine = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'mine' } });
      const hits = await receiver.until(1);
      // Bob's element was created first: had it been sent, it would have come first.
      expect(hits.map((x) => x.json.data.id)).toEqual([mine]);
      for (const [method, path] of [
        ['GET', `/webhooks/${id}`],
        ['PATCH', `/webhooks/${id}`],
        ['DELETE', `/webhooks/${id}`],
        ['GET', `/webhooks/${id}/deliveries`],
        ['POST', `/webhooks/${id}/ping`],
      ] as const) {
        const res = await h().request(method, path, { token: bob.token, ...(method === 'PATCH' ? { body: {} } : {}) });
        expect([method, path, res.status]).toEqual([method, path, 404]);
      }
      expect((await h().request('GET', '/webhooks', { token: bob.token })).json.totalItems).toBe(0);
      expect((await h().request('GET', '/webhooks', {})).status).toBe(401);
      // Watching an element the caller cannot read is 404, as for a missing one.
      const secret = await createElement(h(), bob.token, { type: 'Secret', data: {} });
      const refused = await h().request('POST', '/webhooks', {
        token: alice.token,
        body: { url: receiver.url, id: [secret] },
      });
      expect(refused.status).toBe(404);
      await h().request('DELETE', `/webhooks/${id}`, { token: alice.token });
    });

    it('retries a failure on the schedule with the same webhook-id, in order, and a 410 disables', async () => {
      const alice = await userWithToken(h(), 'alice@retries.dev');
      const doc = await createElement(h(), alice.token, { type: 'Doc', data: { n: 0 } });
      const { id } = await create(alice.token, { events: ['changed'], id: [doc] });
      const change = async (n: number) =>
        expect((await h().request('PATCH', `/${doc}`, { token: alice.token, body: { n } })).status).toBe(204);
      receiver.script.push({ status: 500, body: 'down' }, { reset: true });
      await change(1);
      await change(2);
      await receiver.until(1);
      // Nothing else is sent until the first event is answered 2xx.
      let log = await eventually(async () => {
        const items = await deliveries(alice.token, id);
        return items.length === 1 ? items : null;
      });
      expect(log[0]).toMatchObject({ status: 500, attempt: 1, response: 'down', nextRetry: expect.any(String) });
      h().clock.advance(12);
      await receiver.until(2);
      h().clock.advance(25);
      const hits = await receiver.until(4);
      expect(hits.map((x) => x.json.data.element.data.n)).toEqual([1, 1, 1, 2]);
      expect(new Set(hits.slice(0, 3).map((x) => x.headers['webhook-id'])).size).toBe(1);
      log = await eventually(async () => {
        const items = await deliveries(alice.token, id);
        return items.length === 4 ? items : null;
      });
      expect(log.map((d) => [d.attempt, d.status, d.error])).toEqual([
        [1, 200, null],
        [3, 200, null],
        [2, null, 'connection-reset'],
        [1, 500, null],
      ]);

      receiver.script.push({ status: 410 });
      await change(3);
      await receiver.until(5);
      const gone = await eventually(async () => {
        const w = (await h().request('GET', `/webhooks/${id}`, { token: alice.token })).json;
        return w.enabled ? null : w;
      });
      expect(gone.disabledReason).toBe('The receiver answered 410 Gone.');
      // Enabled again, it sends the event the 410 answered, and the ones after it.
      await change(4);
      const on = await h().request('PATCH', `/webhooks/${id}`, { token: alice.token, body: { enabled: true } });
      expect(on.json).toMatchObject({ enabled: true, disabledReason: null });
      const after = await receiver.until(7);
      expect(after.slice(5).map((x) => x.json.data.element.data.n)).toEqual([3, 4]);
      await h().request('DELETE', `/webhooks/${id}`, { token: alice.token });
    });

    it('pings and redelivers now; a rotated secret and the old one both sign', async () => {
      const alice = await userWithToken(h(), 'alice@ping.dev');
      const { id, secret } = await create(alice.token, {});
      const ping = await h().request('POST', `/webhooks/${id}/ping`, { token: alice.token });
      expect(ping.status).toBe(200);
      expect(ping.json).toMatchObject({ eventType: 'webhook.ping', status: 200, attempt: 1 });
      expect(verified(secret, receiver.hits[0]!)).toMatchObject({ type: 'webhook.ping', data: { webhook: id } });

      const rotated = await h().request('POST', `/webhooks/${id}/secret`, { token: alice.token });
      expect(rotated.status).toBe(200);
      const fresh = rotated.json.secret as string;
      expect(fresh).not.toBe(secret);
      const again = await h().request('POST', `/webhooks/${id}/deliveries/${ping.json.id}/redeliver`, {
        token: alice.token,
      });
      expect(again.json).toMatchObject({ eventId: ping.json.eventId, eventType: 'webhook.ping', status: 200 });
      const hit = receiver.hits[1]!;
      expect(hit.body).toBe(receiver.hits[0]!.body);
      expect(String(hit.headers['webhook-signature']).split(' ')).toHaveLength(2);
      expect(verified(fresh, hit)).toMatchObject({ type: 'webhook.ping' });
      expect(verified(secret, hit)).toMatchObject({ type: 'webhook.ping' });
      // Past the overlap only the new secret signs.
      h().clock.advance(86_401);
      const relogged = await userToken('alice@ping.dev');
      expect((await h().request('POST', `/webhooks/${id}/ping`, { token: relogged })).status).toBe(200);
      const late = receiver.hits[2]!;
      // (A day ahead on the test's clock: the signature is compared with the one each secret makes, since verify
      // would refuse the timestamp as too new.)
      const at = new Date(Number(late.headers['webhook-timestamp']) * 1000);
      const signed = (key: string) => new Webhook(key).sign(String(late.headers['webhook-id']), at, late.body);
      expect(late.headers['webhook-signature']).toBe(signed(fresh));
      expect(late.headers['webhook-signature']).not.toContain(signed(secret).slice(3));
      await h().request('DELETE', `/webhooks/${id}`, { token: relogged });
    });

    it('refuses bad input with a precise 400, and addresses that are not public', async () => {
      const alice = await userWithToken(h(), 'alice@bad-hooks.dev');
      const cases: [unknown, RegExp][] = [
        [{ url: 'ftp://example.org/' }, /http or https/],
        [{ url: 'http://user:pw@127.0.0.1/' }, /user name or password/],
        [{ url: receiver.url, events: ['nope'] }, /'events' holds "nope"/],
        [{ url: receiver.url, id: ['x'] }, /element id/],
        [{ url: receiver.url, extra: 1 }, /'extra' is not a property/],
        [{ url: receiver.url, description: 'a\u0000b' }, /U\+0000/],
        [{ url: receiver.url, id: [], parent: undefined }, /1 to 100/],
        [{ url: 'http://10.1.2.3/hook' }, /may not be called/],
        [{ url: 'http://[::1]:9/hook' }, /may not be called/],
      ];
      for (const [body, detail] of cases) {
        const res = await h().request('POST', '/webhooks', { token: alice.token, body });
        expect([res.status, res.json.type]).toEqual([400, expect.stringMatching(/\/error\/400\/bad-content$/)]);
        expect(res.json.detail).toMatch(detail);
      }
      expect((await h().request('GET', '/webhooks', { token: alice.token })).json.totalItems).toBe(0);
    });
  },
  { settings: SETTINGS },
);
