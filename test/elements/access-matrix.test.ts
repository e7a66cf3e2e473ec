// The access model of DESIGN.md section 3, as a matrix: for every (user, element, operation) the expected status.
import { beforeAll, expect, it } from 'vitest';
import type { Permission } from '../../src/domain/elements/types.js';
import { permittedIds } from '../../src/storage/queries/access.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

describeBackends('access matrix', (h) => {
  const u: Record<string, User> = {};
  const e: Record<string, string> = {};

  const relate = async (token: string, type: string, start: string, end: string) =>
    h().request('POST', '/', { token, body: { type, start, end } });

  beforeAll(async () => {
    for (const name of ['owner', 'member', 'reader', 'searcher', 'creator', 'updater', 'deleter', 'outsider'])
      u[name] = await userWithToken(h(), `${name}@matrix.dev`);
    const O = u.owner!.token;
    e.g1 = await createElement(h(), O, { type: 'Group', data: { name: 'inner' } });
    e.g2 = await createElement(h(), O, { type: 'Group', data: { name: 'outer' } });
    expect((await relate(O, 'IS_IN_GROUP', u.member!.id, e.g1)).status).toBe(201);
    expect((await relate(O, 'IS_IN_GROUP', e.g1, e.g2)).status).toBe(201);
    // g2 -OWNS-> f1 -OWNS-> f2 -OWNS-> f3 -OWNS-> doc : doc is 4 OWNS hops below g2, member reaches g2 in 2 group hops.
    e.f1 = await createElement(h(), O, { type: 'Folder' }, e.g2);
    e.f2 = await createElement(h(), O, { type: 'Folder' }, e.f1);
    e.f3 = await createElement(h(), O, { type: 'Folder' }, e.f2);
    e.doc = await createElement(h(), O, { type: 'Doc', data: { secret: 42 } }, e.f3);
    for (const [user, type] of [
      ['reader', 'READ'],
      ['searcher', 'SEARCH'],
      ['creator', 'CREATE'],
      ['updater', 'UPDATE'],
      ['deleter', 'DELETE'],
    ])
      expect((await relate(O, `HAS_${type}_ACCESS`, u[user]!.id, e.f2)).status).toBe(201);
  });

  // expected permissions per user on elements at and below f2 (f2, f3, doc); above it (f1) only owner/member.
  const EXPECTED: Record<string, Permission[]> = {
    owner: ['READ', 'SEARCH', 'CREATE', 'UPDATE', 'DELETE'],
    member: ['READ', 'SEARCH', 'CREATE', 'UPDATE', 'DELETE'],
    reader: ['READ', 'SEARCH'],
    searcher: ['SEARCH'],
    creator: ['CREATE'],
    updater: ['UPDATE'],
    deleter: ['DELETE'],
    outsider: [],
  };
  const ALL: Permission[] = ['READ', 'SEARCH', 'CREATE', 'UPDATE', 'DELETE'];

  it('derives every permission from OWNS paths, groups and grants (set-based check)', async () => {
    for (const [name, perms] of Object.entries(EXPECTED)) {
      for (const perm of ALL) {
        const allowed = await permittedIds(h().db, u[name]!.id, perm, [e.f1!, e.f2!, e.f3!, e.doc!]);
        const owner = name === 'owner' || name === 'member';
        expect(allowed.has(e.f1!), `${name} ${perm} f1`).toBe(owner);
        for (const el of ['f2', 'f3', 'doc'])
          expect(allowed.has(e[el]!), `${name} ${perm} ${el}`).toBe(perms.includes(perm));
      }
    }
  });

  it('answers every HTTP operation per the matrix, denied exactly like missing', async () => {
    const missing = await h().request('GET', '/9a5e2f60-1d1e-4c55-8a30-111111111111', { token: u.outsider!.token });
    expect(missing.status).toBe(404);
    for (const [name, perms] of Object.entries(EXPECTED)) {
      const token = u[name]!.token;
      const get = await h().request('GET', `/${e.doc}`, { token });
      expect(get.status, `${name} GET`).toBe(perms.includes('READ') ? 200 : 404);
      if (get.status === 404) expect(get.text).toBe(missing.text);
      const patch = await h().request('PATCH', `/${e.doc}`, { token, body: { touchedBy: name } });
      expect(patch.status, `${name} PATCH`).toBe(perms.includes('UPDATE') ? 204 : 404);
      if (patch.status === 404) expect(patch.text).toBe(missing.text);
      const child = await h().request('POST', `/${e.doc}`, { token, body: { type: 'Note' } });
      expect(child.status, `${name} POST child`).toBe(perms.includes('CREATE') ? 201 : 404);
      if (!perms.includes('DELETE')) {
        const del = await h().request('DELETE', `/${e.doc}`, { token });
        expect(del.status, `${name} DELETE`).toBe(404);
        expect(del.text).toBe(missing.text);
      }
      const put = await h().request('PUT', `/${e.f1}`, { token, body: { x: 1 } });
      expect(put.status, `${name} PUT f1`).toBe(name === 'owner' || name === 'member' ? 204 : 404);
    }
  });

  // Cypher walks (search/sql/cypher-statement.ts) check READ on every node they add and rely on this clause for the
  // relations between them.
  it('any relation whose two ends the caller may read is readable, whatever its type', async () => {
    const O = u.owner!.token;
    const link = await relate(O, 'LINKS', e.f3!, e.doc!);
    expect(link.status).toBe(201);
    const ids = [link.headers.get('location')!.slice(1)];
    const { rows } = await h().db.query<{ id: string }>(
      `SELECT id FROM elements WHERE type IN ('OWNS', 'HAS_READ_ACCESS', 'HAS_SEARCH_ACCESS') AND start_id = ANY($1::uuid[]) AND end_id = ANY($1::uuid[])`,
      [[e.f2, e.f3, e.doc]],
    );
    ids.push(...rows.map((r) => r.id));
    expect(ids.length).toBeGreaterThanOrEqual(3); // the link and the OWNS relations f2 -> f3 -> doc
    for (const [name, perms] of Object.entries(EXPECTED)) {
      const readable = await permittedIds(h().db, u[name]!.id, 'READ', ids);
      expect(readable.size, `${name} READ of relations between readable nodes`).toBe(
        perms.includes('READ') ? ids.length : 0,
      );
    }
  });

  it('writes to a relation need READ on it: one the caller cannot read answers every write like a missing id', async () => {
    const O = u.owner!.token;
    const R = u.outsider!;
    const target = await createElement(h(), O, { type: 'Doc', data: { about: 'tagged' } });
    const grant = await relate(O, 'HAS_READ_ACCESS', R.id, target);
    expect(grant.status).toBe(201);
    const mine = await createElement(h(), R.token, { type: 'Label' });
    const tagged = await relate(R.token, 'HAS_TAG', mine, target);
    expect(tagged.status).toBe(201);
    const tag = tagged.headers.get('location')!.slice(1);
    expect((await h().request('PATCH', `/${tag}`, { token: R.token, body: { note: 'while readable' } })).status).toBe(
      204,
    );
    // The grant goes: the tag's end is hidden, so is the tag, and no write may tell it apart from a missing id.
    expect((await h().request('DELETE', `/${grant.headers.get('location')!.slice(1)}`, { token: O })).status).toBe(204);
    const missingId = '9a5e2f60-1d1e-4c55-8a30-222222222222';
    const count = async () => (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const before = await count();
    const writes: [string, string, Record<string, unknown>][] = [
      ['GET', '', {}],
      ['PATCH', '', { body: { note: 'hidden' } }],
      ['PUT', '', { body: { note: 'hidden' } }],
      ['DELETE', '', {}],
      ['POST', '', { body: { type: 'Child' } }],
      ['PUT', '/file', { raw: 'bytes', headers: { 'content-type': 'text/plain', 'upload-complete': '?1' } }],
      ['POST', '/file', { raw: 'bytes', headers: { 'content-type': 'text/plain', 'upload-complete': '?1' } }],
    ];
    for (const [method, suffix, init] of writes) {
      const hidden = await h().request(method, `/${tag}${suffix}`, { token: R.token, ...init });
      const missing = await h().request(method, `/${missingId}${suffix}`, { token: R.token, ...init });
      expect(hidden.status, `${method} ${suffix}: ${hidden.text}`).toBe(404);
      expect(hidden.text.replaceAll(tag, missingId), `${method} ${suffix}`).toBe(missing.text);
    }
    expect(await count()).toBe(before);
    const { rows } = await h().db.query<{ data: unknown }>('SELECT data FROM elements WHERE id = $1', [tag]);
    expect(rows[0]!.data).toEqual({ note: 'while readable' });
    // READ again: the writes work again.
    expect((await relate(O, 'HAS_READ_ACCESS', R.id, target)).status).toBe(201);
    expect((await h().request('PATCH', `/${tag}`, { token: R.token, body: { note: 'readable again' } })).status).toBe(
      204,
    );
    expect((await h().request('DELETE', `/${tag}`, { token: R.token })).status).toBe(204);
  });

  it('a relation has no children: POST /<relation> is a 400 when it can be read, else a 404', async () => {
    const O = u.owner!.token;
    const link = await relate(O, 'LINKS', e.f3!, e.doc!);
    expect(link.status).toBe(201);
    const id = link.headers.get('location')!.slice(1);
    const count = async () => (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const before = await count();
    const asOwner = await h().request('POST', `/${id}`, { token: O, body: { type: 'Child' } });
    expect(asOwner.status).toBe(400);
    expect(asOwner.json.type).toMatch(/\/error\/400\/bad-content$/);
    const asOutsider = await h().request('POST', `/${id}`, { token: u.outsider!.token, body: { type: 'Child' } });
    expect(asOutsider.status).toBe(404);
    expect(await count()).toBe(before);
  });

  it('a CREATED relation lets the creator read what it created, even after losing the grant', async () => {
    const child = await createElement(h(), u.creator!.token, { type: 'Note', data: { by: 'creator' } }, e.f3);
    expect((await h().request('GET', `/${child}`, { token: u.creator!.token })).status).toBe(200);
    expect((await h().request('GET', `/${child}`, { token: u.owner!.token })).status).toBe(200); // owner of f3 owns it too
    const grants = await h().request('GET', `/${e.f2}/parents`, { token: u.owner!.token });
    const grant = grants.json.relations.find((r: any) => r.type === 'HAS_CREATE_ACCESS');
    expect((await h().request('DELETE', `/${grant.id}`, { token: u.owner!.token })).status).toBe(204);
    expect((await h().request('POST', `/${e.f3}`, { token: u.creator!.token, body: { type: 'Note' } })).status).toBe(
      404,
    );
    expect((await h().request('GET', `/${child}`, { token: u.creator!.token })).status).toBe(200);
    expect((await h().request('PATCH', `/${child}`, { token: u.creator!.token, body: { x: 1 } })).status).toBe(404);
    // restore for later tests
    expect((await relate(u.owner!.token, 'HAS_CREATE_ACCESS', u.creator!.id, e.f2)).status).toBe(201);
  });

  it('nobody gains access by creating OWNS, IS_IN_GROUP or HAS_*_ACCESS towards what it does not own', async () => {
    const count = async () => (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const before = await count();
    const attempts: [string, string, string, string][] = [
      ['outsider', 'OWNS', u.outsider!.id, e.doc!],
      ['outsider', 'IS_IN_GROUP', u.outsider!.id, e.g1!],
      ['outsider', 'IS_IN_GROUP', u.outsider!.id, e.g2!],
      ['outsider', 'HAS_READ_ACCESS', u.outsider!.id, e.doc!],
      ['reader', 'OWNS', u.reader!.id, e.doc!],
      ['reader', 'HAS_UPDATE_ACCESS', u.reader!.id, e.doc!],
      ['updater', 'HAS_READ_ACCESS', u.updater!.id, e.doc!],
      ['updater', 'OWNS', u.updater!.id, e.f3!],
      ['creator', 'OWNS', u.creator!.id, e.f2!],
      ['deleter', 'HAS_DELETE_ACCESS', u.outsider!.id, e.f3!],
      // A member reads its groups and creates in them, but owns them no more than before.
      ['member', 'IS_IN_GROUP', u.outsider!.id, e.g1!],
      ['member', 'HAS_READ_ACCESS', u.outsider!.id, e.g2!],
      ['member', 'OWNS', u.member!.id, e.g1!],
    ];
    for (const [who, type, start, end] of attempts) {
      const res = await relate(u[who]!.token, type, start, end);
      expect(res.status, `${who} ${type}`).toBe(404);
    }
    // Nor learn that an element it cannot see exists: an IS_IN_GROUP from it is the 404 of a missing id, not the
    // 400 a wrong start type of its own elements gets.
    const ownGroup = await createElement(h(), u.outsider!.token, { type: 'Group' });
    expect((await relate(u.outsider!.token, 'IS_IN_GROUP', e.doc!, ownGroup)).status).toBe(404);
    expect(
      (await relate(u.outsider!.token, 'IS_IN_GROUP', '0b8e8a8e-6d4e-4d6f-9c3e-3c0d5a1e2f40', ownGroup)).status,
    ).toBe(404);
    const ownDoc = await createElement(h(), u.outsider!.token, { type: 'Doc' });
    expect((await relate(u.outsider!.token, 'IS_IN_GROUP', ownDoc, ownGroup)).status).toBe(400);
    // An owner may not move someone else's element into its own tree either.
    const mine = await createElement(h(), u.outsider!.token, { type: 'Folder' });
    expect((await relate(u.outsider!.token, 'OWNS', mine, e.doc!)).status).toBe(404);
    expect(await count()).toBe(before + 9); // the Group, the Doc and the Folder, each with its OWNS and CREATED
    expect((await h().request('GET', `/${e.doc}`, { token: u.outsider!.token })).status).toBe(404);
  });

  it('an owner shares with any user by id, and revokes the grant found in /parents', async () => {
    const share = await relate(u.member!.token, 'HAS_READ_ACCESS', u.outsider!.id, e.doc!);
    expect(share.status).toBe(201);
    expect((await h().request('GET', `/${e.doc}`, { token: u.outsider!.token })).status).toBe(200);
    // the grantee sees its own grant, the owner finds it in /parents
    const grantId = share.headers.get('location')!.slice(1);
    expect((await h().request('GET', `/${grantId}`, { token: u.outsider!.token })).status).toBe(200);
    const parents = await h().request('GET', `/${e.doc}/parents`, { token: u.owner!.token });
    expect(parents.json.relations.map((r: any) => r.id)).toContain(grantId);
    expect((await h().request('DELETE', `/${grantId}`, { token: u.owner!.token })).status).toBe(204);
    expect((await h().request('GET', `/${e.doc}`, { token: u.outsider!.token })).status).toBe(404);
  });

  it('ownership transfer, last owner removal, and alternative paths', async () => {
    const O = u.owner!.token;
    const item = await createElement(h(), O, { type: 'Item' });
    const newOwner = u.outsider!;
    // transfer: create the new owner's OWNS, then the old owner drops its own claim last
    expect((await relate(O, 'OWNS', newOwner.id, item)).status).toBe(201);
    const parents = await h().request('GET', `/${item}/parents`, { token: O });
    const oldClaim = parents.json.relations.find((r: any) => r.type === 'OWNS' && r.start === u.owner!.id);
    expect((await h().request('DELETE', `/${oldClaim.id}`, { token: O })).status).toBe(204);
    expect((await h().request('PATCH', `/${item}`, { token: newOwner.token, body: { moved: true } })).status).toBe(204);
    expect((await h().request('PATCH', `/${item}`, { token: O, body: { x: 1 } })).status).toBe(404);
    // the old owner still reads it through its CREATED relation (an alternative path)
    expect((await h().request('GET', `/${item}`, { token: O })).status).toBe(200);
    // the new owner drops the last claim: nobody can update, delete or share it any more
    const p2 = await h().request('GET', `/${item}/parents`, { token: newOwner.token });
    const last = p2.json.relations.find((r: any) => r.type === 'OWNS');
    expect((await h().request('DELETE', `/${last.id}`, { token: newOwner.token })).status).toBe(204);
    expect((await h().request('PATCH', `/${item}`, { token: newOwner.token, body: { x: 1 } })).status).toBe(404);
    expect((await h().request('GET', `/${item}`, { token: newOwner.token })).status).toBe(404);
    expect((await relate(O, 'OWNS', u.owner!.id, item)).status).toBe(404);
    // a group path keeps access when a direct OWNS goes
    const shared = await createElement(h(), u.member!.token, { type: 'Item' }, e.f3);
    const direct = await relate(O, 'OWNS', u.member!.id, shared);
    expect(direct.status).toBe(201);
    const directId = direct.headers.get('location')!.slice(1);
    expect((await h().request('DELETE', `/${directId}`, { token: u.member!.token })).status).toBe(204);
    expect((await h().request('PATCH', `/${shared}`, { token: u.member!.token, body: { still: true } })).status).toBe(
      204,
    );
  });

  it('members read and search every group they reach over IS_IN_GROUP alone, and create in it; owners alone change it', async () => {
    const M = u.member!;
    const O = u.owner!.token;
    const missing = await h().request('GET', '/9a5e2f60-1d1e-4c55-8a30-333333333333', { token: M.token });
    // member -IS_IN_GROUP-> g1 -IS_IN_GROUP-> g2: both, whether the member owns nothing of them.
    for (const group of [e.g1!, e.g2!]) {
      const get = await h().request('GET', `/${group}`, { token: M.token });
      expect(get.status, `GET ${group}`).toBe(200);
      expect(get.json.id).toBe(group);
      expect((await h().request('GET', `/${group}`, { token: u.outsider!.token })).status).toBe(404);
      for (const [method, body] of [
        ['PATCH', { renamed: true }],
        ['PUT', { renamed: true }],
        ['DELETE', undefined],
      ] as const) {
        const res = await h().request(method, `/${group}`, { token: M.token, body });
        expect(res.status, `${method} ${group}`).toBe(404);
        expect(res.text.replaceAll(group, '9a5e2f60-1d1e-4c55-8a30-333333333333')).toBe(missing.text);
      }
      for (const kind of ['parents', 'children', 'related'])
        expect((await h().request('GET', `/${group}/${kind}`, { token: M.token })).status, `${kind} of ${group}`).toBe(
          200,
        );
    }
    for (const perm of ALL) {
      const allowed = await permittedIds(h().db, M.id, perm, [e.g1!, e.g2!]);
      expect(allowed, perm).toEqual(new Set(['READ', 'SEARCH', 'CREATE'].includes(perm) ? [e.g1!, e.g2!] : []));
    }
    // /children of g2 lists what it owns; /parents of g1 the member's own membership.
    expect(
      (await h().request('GET', `/${e.g2}/children`, { token: M.token })).json.nodes.map((n: any) => n.id),
    ).toContain(e.f1);
    const parents = await h().request('GET', `/${e.g1}/parents`, { token: M.token });
    expect(parents.json.relations.some((r: any) => r.type === 'IS_IN_GROUP' && r.start === M.id)).toBe(true);
    // GET / lists the group the member is in.
    expect(
      (await h().request('GET', '/?pageSize=1000', { token: M.token })).json.nodes.map((n: any) => n.id),
    ).toContain(e.g1);

    // Not a group reached through an OWNS or a grant on the way: g1 -OWNS-> viaOwns -IS_IN_GROUP-> beyondOwns, and
    // g1 -HAS_READ_ACCESS-> viaGrant -IS_IN_GROUP-> beyondGrant.
    const viaOwns = await createElement(h(), O, { type: 'Group', data: { name: 'owned by inner' } }, e.g1);
    const beyondOwns = await createElement(h(), O, { type: 'Group', data: { name: 'beyond owns' } });
    expect((await relate(O, 'IS_IN_GROUP', viaOwns, beyondOwns)).status).toBe(201);
    const viaGrant = await createElement(h(), O, { type: 'Group', data: { name: 'granted to inner' } });
    expect((await relate(O, 'HAS_READ_ACCESS', e.g1!, viaGrant)).status).toBe(201);
    const beyondGrant = await createElement(h(), O, { type: 'Group', data: { name: 'beyond grant' } });
    expect((await relate(O, 'IS_IN_GROUP', viaGrant, beyondGrant)).status).toBe(201);
    expect((await h().request('GET', `/${viaOwns}`, { token: M.token })).status).toBe(200);
    expect((await h().request('PATCH', `/${viaOwns}`, { token: M.token, body: { owned: true } })).status).toBe(204);
    expect((await h().request('GET', `/${viaGrant}`, { token: M.token })).status).toBe(200);
    for (const beyond of [beyondOwns, beyondGrant]) {
      expect((await h().request('GET', `/${beyond}`, { token: M.token })).status).toBe(404);
      expect((await h().request('POST', `/${beyond}`, { token: M.token, body: { type: 'Note' } })).status).toBe(404);
      for (const perm of ALL) expect((await permittedIds(h().db, M.id, perm, [beyond])).size, `${perm} beyond`).toBe(0);
    }
    expect((await h().request('POST', `/${viaGrant}`, { token: M.token, body: { type: 'Note' } })).status).toBe(404);

    // Search: the search engine (decided from the rows and set-wise), hydration and Cypher paths see the groups too.
    const search = (token: string, body: unknown) => h().request('POST', '/search', { token, body });
    const found = await search(M.token, {
      steps: [
        {
          type: 'searchengine-query-dsl-mixin',
          query: { match_all: {} },
          parameters: { nodeTypes: ['Group'], pageSize: 1000 },
        },
      ],
    });
    expect(found.status, found.text).toBe(200);
    const groups = new Set(found.json.results.map((r: any) => r.id));
    for (const id of [e.g1, e.g2, viaOwns, viaGrant]) expect(groups.has(id), `search finds ${id}`).toBe(true);
    for (const id of [beyondOwns, beyondGrant]) expect(groups.has(id), `search hides ${id}`).toBe(false);
    const named = await search(M.token, {
      steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: 'outer' } } }],
    });
    expect(named.json.results.map((r: any) => r.id)).toEqual([e.g2]);
    const hydrated = await search(M.token, {
      steps: [{ type: 'element-hydration', query: { elementIds: [e.g1, e.g2, beyondOwns, beyondGrant] } }],
    });
    expect(new Set(hydrated.json.results.map((r: any) => r.id))).toEqual(new Set([e.g1, e.g2]));
    const paths = await search(M.token, {
      steps: [
        {
          type: 'cypher-path-subset',
          query: 'MATCH p=(u:User)-[:IS_IN_GROUP*]->(g:Group) WHERE u.id = $me RETURN p',
          parameters: { me: M.id },
        },
      ],
    });
    expect(paths.status, paths.text).toBe(200);
    expect(new Set(paths.json.results.filter((r: any) => r.type === 'Group').map((r: any) => r.id))).toEqual(
      new Set([e.g1, e.g2]),
    );
    expect(
      (await search(u.outsider!.token, { steps: [{ type: 'element-hydration', query: { elementIds: [e.g1, e.g2] } }] }))
        .json.results,
    ).toEqual([]);

    // CREATE in a group: the new element is the group's, so every member (and the group's owner) owns it.
    const other = await userWithToken(h(), 'second-member@matrix.dev');
    expect((await relate(O, 'IS_IN_GROUP', other.id, e.g2!)).status).toBe(201);
    for (const group of [e.g1!, e.g2!]) {
      const created = await h().request('POST', `/${group}`, {
        token: M.token,
        body: { type: 'Note', data: { shared: group } },
      });
      expect(created.status, created.text).toBe(201);
      const id = created.headers.get('location')!.slice(1);
      const owners = (await h().request('GET', `/${id}/parents`, { token: M.token })).json.relations.filter(
        (r: any) => r.type === 'OWNS',
      );
      expect(owners.map((r: any) => r.start)).toEqual([group]);
      expect(
        (await h().request('GET', `/${group}/children`, { token: M.token })).json.nodes.map((n: any) => n.id),
      ).toContain(id);
      expect((await h().request('PATCH', `/${id}`, { token: M.token, body: { edited: true } })).status).toBe(204);
      expect((await h().request('GET', `/${id}`, { token: O })).status).toBe(200);
      expect((await h().request('GET', `/${id}`, { token: u.outsider!.token })).status).toBe(404);
      // The second member is in g2 only: it owns what g2 owns, and nothing of g1.
      expect((await h().request('GET', `/${id}`, { token: other.token })).status).toBe(group === e.g2 ? 200 : 404);
    }
    expect((await h().request('GET', `/${e.g1}`, { token: other.token })).status).toBe(404);
    expect((await h().request('POST', `/${e.g1}`, { token: other.token, body: { type: 'Note' } })).status).toBe(404);
    expect((await h().request('POST', `/${e.g2}`, { token: u.outsider!.token, body: { type: 'Note' } })).status).toBe(
      404,
    );
    // An ordinary relation may start at a group the member is in (CREATE on the start, READ on the end).
    expect((await relate(M.token, 'LINKS', e.g1!, e.f1!)).status).toBe(201);
    expect((await relate(u.outsider!.token, 'LINKS', e.g1!, e.g1!)).status).toBe(404);
  });

  it('a user creates in its own node: POST /<own id> makes an element the user owns, as POST / does', async () => {
    const R = u.reader!;
    const created = await h().request('POST', `/${R.id}`, {
      token: R.token,
      body: { type: 'Note', data: { mine: true } },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.text).toBe('');
    const id = created.headers.get('location')!.slice(1);
    const parents = (await h().request('GET', `/${id}/parents`, { token: R.token })).json.relations;
    expect(parents.filter((r: any) => r.type === 'OWNS').map((r: any) => r.start)).toEqual([R.id]);
    expect(parents.filter((r: any) => r.type === 'CREATED').map((r: any) => r.start)).toEqual([R.id]);
    expect(
      (await h().request('GET', `/${R.id}/children`, { token: R.token })).json.nodes.map((n: any) => n.id),
    ).toContain(id);
    expect((await h().request('PATCH', `/${id}`, { token: R.token, body: { edited: true } })).status).toBe(204);
    expect((await permittedIds(h().db, R.id, 'CREATE', [R.id])).has(R.id)).toBe(true);
    expect((await relate(R.token, 'LINKS', R.id, id)).status).toBe(201);
    // Nobody else creates in it.
    expect((await h().request('POST', `/${R.id}`, { token: u.outsider!.token, body: { type: 'Note' } })).status).toBe(
      404,
    );
    expect((await h().request('POST', `/${R.id}`, { token: u.owner!.token, body: { type: 'Note' } })).status).toBe(404);
    expect((await h().request('DELETE', `/${id}`, { token: R.token })).status).toBe(204);
  });

  it('removing a member from a group removes the access it gave', async () => {
    const parents = await h().request('GET', `/${e.g1}/related`, { token: u.owner!.token });
    const membership = parents.json.relations.find((r: any) => r.type === 'IS_IN_GROUP' && r.start === u.member!.id);
    expect(membership).toBeTruthy();
    // The member reads the groups (remembered), then drops its own membership: both groups go with it.
    for (const group of [e.g1!, e.g2!])
      expect((await h().request('GET', `/${group}`, { token: u.member!.token })).status).toBe(200);
    expect((await h().request('DELETE', `/${membership.id}`, { token: u.member!.token })).status).toBe(204);
    expect((await h().request('GET', `/${e.doc}`, { token: u.member!.token })).status).toBe(404);
    for (const group of [e.g1!, e.g2!]) {
      expect((await h().request('GET', `/${group}`, { token: u.member!.token })).status).toBe(404);
      expect((await h().request('GET', `/${group}/children`, { token: u.member!.token })).status).toBe(404);
      expect((await h().request('POST', `/${group}`, { token: u.member!.token, body: { type: 'Note' } })).status).toBe(
        404,
      );
    }
  });
});

export type { Harness };
