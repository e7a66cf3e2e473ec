// The change feed decides access per subscriber at delivery: a grant announces what became readable in one event,
// a revocation makes a watched element look deleted, and a subscriber never gets what it may not read at delivery
// (a property test over random graphs and changes).
import { afterEach, expect, it } from 'vitest';
import { type Follower, follow } from '../helpers/events.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

describeBackends('change feed access', (h) => {
  const open: Follower[] = [];
  const watch = (path: string, token: string) => {
    const f = follow(h().url, path, token);
    open.push(f);
    return f;
  };
  afterEach(() => {
    for (const f of open.splice(0)) f.close();
  });

  it('a grant announces once what became readable; a revoked grant makes a watched element look deleted', async () => {
    const alice = await userWithToken(h(), 'alice@grants.dev');
    const bob = await userWithToken(h(), 'bob@grants.dev');
    const doc = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'shared' } });
    const children: string[] = [];
    for (let i = 0; i < 5; i++)
      children.push(await createElement(h(), alice.token, { type: 'Page', data: { i } }, doc));
    const all = watch('/events', bob.token);
    await all.until((r) => r.length > 0);

    const grant = await createElement(h(), alice.token, { type: 'HAS_READ_ACCESS', start: bob.id, end: doc });
    await all.until((r) => r.some((m) => m.event === 'access'));
    expect(all.received.filter((m) => m.event === 'access')).toEqual([
      {
        event: 'access',
        id: all.received.find((m) => m.event === 'access')!.id,
        data: { change: 'access', root: null },
      },
    ]);
    // bob sees the grant itself (he is its start), not one event per element of the subtree.
    expect(all.changes().map((m) => [m.event, m.data.id])).toEqual([['created', grant]]);

    h().clock.advance(1);
    expect((await h().request('PATCH', `/${children[2]}`, { token: alice.token, body: { seen: true } })).status).toBe(
      204,
    );
    await all.until((r) => r.some((m) => m.event === 'changed' && m.data.id === children[2]));

    const byId = watch(`/events?id=${doc}`, bob.token);
    await byId.until((r) => r.length > 0);
    expect((await h().request('DELETE', `/${grant}`, { token: alice.token })).status).toBe(204);
    await byId.until((r) => r.some((m) => m.event === 'deleted'));
    const gone = byId.changes();
    // Exactly what a deletion of the node says.
    expect(gone.map((m) => m.data)).toEqual([{ change: 'deleted', id: doc, kind: 'node', type: 'Doc', etag: null }]);
    expect(gone[0]!.id).toMatch(/^\d+-\d+$/);
    // alice's next change of the node no longer reaches bob.
    h().clock.advance(1);
    expect((await h().request('PATCH', `/${doc}`, { token: alice.token, body: { after: 1 } })).status).toBe(204);
    const mark = await createElement(h(), bob.token, { type: 'Mark' });
    await all.until((r) => r.some((m) => m.data.id === mark));
    expect(all.changes().some((m) => m.data.id === doc)).toBe(false);
    expect(byId.changes()).toHaveLength(1);
  });

  it('never delivers an element its subscriber cannot read at delivery (random graphs and changes)', async () => {
    const users = await Promise.all(['u0', 'u1', 'u2'].map((u) => userWithToken(h(), `${u}@prop.dev`)));
    const group = await createElement(h(), users[0]!.token, { type: 'Group' });
    const feeds = users.map((u) => watch('/events', u.token));
    await Promise.all(feeds.map((f) => f.until((r) => r.length > 0)));
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const nodes: Array<{ id: string; owner: number }> = [];
    const relations: Array<{ id: string; owner: number }> = [];
    const checked = users.map(() => 0);
    let readableBefore: Map<string, Set<string>> | null = null;
    let deletionsChecked = 0;
    for (let step = 0; step < 40; step++) {
      const actor = random(users.length);
      const token = users[actor]!.token;
      const mine = nodes.filter((n) => n.owner === actor);
      const op = random(6);
      if (op <= 1 || mine.length === 0) {
        // The bookkeeping of who owns what is rough (a deleted parent takes its children's OWNS along): requests
        // that answer 404 are part of the random walk.
        const parent = mine.length > 0 && random(2) === 0 ? mine[random(mine.length)]!.id : undefined;
        const res = await h().request('POST', parent ? `/${parent}` : '/', {
          token,
          body: { type: 'Doc', data: { step } },
        });
        if (res.status === 201) nodes.push({ id: res.headers.get('location')!.slice(1), owner: actor });
      } else if (op === 2) {
        const grantee = random(users.length);
        const type = ['HAS_READ_ACCESS', 'HAS_SEARCH_ACCESS', 'OWNS'][random(3)]!;
        const start = random(4) === 0 ? group : users[grantee]!.id;
        const res = await h().request('POST', '/', {
          token,
          body: { type, start, end: mine[random(mine.length)]!.id },
        });
        if (res.status === 201) relations.push({ id: res.headers.get('location')!.slice(1), owner: actor });
      } else if (op === 3) {
        await h().request('POST', '/', {
          token: users[0]!.token,
          body: { type: 'IS_IN_GROUP', start: users[actor]!.id, end: group },
        });
      } else if (op === 4) {
        const target = mine[random(mine.length)]!;
        h().clock.advance(1);
        await h().request('PATCH', `/${target.id}`, { token, body: { step } });
      } else {
        // Who could read what before the deletion: a deletion may reach only them.
        readableBefore = new Map();
        for (const u of users) {
          const set = new Set<string>();
          for (const e of [...nodes, ...relations])
            if ((await h().request('GET', `/${e.id}`, { token: u.token })).status === 200) set.add(e.id);
          readableBefore.set(u.id, set);
        }
        const pool = [...mine, ...relations.filter((r) => r.owner === actor)];
        const target = pool[random(pool.length)]!;
        await h().request('DELETE', `/${target.id}`, { token });
        for (const list of [nodes, relations]) {
          const at = list.indexOf(target);
          if (at >= 0) list.splice(at, 1);
        }
      }
      // Settle: a mark of each user's own reaches its feed, so everything before it has been delivered. Nothing
      // changed since the step, so what may be read now is what could be read at delivery.
      for (const [i, u] of users.entries()) {
        const mark = await createElement(h(), u.token, { type: 'Mark', data: { step } });
        await feeds[i]!.until((r) => r.some((m) => m.data.id === mark));
      }
      for (const [i, u] of users.entries()) {
        const fresh = feeds[i]!.changes().slice(checked[i]);
        checked[i] = feeds[i]!.changes().length;
        for (const m of fresh) {
          if (m.event === 'deleted') {
            const tracked = readableBefore !== null && [...readableBefore.values()].some((set) => set.has(m.data.id));
            if (readableBefore && tracked) {
              expect([m.data.id, readableBefore.get(u.id)!.has(m.data.id)]).toEqual([m.data.id, true]);
              deletionsChecked++;
            }
            continue;
          }
          const now = await h().request('GET', `/${m.data.id}`, { token: u.token });
          // Readable now, unless a later change in this same step deleted it.
          const deletedLater = fresh.some((d) => d.event === 'deleted' && d.data.id === m.data.id);
          if (!deletedLater) expect([m.data.id, now.status]).toEqual([m.data.id, 200]);
        }
      }
      readableBefore = null;
    }
    expect(deletionsChecked).toBeGreaterThan(0);
  }, 240_000);
});
