// Remembered access decisions (storage/access-decisions.ts) against the access module's fresh answer, over random
// graph changes made through HTTP by several users: after every change, every user's GET of every element ever
// created answers as permittedIds(READ) decides from scratch, a sample of PATCHes as permittedIds(UPDATE), and
// every children page as the collection statement decides without remembering. The named cases are in
// access-decisions.test.ts; this one looks for a way of taking access away that they miss. Memberships nest and
// come and go, so it also checks the member rule against a walk of the IS_IN_GROUP relations done here (every group
// a user reaches over them alone is readable and open to CREATE), and what the search engine and hydration decide
// set-wise and from the rows against permittedIds.
import { expect, it } from 'vitest';
import { hashToken } from '../../src/domain/accounts/tokens.js';
import { runSearchEngine } from '../../src/domain/search/steps.js';
import type { SearchEngineOptions } from '../../src/domain/search/types.js';
import { permittedIds } from '../../src/storage/queries/access.js';
import { collectionPage } from '../../src/storage/queries/collections.js';
import { readableElements } from '../../src/storage/search/hydration.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const EVERYTHING: SearchEngineOptions = {
  page: 1,
  pageSize: 1000,
  minScore: null,
  nodeTypes: null,
  relationTypes: null,
};

describeBackends('remembered access decisions under random graph changes', (h) => {
  it('always answer as a fresh decision would', async () => {
    let seed = 20261124;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 16) % n;
    };
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
    // How far the memberships went: the most groups one user reached, and POSTs into a group by a user other than
    // the one who made it (the member rule, unless a grant or an OWNS gave CREATE).
    let mostGroups = 0;
    let createdInOthersGroup = 0;
    let checks = 0;
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
          const fresh = await collectionPage(
            h().db,
            'children',
            { tokenHash: hashToken(user.token) },
            h().clock.now(),
            id,
            100,
            0,
          );
          const got = await h().request('GET', `/${id}/children?pageSize=100`, { token: user.token });
          const what = `${step}: GET /${id}/children as ${user.identifier}`;
          expect(got.status, what).toBe(fresh.found ? 200 : 404);
          if (got.status === 200) {
            expect(JSON.stringify(got.json.nodes), what).toBe(JSON.stringify(JSON.parse(fresh.nodesJson)));
            expect(JSON.stringify(got.json.relations), what).toBe(JSON.stringify(JSON.parse(fresh.relationsJson)));
          }
        }
      // The member rule, from the IS_IN_GROUP relations as they stand: a user reads (and searches) every node it
      // reaches over them alone, and creates in it.
      const { rows: memberships } = await h().db.query<{ start_id: string; end_id: string }>(
        `SELECT start_id, end_id FROM elements WHERE type = 'IS_IN_GROUP'`,
      );
      const turn = checks++ % users.length;
      for (const [k, user] of users.entries()) {
        const reached = new Set<string>();
        for (let frontier: string[] = [user.id]; frontier.length > 0; ) {
          frontier = memberships
            .filter((m) => frontier.includes(m.start_id) && !reached.has(m.end_id))
            .map((m) => m.end_id);
          for (const g of frontier) reached.add(g);
        }
        reached.delete(user.id);
        const groupsOf = [...reached];
        mostGroups = Math.max(mostGroups, groupsOf.length);
        for (const perm of ['READ', 'SEARCH', 'CREATE'] as const)
          expect(
            (await permittedIds(h().db, user.id, perm, groupsOf)).size,
            `${step}: ${perm} on the groups of ${user.identifier}`,
          ).toBe(groupsOf.length);
        // Search and hydration, decided set-wise and from the rows, agree with the per-element rule on every element
        // (with the OWNS and CREATED relations that POSTs made, and the tokens); one user per step, in turn, which
        // keeps the test within its time on a loaded machine.
        if (k !== turn) continue;
        const all = (await h().db.query<{ id: string }>('SELECT id FROM elements')).rows.map((r) => r.id);
        const searchable = await permittedIds(h().db, user.id, 'SEARCH', all);
        const { output } = await runSearchEngine(h().db, user.id, { match_all: {} }, EVERYTHING);
        expect(new Set(output.elements.map((e) => e.id)), `${step}: search as ${user.identifier}`).toEqual(searchable);
        const readable = await permittedIds(h().db, user.id, 'READ', all);
        const hydrated = await readableElements(h().db, user.id, all);
        expect(new Set(hydrated.map((e) => e.id)), `${step}: hydration as ${user.identifier}`).toEqual(readable);
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
    const types = ['OWNS', 'HAS_READ_ACCESS', 'HAS_UPDATE_ACCESS', 'IS_IN_GROUP', 'IS_IN_GROUP', 'HAS_TAG'];
    let changes = 0;
    for (let step = 0; changes < 40 && step < 400; step++) {
      const actor = pick(users);
      const op = random(10);
      let res: Awaited<ReturnType<ReturnType<typeof h>['request']>>;
      if (op < 2) {
        // Into a group (half of the time: members may), a node, or the actor's own User node.
        const parent = random(2) === 0 ? pick(groups) : pick([...nodes, actor.id]);
        res = await h().request('POST', `/${parent}`, { token: actor.token, body: { type: 'Doc' } });
        if (res.status === 201) nodes.push(res.headers.get('location')!.slice(1));
        if (res.status === 201 && groups.includes(parent) && groups.indexOf(parent) !== users.indexOf(actor))
          createdInOthersGroup++;
      } else if (op < 6) {
        const type = pick(types);
        const start = type === 'HAS_TAG' ? pick(nodes) : pick([...users.map((u) => u.id), ...groups]);
        // Memberships into the actor's own group half of the time: only an owner of the group may add one.
        const end =
          type === 'IS_IN_GROUP'
            ? random(2) === 0
              ? groups[users.indexOf(actor)]!
              : pick(groups)
            : pick([...groups, ...nodes]);
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
    expect(mostGroups, 'a user reached nested groups').toBeGreaterThanOrEqual(2);
    expect(createdInOthersGroup, "POSTs into another user's group").toBeGreaterThan(0);
  }, 240_000);
});
