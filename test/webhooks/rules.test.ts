// The delivery rules of webhooks (docs/webhooks.md): access decided when an event is sent, a webhook that stops when
// its owner loses what it watches, timeouts and Retry-After, the per-user bound, one receiver never holding up
// another, and a reset for a webhook whose events were pruned while it was disabled.
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';

const SETTINGS = {
  webhooks: { allowedHosts: ['127.0.0.1'], retryScheduleInSeconds: [10, 20], timeoutInSeconds: 1, maxPerUser: 3 },
  events: { retentionInSeconds: 60 },
};

describeBackends(
  'webhook delivery rules',
  (h) => {
    let receiver: Receiver;
    let other: Receiver;
    beforeAll(() => h().services.dispatcher.start());
    afterAll(() => h().services.dispatcher.stop());
    beforeEach(async () => {
      [receiver, other] = [await startReceiver(), await startReceiver()];
    });
    afterEach(async () => {
      await receiver.close();
      await other.close();
    });
    const create = async (token: string, body: Record<string, unknown>, url = receiver.url) => {
      const res = await h().request('POST', '/webhooks', { token, body: { url, ...body } });
      expect(res.status, res.text).toBe(201);
      return res.json.id as string;
    };
    const webhook = async (token: string, id: string) => (await h().request('GET', `/webhooks/${id}`, { token })).json;
    const deliveries = async (token: string, id: string) =>
      (await h().request('GET', `/webhooks/${id}/deliveries`, { token })).json.items as any[];
    const patch = async (token: string, id: string, body: unknown) =>
      expect((await h().request('PATCH', `/${id}`, { token, body })).status).toBe(204);

    it('decides access when an event is sent: a grant opens, a revocation closes', async () => {
      const alice = await userWithToken(h(), 'alice@rules-access.dev');
      const bob = await userWithToken(h(), 'bob@rules-access.dev');
      const doc = await createElement(h(), bob.token, { type: 'Doc', data: { n: 0 } });
      const id = await create(alice.token, { events: ['changed', 'deleted'] });
      const ofDoc = () => receiver.hits.filter((x) => x.json.data.id === doc);
      // Access is decided when an event is sent, so each step waits until a change of alice's own, committed after
      // it, has arrived: the events before that marker were decided before the next step.
      const mine = await createElement(h(), alice.token, { type: 'Doc', data: {} });
      let marks = 0;
      const marker = async () => {
        marks++;
        await patch(alice.token, mine, { mark: marks });
        await eventually(async () =>
          receiver.hits.some((x) => x.json.data.id === mine && x.json.data.element?.data.mark === marks) ? true : null,
        );
      };
      await patch(bob.token, doc, { n: 1 });
      await marker();
      const grant = await createElement(h(), bob.token, { type: 'HAS_READ_ACCESS', start: alice.id, end: doc });
      await patch(bob.token, doc, { n: 2 });
      await marker();
      expect((await h().request('DELETE', `/${grant}`, { token: bob.token })).status).toBe(204);
      await patch(bob.token, doc, { n: 3 });
      expect((await h().request('DELETE', `/${doc}`, { token: bob.token })).status).toBe(204);
      await marker();
      expect(ofDoc().map((x) => [x.json.type, x.json.data.element.data.n])).toEqual([['element.changed', 2]]);
      await h().request('DELETE', `/webhooks/${id}`, { token: alice.token });
    });

    it('stops a webhook whose owner can no longer read the parent it watches', async () => {
      const alice = await userWithToken(h(), 'alice@rules-parent.dev');
      const bob = await userWithToken(h(), 'bob@rules-parent.dev');
      const folder = await createElement(h(), bob.token, { type: 'Folder', data: {} });
      const grant = await createElement(h(), bob.token, { type: 'HAS_READ_ACCESS', start: alice.id, end: folder });
      const id = await create(alice.token, { parent: folder });
      await createElement(h(), bob.token, { type: 'Doc', data: {} }, folder);
      await receiver.until(1);
      expect((await h().request('DELETE', `/${grant}`, { token: bob.token })).status).toBe(204);
      const stopped = await eventually(async () => {
        const w = await webhook(alice.token, id);
        return w.enabled ? null : w;
      });
      expect(stopped.disabledReason).toBe('The owner can no longer read the watched parent.');
    });

    it('retries a timeout, and waits as long as Retry-After says', async () => {
      const alice = await userWithToken(h(), 'alice@rules-timeout.dev');
      const doc = await createElement(h(), alice.token, { type: 'Doc', data: {} });
      const id = await create(alice.token, { events: ['changed'], id: [doc] });
      receiver.script.push({ delayMs: 3000 }, { status: 429, headers: { 'retry-after': '120' } });
      await patch(alice.token, doc, { n: 1 });
      const [timedOut] = await eventually(async () => {
        const items = await deliveries(alice.token, id);
        return items.length === 1 ? items : null;
      });
      expect(timedOut).toMatchObject({ status: null, error: 'timeout', attempt: 1 });
      expect(timedOut.durationMs).toBeGreaterThanOrEqual(900);
      h().clock.advance(12);
      const [throttled] = await eventually(async () => {
        const items = await deliveries(alice.token, id);
        return items.length === 2 ? items : null;
      });
      expect(throttled).toMatchObject({ status: 429, attempt: 2 });
      const wait = (Date.parse(throttled.nextRetry) - Date.parse(throttled.attempted)) / 1000;
      expect(wait).toBeGreaterThanOrEqual(119);
      // Not before: 25 s on is past the schedule's 20 s but not past Retry-After.
      h().clock.advance(25);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await deliveries(alice.token, id)).toHaveLength(2);
      h().clock.advance(100);
      await receiver.until(3);
      await h().request('DELETE', `/webhooks/${id}`, { token: alice.token });
    });

    it('holds a user to webhooks.maxPerUser, and one hung receiver holds up no other webhook', async () => {
      const alice = await userWithToken(h(), 'alice@rules-bounds.dev');
      const doc = await createElement(h(), alice.token, { type: 'Doc', data: {} });
      const hung = await create(alice.token, { events: ['changed'], id: [doc] });
      receiver.script.push({ delayMs: 5000 });
      const fine = await create(alice.token, { events: ['changed'], id: [doc] }, other.url);
      await create(alice.token, { events: ['changed'], id: [doc] }, other.url);
      const fourth = await h().request('POST', '/webhooks', { token: alice.token, body: { url: other.url } });
      expect([fourth.status, fourth.json.type]).toEqual([409, expect.stringMatching(/\/error\/409\/conflict$/)]);
      await patch(alice.token, doc, { n: 1 });
      await other.until(2);
      await receiver.until(1);
      // The hung receiver's attempt has not ended (its timeout is a second, and it is logged when it ends), yet the
      // other webhooks delivered.
      expect(await deliveries(alice.token, hung)).toHaveLength(0);
      await eventually(async () => ((await deliveries(alice.token, fine)).length === 1 ? true : null));
      const timedOut = await eventually(async () => (await deliveries(alice.token, hung))[0] ?? null);
      expect(timedOut).toMatchObject({ error: 'timeout', attempt: 1 });
      for (const w of (await h().request('GET', '/webhooks', { token: alice.token })).json.items)
        await h().request('DELETE', `/webhooks/${w.id}`, { token: alice.token });
    });

    it('sends one webhook.reset when what a disabled webhook missed was pruned, then goes on', async () => {
      const alice = await userWithToken(h(), 'alice@rules-reset.dev');
      const doc = await createElement(h(), alice.token, { type: 'Doc', data: {} });
      const id = await create(alice.token, { events: ['changed'], id: [doc] });
      await h().request('PATCH', `/webhooks/${id}`, { token: alice.token, body: { enabled: false } });
      await patch(alice.token, doc, { n: 1 });
      // Past the retention (60 s) and the retry schedule (30 s): a disabled webhook holds nothing back.
      h().clock.advance(100);
      expect(await h().services.events.prune()).toBeGreaterThan(0);
      await h().request('PATCH', `/webhooks/${id}`, { token: alice.token, body: { enabled: true } });
      const [reset] = await receiver.until(1);
      expect(reset!.json).toMatchObject({ type: 'webhook.reset', data: { webhook: id, cursor: expect.any(String) } });
      await patch(alice.token, doc, { n: 2 });
      const hits = await receiver.until(2);
      expect(hits[1]!.json.data.element.data.n).toBe(2);
      await h().request('DELETE', `/webhooks/${id}`, { token: alice.token });
    });
  },
  { settings: SETTINGS },
);
