// Remembered access decisions (storage/access-decisions.ts) against the access module's fresh answer, over random
// graph changes made through HTTP by several users: after every change, every user's GET of every element ever
// created answers as permittedIds(READ) decides from scratch, a sample of PATCHes as permittedIds(UPDATE), and
// every children page as the collection statement decides without remembering. The named cases are in
// access-decisions.test.ts; this one looks for a way of taking access away that they miss.
import { expect, it } from 'vitest';
import { hashToken } from '../../src/domain/accounts/tokens.js';
import { permittedIds } from '../../src/storage/queries/access.js';
import { collectionPage } from '../../src/storage/queries/collections.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

describeBackends('remembered access decisions under random graph changes', (h) => {
  it('always answer as a fresh decision would', async () => {
    let seed = 20261124;
    const random = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0), (seed >>> 16) % n);
    const pick = <T>(list: readonly T[]): T => list[random(list.length)]!;

    const users: User[] = [];
    for (let k = 0; k < 4; k++) users.push(await userWithToken(h(), `random${k}@decisions.dev`));
    const groups: string[] = [];
    const nodes: string[] = [];
    const relations: string[] = [];
    for (const user of users) {
      groups.push(await createElement(h(), user.token, { type: 'Group' }));
      for (let k = 0; k < 2; k++) nodes.push(await createElement(h(), user.token, { type: 'Doc' }));
    }
    const everything = () => [...users.map((u) => u.id), ...groups, ...nodes, ...relations];

    const compare = async (step: string) => {
      const ids = everything();
      for (const user of users) {
        const readable = await permittedIds(h().db, user.id, 'READ', ids);
        for (const id of ids) {
          const got = (await h().request('GET', `/${id}`, { token: user.token })).status;
          expect(got, `${step}: GET /${id} as ${user.identifier}`).toBe(readable.has(id) ? 200 : 404);
        }
      }
      // Every children page (remembered READ_MEMBERS): a decision made at one step answers at the next ones.
      for (const user of users)
        for (const id of [...users.map((u) => u.id), ...groups, ...nodes]) {
          const fresh = await collectionPage(h().db, 'children', { tokenHash: hashToken(user.token) }, h().clock.now(), id, 100, 0);
          const got = await h().request('GET', `/${id}/children?pageSize=100`, { token: user.token });
          const what = `${step}: GET /${id}/children as ${user.identifier}`;
          expect(got.status, what).toBe(fresh.found ? 200 : 404);
          if (got.status === 200) {
            expect(JSON.stringify(got.json.nodes), what).toBe(JSON.stringify(JSON.parse(fresh.nodesJson)));
            expect(JSON.stringify(got.json.relations), what).toBe(JSON.stringify(JSON.parse(fresh.relationsJson)));
          }
        }
      // PATCH changes data only, which moves no permission: a sample, each checked against a fresh UPDATE decision.
      for (let k = 0; k < 6; k++) {
        const user = pick(users);
        const id = pick(ids);
        const updatable = (await permittedIds(h().db, user.id, 'UPDATE', [id])).has(id);
        const got = (await h().request('PATCH', `/${id}`, { token: user.token, body: { touched: step } })).status;
        expect(got, `${step}: PATCH /${id} as ${user.identifier}`).toBe(updatable ? 204 : 404);
      }
    };

    await compare('start');
    const types = ['OWNS', 'HAS_READ_ACCESS', 'HAS_UPDATE_ACCESS', 'IS_IN_GROUP', 'HAS_TAG'];
    let changes = 0;
    for (let step = 0; changes < 40 && step < 400; step++) {
      const actor = pick(users);
      const op = random(10);
      let res;
      if (op < 2) {
        res = await h().request('POST', `/${pick([...groups, ...nodes])}`, { token: actor.token, body: { type: 'Doc' } });
        if (res.status === 201) nodes.push(res.headers.get('location')!.slice(1));
      } else if (op < 6) {
        const type = pick(types);
        const start = type === 'HAS_TAG' ? pick(nodes) : pick([...users.map((u) => u.id), ...groups]);
        const end = type === 'IS_IN_GROUP' ? pick(groups) : pick([...groups, ...nodes]);
        res = await h().request('POST', '/', { token: actor.token, body: { type, start, end } });
        if (res.status === 201) relations.push(res.headers.get('location')!.slice(1));
      } else {
        // Deletions: mostly relations (which take access away), sometimes a node with its relations.
        const target = op < 9 && relations.length > 0 ? pick(relations) : pick(nodes);
        res = await h().request('DELETE', `/${target}`, { token: actor.token });
      }
      if (res.status < 300) {
        changes++;
        await compare(`change ${changes} (step ${step}, op ${op})`);
      }
    }
    expect(changes).toBe(40);
  }, 120_000);
});
