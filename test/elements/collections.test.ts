import { beforeAll, expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

describeBackends('collections', (h) => {
  let alice: User;
  let bob: User;
  let folder: string;
  const children: string[] = [];

  beforeAll(async () => {
    alice = await userWithToken(h(), 'alice@coll.dev');
    bob = await userWithToken(h(), 'bob@coll.dev');
    folder = await createElement(h(), alice.token, { type: 'Folder' });
    for (let i = 0; i < 12; i++)
      children.push(await createElement(h(), alice.token, { type: 'Doc', data: { i } }, folder));
    children.sort();
  });

  it('pages children by id with links, totals and only readable members', async () => {
    const res = await h().request('GET', `/${folder}/children?pageSize=5`, { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      type: '_PartialCollection',
      id: `/${folder}/children?pageSize=5`,
      totalNodes: 12,
      links: {
        first: `/${folder}/children?pageSize=5`,
        previous: null,
        next: `/${folder}/children?page=2&pageSize=5`,
        last: `/${folder}/children?page=3&pageSize=5`,
      },
    });
    expect(res.json.nodes.map((n: any) => n.id)).toEqual(children.slice(0, 5));
    expect(res.json.relations).toHaveLength(5);
    for (const r of res.json.relations) expect(r).toMatchObject({ type: 'OWNS', start: folder });
    const last = await h().request('GET', `/${folder}/children?page=3&pageSize=5`, { token: alice.token });
    expect(last.json.nodes.map((n: any) => n.id)).toEqual(children.slice(10));
    expect(last.json.links).toMatchObject({ previous: `/${folder}/children?page=2&pageSize=5`, next: null });
    const def = await h().request('GET', `/${folder}/children`, { token: alice.token });
    expect(def.json.links).toEqual({
      first: `/${folder}/children`,
      previous: null,
      next: null,
      last: `/${folder}/children`,
    });
    expect(def.json.nodes).toHaveLength(12);
    // bob cannot read the folder: 404; and sees only what he may read when granted one child
    expect((await h().request('GET', `/${folder}/children`, { token: bob.token })).status).toBe(404);
  });

  it('checks each member when READ on the anchor does not propagate (READ through CREATED only)', async () => {
    const carol = await userWithToken(h(), 'carol@coll.dev');
    const folder2 = await createElement(h(), alice.token, { type: 'Folder' });
    expect(
      (
        await h().request('POST', '/', {
          token: alice.token,
          body: { type: 'HAS_CREATE_ACCESS', start: carol.id, end: folder2 },
        })
      ).status,
    ).toBe(201);
    const c1 = await createElement(h(), carol.token, { type: 'Doc' }, folder2); // carol reads it through CREATED
    await createElement(h(), alice.token, { type: 'Doc' }, c1); // not readable for carol
    const c2 = await createElement(h(), carol.token, { type: 'Doc' }, c1); // readable for carol (CREATED)
    const asCarol = await h().request('GET', `/${c1}/children`, { token: carol.token });
    expect(asCarol.status).toBe(200);
    expect(asCarol.json.totalNodes).toBe(1);
    expect(asCarol.json.nodes.map((n: any) => n.id)).toEqual([c2]);
    expect(asCarol.json.relations.map((r: any) => r.end)).toEqual([c2]);
    const asAlice = await h().request('GET', `/${c1}/children`, { token: alice.token });
    expect(asAlice.json.totalNodes).toBe(2);
  });

  it('clamps page sizes and rejects non-integers', async () => {
    const small = await h().request('GET', `/${folder}/children?pageSize=1`, { token: alice.token });
    expect(small.json.nodes).toHaveLength(5);
    const bad = await h().request('GET', `/${folder}/children?page=abc`, { token: alice.token });
    expect(bad.status).toBe(400);
    expect(bad.json.type).toMatch(/bad-content$/);
    expect((await h().request('GET', `/${folder}/children?pageSize=1.5`, { token: alice.token })).status).toBe(400);
    // Integers of any size are clamped (DESIGN: "integers out of range are clamped").
    for (const query of [
      'page=1000000000000000',
      `page=${'9'.repeat(400)}`,
      'page=-1000000000000000000',
      `pageSize=${'9'.repeat(30)}`,
    ]) {
      const res = await h().request('GET', `/${folder}/children?${query}`, { token: alice.token });
      expect(res.status, query).toBe(200);
      expect(res.json.totalNodes).toBe(12);
    }
    const far = await h().request('GET', `/${folder}/children?page=${'9'.repeat(400)}`, { token: alice.token });
    expect(far.json.nodes).toEqual([]);
    expect(far.json.links.previous).toBe(far.json.links.last);
  });

  it('lists parents (every incoming relation), related (both directions) and the index', async () => {
    const grant = await h().request('POST', '/', {
      token: alice.token,
      body: { type: 'HAS_READ_ACCESS', start: bob.id, end: children[0] },
    });
    expect(grant.status).toBe(201);
    const parents = await h().request('GET', `/${children[0]}/parents`, { token: alice.token });
    expect(parents.json.totalNodes).toBe(3);
    expect(parents.json.relations.map((r: any) => r.type).sort()).toEqual(['CREATED', 'HAS_READ_ACCESS', 'OWNS']);
    // alice cannot read bob's User node, so it is not listed, but the grant relation is (so she can revoke it)
    expect(new Set(parents.json.nodes.map((n: any) => n.id))).toEqual(new Set([folder, alice.id]));
    // A group's parents are its members: memberships are found there too.
    const group = await createElement(h(), alice.token, { type: 'Group' });
    const membership = await h().request('POST', '/', {
      token: alice.token,
      body: { type: 'IS_IN_GROUP', start: bob.id, end: group },
    });
    expect(membership.status).toBe(201);
    const groupParents = await h().request('GET', `/${group}/parents`, { token: alice.token });
    expect(groupParents.json.relations.map((r: any) => r.type).sort()).toEqual(['CREATED', 'IS_IN_GROUP', 'OWNS']);
    const tag = await createElement(h(), alice.token, { type: 'Tag' });
    await h().request('POST', '/', { token: alice.token, body: { type: 'HAS_TAG', start: children[0], end: tag } });
    const related = await h().request('GET', `/${children[0]}/related`, { token: alice.token });
    expect(related.json.relations.map((r: any) => r.type).sort()).toEqual([
      'CREATED',
      'HAS_READ_ACCESS',
      'HAS_TAG',
      'OWNS',
    ]);
    // bob reads the child now; his index lists it
    const index = await h().request('GET', '/', { token: bob.token });
    expect(index.status).toBe(200);
    expect(index.json.id).toBe('/');
    expect(index.json.nodes.map((n: any) => n.id)).toContain(children[0]);
    const aliceIndex = await h().request('GET', '/', { token: alice.token });
    expect(aliceIndex.json.nodes.map((n: any) => n.id)).toEqual(expect.arrayContaining([folder, tag]));
    expect(aliceIndex.json.nodes.map((n: any) => n.id)).not.toContain(children[0]); // two hops away
  });

  it('answers each page in one database round trip, the index included', async () => {
    const db = h().db;
    const original = db.query;
    const statements: string[] = [];
    db.query = ((text: string, values?: readonly unknown[], name?: string) => {
      statements.push(name ?? text);
      return original.call(db, text, values, name);
    }) as typeof db.query;
    try {
      for (const path of [`/${folder}/children`, `/${folder}/parents`, `/${folder}/related`, '/']) {
        statements.length = 0;
        expect((await h().request('GET', path, { token: alice.token })).status, path).toBe(200);
        expect(statements, path).toHaveLength(1);
      }
      statements.length = 0;
      expect((await h().request('GET', `/${folder}/children`, { token: bob.token })).status).toBe(404);
      expect(statements).toHaveLength(1);
    } finally {
      db.query = original;
    }
  });

  it('401 for bad credentials before 400 for bad paging; 404 alike for missing, unreadable and non-UUID anchors', async () => {
    const unknown = 'secret-token:1234567890ABCDEFabcdef';
    for (const path of [`/${folder}/children`, `/${folder}/parents`, `/${folder}/related`, '/']) {
      const res = await h().request('GET', path, { token: unknown });
      expect(res.status, path).toBe(401);
      expect(res.json.type).toMatch(/\/error\/401\/unauthorized$/);
      expect(res.json.detail).toBe('The token is unknown, expired or revoked.');
      expect((await h().request('GET', path, { headers: { authorization: 'Bearer nonsense' } })).status, path).toBe(
        401,
      );
      expect((await h().request('GET', path)).status, path).toBe(401); // no anonymous user configured
      expect((await h().request('GET', `${path}?page=abc`, { token: unknown })).status, path).toBe(401);
      expect((await h().request('GET', `${path}?page=abc`, { token: alice.token })).status, path).toBe(400);
    }
    const missing = await h().request('GET', `/00000000-0000-4000-8000-000000000000/children`, { token: alice.token });
    const hidden = await h().request('GET', `/${folder}/related`, { token: bob.token });
    expect(missing.status).toBe(404);
    expect(hidden.status).toBe(404);
    expect(hidden.json.type).toBe(missing.json.type);
    expect((await h().request('GET', `/${folder.toUpperCase()}/children`, { token: alice.token })).status).toBe(200);
    expect((await h().request('GET', `/not-a-uuid/children`, { token: unknown })).status).toBe(404);
  });

  it('lists every element as GET /<id> shows it (the database renders collection members)', async () => {
    const box = await createElement(h(), alice.token, { type: 'Folder' });
    const tricky = {
      quote: 'say "hi"\n\ttab \\ back/slash',
      unicode: 'Zürich 東京 😀 \u2028',
      control: '\u0001\u001f\u007f',
      nested: { a: [1, 2.5, { b: null }], z: true, 'dotted.key': 'x' },
      numbers: [1e21, -0.000001, 123456789, 0],
      empty: {},
      emptyList: [],
      'key with spaces': 'x',
    };
    const rich = await createElement(h(), alice.token, { type: 'Doc_x-1', data: tricky }, box);
    const bare = await createElement(h(), alice.token, { type: 'Doc' }, box);
    const withFile = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'has a file' } }, box);
    const upload = await h().request('POST', `/${withFile}/file`, {
      token: alice.token,
      raw: new TextEncoder().encode('hello'),
      headers: { 'upload-complete': '?1', 'content-disposition': 'attachment; filename="note.txt"' },
    });
    expect(upload.status).toBe(201);
    const link = await h().request('POST', '/', {
      token: alice.token,
      body: { type: 'LINKS', start: rich, end: bare, data: { why: 'ü "x"' } },
    });
    expect(link.status).toBe(201);
    h().clock.advance(5);
    await h().request('PATCH', `/${bare}`, { token: alice.token, body: { touched: 1.5 } });

    const same = async (listed: { id: string }) => {
      const one = await h().request('GET', `/${listed.id}`, { token: alice.token });
      expect(one.status).toBe(200);
      // Same values, same key order (JSON.stringify keeps the order of the parsed objects).
      expect(JSON.stringify(listed)).toBe(JSON.stringify(one.json));
    };
    const page = await h().request('GET', `/${box}/children`, { token: alice.token });
    expect(page.status).toBe(200);
    expect(page.json.nodes).toHaveLength(3);
    expect(page.json.relations).toHaveLength(3);
    for (const element of [...page.json.nodes, ...page.json.relations]) await same(element);
    const fileNode = page.json.nodes.find((n: any) => n.id === withFile);
    expect(fileNode.data).toMatchObject({ hasFile: true, file: { contentLength: 5, extension: 'txt' } });
    expect(fileNode.file).toEqual(fileNode.data.file);
    expect(page.json.nodes.find((n: any) => n.id === rich).data).toMatchObject(tricky);
    const related = await h().request('GET', `/${rich}/related`, { token: alice.token });
    const linkJson = related.json.relations.find((r: any) => r.type === 'LINKS');
    expect(linkJson).toMatchObject({ start: rich, end: bare, data: { why: 'ü "x"' } });
    await same(linkJson);
    // Relations are ordered by member, then by relation id; nodes by id.
    expect(page.json.nodes.map((n: any) => n.id)).toEqual([rich, bare, withFile].sort());
    expect(page.json.relations.map((r: any) => r.end)).toEqual([rich, bare, withFile].sort());
  });

  it('collection ETags change with membership and member data; 304 on match', async () => {
    const first = await h().request('GET', `/${folder}/children`, { token: alice.token });
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"/);
    expect(
      (await h().request('GET', `/${folder}/children`, { token: alice.token, headers: { 'if-none-match': etag } }))
        .status,
    ).toBe(304);
    h().clock.advance(1);
    await h().request('PATCH', `/${children[3]}`, { token: alice.token, body: { changed: true } });
    const afterPatch = await h().request('GET', `/${folder}/children`, { token: alice.token });
    expect(afterPatch.headers.get('etag')).not.toBe(etag);
    await createElement(h(), alice.token, { type: 'Doc' }, folder);
    const afterCreate = await h().request('GET', `/${folder}/children`, { token: alice.token });
    expect(afterCreate.headers.get('etag')).not.toBe(afterPatch.headers.get('etag'));
  });
});

describeBackends(
  'collection ETag limit',
  (h) => {
    it('omits the ETag above cache.etagUpperLimitInCollectionEndpoints', async () => {
      const alice = await userWithToken(h(), 'alice@limit.dev');
      const folder = await createElement(h(), alice.token, { type: 'Folder' });
      for (let i = 0; i < 3; i++) await createElement(h(), alice.token, { type: 'Doc' }, folder);
      expect(
        (await h().request('GET', `/${folder}/children`, { token: alice.token })).headers.get('etag'),
      ).toBeTruthy();
      await createElement(h(), alice.token, { type: 'Doc' }, folder);
      const res = await h().request('GET', `/${folder}/children`, { token: alice.token });
      expect(res.json.totalNodes).toBe(4);
      expect(res.headers.get('etag')).toBeNull();
    });
  },
  { settings: { cache: { etagUpperLimitInCollectionEndpoints: 3 } } },
);
