// Compatibility with the reference dataset: it loads on both backends, its users log in, its tokens authenticate
// or not according to their state, and its security scenarios behave as DESIGN.md's access model says.
import { beforeAll, expect, it } from 'vitest';
import type { LoadReport } from '../../src/backup/load.js';
import { permittedIds } from '../../src/storage/queries/access.js';
import { isoTime } from '../../src/values.js';
import { describeBackends } from '../helpers/harness.js';
import {
  ANONYMOUS_USER_UUID,
  counts,
  type FixtureElement,
  loadInto,
  REFERENCE,
  ref,
  referenceElements,
} from './helpers.js';

const S = 'node/security';
const R = 'relation/security';
const bearer = (token: FixtureElement) => token.data.token as string;

/** Tokens that authenticate: ACTIVE, not expired, owned (OWNS) by exactly one User. */
function owningUsers(token: FixtureElement): string[] {
  const users = new Set(
    referenceElements()
      .filter((e) => e.type === 'User')
      .map((e) => e.id),
  );
  return referenceElements()
    .filter((e) => e.type === 'OWNS' && e.end === token.id && users.has(e.start!))
    .map((e) => e.start!);
}

describeBackends(
  'reference dataset',
  (h) => {
    let report: LoadReport;
    let loadedAt: Date;
    beforeAll(async () => {
      loadedAt = h().clock.now();
      report = await loadInto(h(), REFERENCE);
    });

    const get = (path: string, token?: FixtureElement) =>
      h().request('GET', path, token ? { token: bearer(token) } : {});
    const expectRead = async (token: FixtureElement, element: FixtureElement, status: 200 | 404) => {
      const res = await get(`/${element.id}`, token);
      expect(res.status, `${token.path} GET ${element.path}`).toBe(status);
      if (status === 200) expect(res.json.id).toBe(element.id);
      else expect(res.json.type).toMatch(/\/error\/404\/not-found$/);
    };

    it('loads every node, relation, user and token of the dataset', async () => {
      expect(report.nodes).toBe(782);
      expect(report.relations).toBe(1606);
      expect(report.users).toBe(82);
      // 91 tokens; the one without an owner and the one with two owners get no tokens row (they never authenticate).
      expect(report.tokens).toBe(89);
      expect(await counts(h().db)).toEqual({ elements: 2388, users: 82, tokens: 89 });
      const { rows } = await h().db.query<{ state: string; n: number; expiring: number }>(
        'SELECT state, count(*)::int AS n, count(expires)::int AS expiring FROM tokens GROUP BY state ORDER BY state',
      );
      expect(rows).toEqual([
        { state: 'ACTIVE', n: 87, expiring: 2 },
        { state: 'REVOKED', n: 2, expiring: 0 }, // REVOKED and EXPIRED
      ]);
      expect(report.warnings.join('\n')).toContain('tokenWithNoOwner/token.json: token has no owning user');
      expect(report.warnings.join('\n')).toContain('tokenWithTwoOwners/token.json: token has 2 owning users');
    });

    it('never stores the plaintext token, the token hash or the password hash in client data', async () => {
      const { rows } = await h().db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM elements
         WHERE data ? 'token' OR data ? 'hash' OR data ? '_passwordHash' OR internal ? '_passwordHash'
            OR data ? 'created' OR data ? 'updated'`,
      );
      expect(rows[0]!.n).toBe(0);
      const hashes = await h().db.query<{ id: string; password_hash: string }>(
        'SELECT id, password_hash FROM users WHERE password_hash IS NOT NULL ORDER BY id',
      );
      const expected = referenceElements()
        .filter((e) => e.type === 'User' && e.data._passwordHash)
        .map((e) => ({ id: e.id, password_hash: e.data._passwordHash }))
        .sort((a, b) => (a.id < b.id ? -1 : 1));
      expect(hashes.rows).toEqual(expected);
      const token = ref(`${S}/tokenState/token-active`);
      const stored = await h().db.query<{ hash: string; state: string; expires: Date | null }>(
        'SELECT hash, state, expires FROM tokens WHERE id = $1',
        [token.id],
      );
      expect(stored.rows).toEqual([{ hash: token.data.hash, state: 'ACTIVE', expires: null }]);
    });

    it('keeps created/updated from the backup and uses the load time where the backup has none', async () => {
      const withDates = ref('node/general/if-match/data');
      expect(withDates.data.created).toBe('2020-01-01T00:00:00+00:00');
      const res = await get(`/${withDates.id}`, ref('node/general/if-match/token'));
      expect(res.status).toBe(200);
      expect(res.json.data.created).toBe('2020-01-01T00:00:00+00:00');
      expect(res.json.data.updated).toBe('2020-01-01T00:00:00+00:00');
      // A token's issue date is its `created`; the two issuedAfter tokens carry `created` but no `updated`.
      const issued = await h().db.query<{ issued: Date; created: Date; updated: Date }>(
        'SELECT t.issued, e.created, e.updated FROM tokens t JOIN elements e ON e.id = t.id WHERE t.id = $1',
        [ref('node/command/token/revoke/issuedAfter/token2').id],
      );
      const expectedCreated = ref('node/command/token/revoke/issuedAfter/token2').data.created;
      expect(isoTime(issued.rows[0]!.issued)).toBe(expectedCreated);
      expect(isoTime(issued.rows[0]!.updated)).toBe(expectedCreated);

      const undated = ref(`${S}/tokenState/data`);
      const row = await h().db.query<{ created: Date }>('SELECT created FROM elements WHERE id = $1', [undated.id]);
      expect(Math.abs(row.rows[0]!.created.getTime() - loadedAt.getTime())).toBeLessThan(60_000);
    });

    it('lets every user with a password log in with POST /token, and refuses a wrong password', async () => {
      const users = referenceElements().filter((e) => e.type === 'User' && e.data.password);
      expect(users).toHaveLength(5);
      for (const user of users) {
        const res = await h().request('POST', '/token', {
          body: { type: 'Token', uniqueUserIdentifier: user.data.email, password: user.data.password },
        });
        expect(res.status, user.path).toBe(201);
        const me = await h().request('GET', '/me', { token: res.json.token });
        expect(me.status).toBe(200);
        expect(me.json.id).toBe(user.id);
        expect(me.json.data._passwordHash).toBeUndefined();
        const wrong = await h().request('POST', '/token', {
          body: { type: 'Token', uniqueUserIdentifier: user.data.email, password: `${user.data.password}x` },
        });
        expect(wrong.status).toBe(401);
      }
    });

    it('authenticates every ACTIVE token that has one owner, as that owner', async () => {
      const tokens = referenceElements().filter(
        (e) => e.type === 'Token' && e.data.state === 'ACTIVE' && owningUsers(e).length === 1,
      );
      expect(tokens.length).toBe(87);
      for (const token of tokens) {
        const me = await get('/me', token);
        expect(me.status, token.path).toBe(200);
        expect(me.json.id).toBe(owningUsers(token)[0]);
      }
      // GET /token shows the token element, without the plaintext and without the hash.
      const token = ref(`${S}/tokenState/token-active`);
      const current = await get('/token', token);
      expect(current.status).toBe(200);
      expect(current.json.id).toBe(token.id);
      expect(current.json.data).toEqual({
        scenario: 'security.tokenState',
        note: token.data.note,
        state: 'ACTIVE',
        created: current.json.data.created,
        updated: current.json.data.updated,
      });
    });

    it('answers 401 for the REVOKED and EXPIRED tokens and for tokens without exactly one owning user', async () => {
      for (const path of [
        `${S}/tokenState/token-revoked`,
        `${S}/tokenState/token-expired`,
        `${S}/edgeCase/tokenWithNoOwner/token`,
        `${S}/edgeCase/tokenWithTwoOwners/token`,
      ]) {
        const token = ref(path);
        const me = await get('/me', token);
        expect(me.status, path).toBe(401);
        expect(me.json.type).toMatch(/\/error\/401\/unauthorized$/);
        // Never downgraded to the anonymous user either.
        expect((await get(`/${ref(`${S}/tokenState/data`).id}`, token)).status).toBe(401);
      }
      // The owner of those tokens still works with its active one.
      expect((await get(`/${ref(`${S}/tokenState/data`).id}`, ref(`${S}/tokenState/token-active`))).status).toBe(200);
    });

    it('runs requests without a token as the anonymous user, whose data other users cannot read', async () => {
      const me = await h().request('GET', '/me');
      expect(me.status).toBe(200);
      expect(me.json.id).toBe(ANONYMOUS_USER_UUID);
      expect(me.json.data._passwordHash).toBeUndefined();
      const data = ref('node/general/anonymousUser/data');
      expect((await h().request('GET', `/${data.id}`)).status).toBe(200);
      expect((await h().request('GET', `/${ref(`${S}/tokenState/data`).id}`)).status).toBe(404);
      await expectRead(ref(`${S}/tokenState/token-active`), data, 404);
      // The anonymous user also logs in with its password.
      const login = await h().request('POST', '/token', {
        body: { type: 'Token', uniqueUserIdentifier: 'anonymous-user@localhost.dev', password: '1234' },
      });
      expect(login.status).toBe(201);
    });

    it('general.ownershipModel: a user reaches data owned by a group of a group it is in', async () => {
      const user = ref('node/general/ownershipModel/user');
      const login = await h().request('POST', '/token', {
        body: { type: 'Token', uniqueUserIdentifier: user.data.email, password: user.data.password },
      });
      const res = await h().request('GET', `/${ref('node/general/ownershipModel/data').id}`, {
        token: login.json.token,
      });
      expect(res.status).toBe(200);
      expect(res.json.data.scenario).toBe('general.ownershipModel');
    });

    it('security.basic: only OWNS paths from the user grant access, in their direction', async () => {
      const b = `${S}/basic`;
      await expectRead(ref(`${b}/noConnection/token`), ref(`${b}/noConnection/data`), 404);
      await expectRead(ref(`${b}/noConnection/token`), ref(`${b}/noConnection/user`), 200); // its own User node
      await expectRead(ref(`${b}/noRelevantConnection/token`), ref(`${b}/noRelevantConnection/data`), 404);
      await expectRead(
        ref(`${b}/noRelevantConnection/token`),
        ref(`${R}/basic/noRelevantConnection/some-relation`),
        404,
      );
      await expectRead(ref(`${b}/directedOwnsRelation/token1`), ref(`${b}/directedOwnsRelation/data1`), 200);
      await expectRead(ref(`${b}/directedOwnsRelation/token1`), ref(`${b}/directedOwnsRelation/data2`), 200);
      await expectRead(ref(`${b}/directedOwnsRelation/token2`), ref(`${b}/directedOwnsRelation/data2`), 200);
      await expectRead(ref(`${b}/directedOwnsRelation/token2`), ref(`${b}/directedOwnsRelation/data1`), 404);
      // DESIGN.md: an access-granting relation is readable by the owners of its end, even without READ on its start.
      await expectRead(ref(`${b}/directedOwnsRelation/token2`), ref(`${R}/basic/directedOwnsRelation/owns2`), 200);
      await expectRead(ref(`${b}/immediateNodeOwnership/token`), ref(`${b}/immediateNodeOwnership/data`), 200);
      await expectRead(
        ref(`${b}/immediateRelationOwnership/token`),
        ref(`${R}/basic/immediateRelationOwnership/relationship`),
        200,
      );
      const missing = `${b}/missingAccessToStartOrEndNode`;
      await expectRead(ref(`${missing}/token`), ref(`${missing}/data1`), 200);
      for (const other of [
        `${missing}/data2`,
        `${missing}/data3`,
        `${R}/basic/missingAccessToStartOrEndNode/relationship1`,
        `${R}/basic/missingAccessToStartOrEndNode/relationship2`,
      ])
        await expectRead(ref(`${missing}/token`), ref(other), 404);
      await expectRead(ref(`${b}/pathNodeOwnership/token`), ref(`${b}/pathNodeOwnership/data3`), 200);
      await expectRead(
        ref(`${b}/pathRelationOwnership/token`),
        ref(`${R}/basic/pathRelationOwnership/relationship`),
        200,
      );
      await expectRead(ref(`${b}/pathRelationOwnership/token`), ref(`${b}/pathRelationOwnership/data6`), 200);
    });

    it('security.singleGroup, multipleGroups and mixedGroupOwnership: group ownership reaches nodes and relations', async () => {
      for (const group of ['singleGroup', 'multipleGroups']) {
        const g = `${S}/${group}`;
        await expectRead(ref(`${g}/immediateNodeOwnership/token`), ref(`${g}/immediateNodeOwnership/data`), 200);
        await expectRead(
          ref(`${g}/immediateRelationOwnership/token`),
          ref(`${R}/${group}/immediateRelationOwnership/relationship`),
          200,
        );
        await expectRead(ref(`${g}/pathNodeOwnership/token`), ref(`${g}/pathNodeOwnership/data3`), 200);
        await expectRead(
          ref(`${g}/pathRelationOwnership/token`),
          ref(`${R}/${group}/pathRelationOwnership/relationship`),
          200,
        );
        // Ownership through groups is full ownership: update and delete too.
        const userId = owningUsers(ref(`${g}/pathNodeOwnership/token`))[0]!;
        const data3 = ref(`${g}/pathNodeOwnership/data3`).id;
        for (const perm of ['UPDATE', 'DELETE'] as const)
          expect(await permittedIds(h().db, userId, perm, [data3])).toEqual(new Set([data3]));
      }
      const m = `${S}/mixedGroupOwnership`;
      for (const data of ['data1', 'data2', 'data3'])
        await expectRead(ref(`${m}/mixedNodeOwnership/token`), ref(`${m}/mixedNodeOwnership/${data}`), 200);
      await expectRead(
        ref(`${m}/mixedRelationOwnership/token`),
        ref(`${R}/mixedGroupOwnership/mixedRelationOwnership/relationship`),
        200,
      );
    });

    it('security.limitedAccess.readAccess: HAS_READ_ACCESS (direct, through a group, through nested groups) reads but does not write', async () => {
      const r = `${S}/limitedAccess/readAccess`;
      const token = ref(`${r}/token`);
      const readable = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => ref(`${r}/data${n}`));
      for (const data of readable) await expectRead(token, data, 200);
      for (const n of [1, 2, 3]) await expectRead(token, ref(`${R}/limitedAccess/readAccess/relationship${n}`), 200);
      const userId = owningUsers(token)[0]!;
      const ids = readable.map((d) => d.id);
      for (const perm of ['UPDATE', 'DELETE', 'CREATE'] as const)
        expect(await permittedIds(h().db, userId, perm, ids)).toEqual(new Set());
      const patch = await h().request('PATCH', `/${ref(`${r}/data1`).id}`, {
        token: bearer(token),
        body: { name: 'changed' },
      });
      expect(patch.status).toBe(404);
      expect((await get(`/${ref(`${r}/data1`).id}`, token)).json.data.name).toBe('Data 1');
    });

    it('security.limitedAccess.searchAccess: owners, readers and group members read; access relations from data nodes grant nothing', async () => {
      const s = `${S}/limitedAccess/searchAccess`;
      const [data1, data2, data3, data4] = [1, 2, 3, 4].map((n) => ref(`${s}/7-01-data${n}`));
      for (let n = 1; n <= 7; n++) {
        const token = ref(`${s}/7-01-token${n}`);
        await expectRead(token, data1!, 200);
        await expectRead(token, data2!, 200);
        await expectRead(token, data3!, 404);
        await expectRead(token, data4!, 404);
        const userId = owningUsers(token)[0]!;
        // Users 1 and 3 own data1 directly, 6 and 7 through group 3 (7 via group 4); 2, 4 and 5 only read.
        const owner = [1, 3, 6, 7].includes(n);
        expect(await permittedIds(h().db, userId, 'UPDATE', [data1!.id]), `user ${n}`).toEqual(
          owner ? new Set([data1!.id]) : new Set(),
        );
        expect(await permittedIds(h().db, userId, 'SEARCH', [data1!.id, data3!.id])).toEqual(new Set([data1!.id]));
      }
    });

    it('security.edgeCase: IS_IN_GROUP after OWNS and owning a group grant no membership', async () => {
      const a = `${S}/edgeCase/isInGroupAfterOwns`;
      await expectRead(ref(`${a}/token`), ref(`${a}/data1`), 200);
      await expectRead(ref(`${a}/token`), ref(`${a}/data2`), 404);
      const o = `${S}/edgeCase/owningGroupsDoesNotGrantRecursiveRights`;
      for (const el of ['data1', 'group2', 'data2']) await expectRead(ref(`${o}/token`), ref(`${o}/${el}`), 200);
      for (const el of ['data3', 'group3']) await expectRead(ref(`${o}/token`), ref(`${o}/${el}`), 404);
    });

    it('a sample of every scenario folder: the owner of its first working token reads what it owns directly', async () => {
      const byFolder = new Map<string, FixtureElement[]>();
      for (const e of referenceElements()) {
        if (!e.path.startsWith('node/')) continue;
        const folder = e.path.slice(0, e.path.lastIndexOf('/'));
        byFolder.set(folder, [...(byFolder.get(folder) ?? []), e]);
      }
      let checked = 0;
      let folders = 0;
      for (const [folder, elements] of byFolder) {
        const token = elements.find(
          (e) => e.type === 'Token' && e.data.state === 'ACTIVE' && owningUsers(e).length === 1,
        );
        if (!token) continue;
        const owner = owningUsers(token)[0]!;
        const owned = referenceElements().filter((e) => e.type === 'OWNS' && e.start === owner && e.end !== token.id);
        folders++;
        for (const relation of owned.slice(0, 3)) {
          const res = await get(`/${relation.end}`, token);
          expect(res.status, `${folder}: ${token.path} -> ${relation.end}`).toBe(200);
          checked++;
        }
      }
      expect(folders).toBeGreaterThan(60);
      expect(checked).toBeGreaterThan(70);
    });

    it('security.deleteToken: DELETE /token kills that token only', async () => {
      const d = `${S}/deleteToken`;
      const [token1, token2] = [ref(`${d}/token1`), ref(`${d}/token2`)];
      expect((await h().request('DELETE', '/token', { token: bearer(token1) })).status).toBe(204);
      expect((await get('/me', token1)).status).toBe(401);
      expect((await get(`/${ref(`${d}/data`).id}`, token2)).status).toBe(200);
    });

    it('a token with an expirationDate expires then; a token without one never does (runs last: moves the clock)', async () => {
      const expiring = ref('node/command/token/revoke/issuedWithExpirationDate/token2');
      const forever = ref('node/command/token/revoke/issuedWithExpirationDate/token1');
      expect(expiring.data.expirationDate).toBe('2040-01-01T00:00:00+00:00');
      expect((await get('/me', expiring)).status).toBe(200);
      h().clock.advance((Date.parse('2040-01-02T00:00:00Z') - h().clock.now().getTime()) / 1000);
      expect((await get('/me', expiring)).status).toBe(401);
      expect((await get('/me', forever)).status).toBe(200);
    });
  },
  { anonymousUserId: ANONYMOUS_USER_UUID },
);
