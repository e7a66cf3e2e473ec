// Webhooks against the change feed over random graph changes: three people, each with a webhook (every change,
// everything they may read) and a GET /events stream, while they create, share, revoke, change and delete at random.
// After each step both channels of every person are waited for (a change of their own, committed after it), so each
// event was decided on the graph as the step left it. Then every webhook has sent exactly the events, in the order,
// that its owner's stream sent, and a change of an element reached a person exactly when GET showed it to them.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Follower, follow } from '../helpers/events.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

interface Person {
  user: User;
  receiver: Receiver;
  feed: Follower;
  marker: string;
  marks: number;
}

const STEPS = 24;
const ELEMENT_EVENT = /^element\./;

describeBackends(
  'webhooks under random graph changes',
  (h) => {
    beforeAll(() => h().services.dispatcher.start());
    afterAll(() => h().services.dispatcher.stop());

    it('send what the owner’s change feed sends, and a change only to who may read it', async () => {
      let seed = 20261202;
      const random = (n: number) => {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        return (seed >>> 16) % n;
      };
      const pick = <T>(list: readonly T[]): T => list[random(list.length)]!;
      const people: Person[] = [];
      for (let k = 0; k < 3; k++) {
        const user = await userWithToken(h(), `random${k}@webhook-access.dev`);
        const receiver = await startReceiver();
        const made = await h().request('POST', '/webhooks', { token: user.token, body: { url: receiver.url } });
        expect(made.status, made.text).toBe(201);
        const feed = follow(h().url, '/events', user.token);
        await feed.until((r) => r.length > 0);
        const marker = await createElement(h(), user.token, { type: 'Marker', data: { n: 0 } });
        people.push({ user, receiver, feed, marker, marks: 0 });
      }
      // Elements by the person who created them (who may therefore change, share and delete them).
      const owned = new Map<Person, string[]>(people.map((p) => [p, []]));
      const everCreated = new Set<string>();
      const grants: { by: Person; id: string }[] = [];
      // Per person, the changes they were shown by GET right after the step that made them: element id and n.
      const expected = new Map<Person, string[]>(people.map((p) => [p, []]));
      const hooked = (p: Person) => p.receiver.hits.filter((x) => ELEMENT_EVENT.test(x.json.type));

      const settle = async () => {
        for (const p of people) {
          p.marks++;
          const res = await h().request('PATCH', `/${p.marker}`, { token: p.user.token, body: { n: p.marks } });
          expect(res.status).toBe(204);
          const arrived = (data: any) => data?.id === p.marker && data.element?.data.n === p.marks;
          await eventually(async () => (hooked(p).some((x) => arrived(x.json.data)) ? true : null));
          await p.feed.until((r) => r.some((m) => arrived(m.data)));
        }
      };

      const steps: Record<string, (p: Person) => Promise<void>> = {
        create: async (p) => {
          const mine = owned.get(p)!;
          const parent = mine.length > 0 && random(2) === 0 ? pick(mine) : undefined;
          const id = await createElement(h(), p.user.token, { type: 'Doc', data: { n: 0 } }, parent);
          mine.push(id);
          everCreated.add(`${p.user.id} ${id}`);
        },
        share: async (p) => {
          const mine = owned.get(p)!;
          const to = pick(people.filter((q) => q !== p));
          if (mine.length === 0) return;
          const body = { type: 'HAS_READ_ACCESS', start: to.user.id, end: pick(mine) };
          grants.push({ by: p, id: await createElement(h(), p.user.token, body) });
        },
        revoke: async () => {
          if (grants.length === 0) return;
          const [grant] = grants.splice(random(grants.length), 1);
          expect((await h().request('DELETE', `/${grant!.id}`, { token: grant!.by.user.token })).status).toBe(204);
        },
        change: async (p) => {
          const mine = owned.get(p)!;
          if (mine.length === 0) return;
          const id = pick(mine);
          const n = 1 + random(1000);
          expect((await h().request('PATCH', `/${id}`, { token: p.user.token, body: { n } })).status).toBe(204);
          for (const q of people)
            if ((await h().request('GET', `/${id}`, { token: q.user.token })).status === 200)
              expected.get(q)!.push(`${id} ${n}`);
        },
        remove: async (p) => {
          const mine = owned.get(p)!;
          if (mine.length < 3) return;
          const [id] = mine.splice(random(mine.length), 1);
          expect((await h().request('DELETE', `/${id}`, { token: p.user.token })).status).toBe(204);
        },
      };
      const kinds = Object.keys(steps);
      for (let step = 0; step < STEPS; step++) {
        await steps[pick(kinds)]!(pick(people));
        await settle();
      }

      let shared = 0;
      for (const p of people) {
        const sent = hooked(p).map((x) => String(x.headers['webhook-id']).replace(/^msg_/, ''));
        expect(sent).toEqual(p.feed.changes().map((m) => m.id));
        const changes = hooked(p)
          .filter((x) => x.json.type === 'element.changed' && x.json.data.type === 'Doc')
          .map((x) => `${x.json.data.id} ${x.json.data.element.data.n}`);
        expect(changes).toEqual(expected.get(p));
        shared += changes.filter((c) => !everCreated.has(`${p.user.id} ${c.split(' ')[0]}`)).length;
      }
      // The walk reached what the test is about: someone was sent a change of another person's element.
      expect(shared).toBeGreaterThan(0);
      for (const p of people) {
        p.feed.close();
        await p.receiver.close();
      }
    });
  },
  { settings: { webhooks: { allowedHosts: ['127.0.0.1'], retryScheduleInSeconds: [10, 20], timeoutInSeconds: 1 } } },
);
