import { expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;

describeBackends('element CRUD', (h) => {
  let alice: Awaited<ReturnType<typeof userWithToken>>;
  it('creates a node with OWNS and CREATED from the caller', async () => {
    alice = await userWithToken(h(), 'alice@crud.dev');
    const res = await h().request('POST', '/', {
      token: alice.token,
      body: { type: 'Doc', data: { title: 'First', n: 1, nested: { _x: 1 } } },
    });
    expect(res.status).toBe(201);
    expect(res.text).toBe('');
    const id = res.headers.get('location')!.slice(1);
    const get = await h().request('GET', `/${id}`, { token: alice.token });
    expect(get.status).toBe(200);
    expect(get.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(get.json).toEqual({
      type: 'Doc',
      id,
      data: {
        title: 'First',
        n: 1,
        nested: { _x: 1 },
        created: expect.stringMatching(ISO),
        updated: expect.stringMatching(ISO),
      },
    });
    const { rows } = await h().db.query<{ type: string; start_id: string }>(
      'SELECT type, start_id FROM elements WHERE end_id = $1 ORDER BY type',
      [id],
    );
    expect(rows).toEqual([
      { type: 'CREATED', start_id: alice.id },
      { type: 'OWNS', start_id: alice.id },
    ]);
  });

  it('refuses a client id (the service assigns it): 400 forbidden-property, nothing stored, whether the id is used or not', async () => {
    const count = async () =>
      Number((await h().db.query<{ n: string }>('SELECT count(*) AS n FROM elements')).rows[0]!.n);
    const before = await count();
    const used = await createElement(h(), alice.token, { type: 'Doc' });
    const after = await count();
    for (const id of ['6f1f7c1e-4d2b-4c1a-9a1e-0a2b3c4d5e6f', used, 'not-a-uuid']) {
      for (const body of [
        { type: 'Doc', id },
        { type: 'LINKS', id, start: used, end: used },
      ]) {
        const res = await h().request('POST', '/', { token: alice.token, body });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.json.type).toMatch(/\/error\/400\/forbidden-property$/);
      }
      expect(
        (await h().request('POST', `/${used}`, { token: alice.token, body: { type: 'Doc', id } })).json.type,
      ).toMatch(/forbidden-property$/);
    }
    expect(after).toBe(before + 3);
    expect(await count()).toBe(after);
    // null is the same as no id.
    expect((await h().request('POST', '/', { token: alice.token, body: { type: 'Doc', id: null } })).status).toBe(201);
  });

  it('rejects reserved types and properties, and bad shapes, changing nothing', async () => {
    const count = async () => (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const before = await count();
    const cases: [unknown, string][] = [
      [{ type: 'User' }, 'reserved-type'],
      [{ type: 'Token' }, 'reserved-type'],
      [{ type: 'Upload' }, 'reserved-type'],
      [{ type: '_Secret' }, 'reserved-type'],
      [{ data: {} }, 'missing-property'],
      [{ type: 'Doc', data: { id: 'x' } }, 'forbidden-property'],
      [{ type: 'Doc', data: { created: 'x' } }, 'forbidden-property'],
      [{ type: 'Doc', data: { updated: 'x' } }, 'forbidden-property'],
      [{ type: 'Doc', data: { file: {} } }, 'forbidden-property'],
      [{ type: 'Doc', data: { hasFile: true } }, 'forbidden-property'],
      [{ type: 'Doc', data: { _internal: 1 } }, 'forbidden-property'],
      [{ type: 'Doc', data: 'text' }, 'bad-content'],
      [{ type: 'Has Space' }, 'bad-content'],
      [{ type: 42 }, 'bad-content'],
      [{ type: 'Doc', id: 'not-a-uuid' }, 'forbidden-property'],
      [{ type: 'REL', start: alice.id }, 'incomplete-mutual-dependency'],
      [{ type: 'REL', end: alice.id }, 'incomplete-mutual-dependency'],
      [{ type: 'CREATED', start: alice.id, end: alice.id }, 'reserved-type'],
      [{ type: 'Doc', data: { name: 5 } }, 'bad-content'],
      [{ type: 'Doc', data: { name: { first: 'x' } } }, 'bad-content'],
    ];
    for (const [body, slug] of cases) {
      const res = await h().request('POST', '/', { token: alice.token, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.type, JSON.stringify(body)).toBe(`${h().url}/error/400/${slug}`);
    }
    expect(await count()).toBe(before);
    // PUT and PATCH alike: `name` is a string or nothing (null removes it).
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'report' } });
    for (const [method, body] of [
      ['PATCH', { name: 5 }],
      ['PUT', { name: ['a'] }],
      ['PATCH', { name: true, other: 1 }],
    ] as const) {
      const res = await h().request(method, `/${id}`, { token: alice.token, body });
      expect([method, res.status, res.json?.detail]).toEqual([method, 400, "The property 'name' must be a string."]);
    }
    expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data).not.toHaveProperty('other');
    expect((await h().request('PATCH', `/${id}`, { token: alice.token, body: { name: null } })).status).toBe(204);
    expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data).not.toHaveProperty('name');
  });

  it('PUT replaces, PATCH merges and null removes, updated moves, created stays', async () => {
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { a: 1, b: 2 } });
    const first = (await h().request('GET', `/${id}`, { token: alice.token })).json;
    h().clock.advance(5);
    expect(
      (await h().request('PATCH', `/${id}`, { token: alice.token, body: { b: null, c: [1, { d: true }] } })).status,
    ).toBe(204);
    const patched = (await h().request('GET', `/${id}`, { token: alice.token })).json;
    expect(patched.data).toMatchObject({ a: 1, c: [1, { d: true }] });
    expect(patched.data).not.toHaveProperty('b');
    expect(patched.data.created).toBe(first.data.created);
    expect(Date.parse(patched.data.updated) - Date.parse(first.data.updated)).toBeGreaterThanOrEqual(5000);
    const put = await h().request('PUT', `/${id}`, { token: alice.token, body: { z: 'only' } });
    expect(put.status).toBe(204);
    expect(put.text).toBe('');
    const replaced = (await h().request('GET', `/${id}`, { token: alice.token })).json;
    expect(Object.keys(replaced.data).sort()).toEqual(['created', 'updated', 'z']);
    for (const method of ['PUT', 'PATCH']) {
      for (const key of ['id', 'created', 'updated', 'file', 'hasFile', '_x']) {
        const res = await h().request(method, `/${id}`, { token: alice.token, body: { [key]: 1 } });
        expect(res.status).toBe(400);
        expect(res.json.type).toMatch(/forbidden-property$/);
      }
    }
    expect((await h().request('GET', `/${id}`, { token: alice.token })).json).toEqual(replaced);
  });

  it('creates child nodes owned by the parent and relations without OWNS/CREATED', async () => {
    const parent = await createElement(h(), alice.token, { type: 'Folder' });
    const child = await createElement(h(), alice.token, { type: 'Doc' }, parent);
    const { rows } = await h().db.query<{ type: string; start_id: string }>(
      'SELECT type, start_id FROM elements WHERE end_id = $1 ORDER BY type',
      [child],
    );
    expect(rows).toEqual([
      { type: 'CREATED', start_id: alice.id },
      { type: 'OWNS', start_id: parent },
    ]);
    const tag = await createElement(h(), alice.token, { type: 'Tag' });
    const rel = await h().request('POST', '/', {
      token: alice.token,
      body: { type: 'HAS_TAG', start: child, end: tag, data: { weight: 2 } },
    });
    expect(rel.status).toBe(201);
    const relId = rel.headers.get('location')!.slice(1);
    const got = await h().request('GET', `/${relId}`, { token: alice.token });
    expect(got.json).toMatchObject({ type: 'HAS_TAG', id: relId, start: child, end: tag, data: { weight: 2 } });
    expect((await h().db.query('SELECT 1 FROM elements WHERE end_id = $1', [relId])).rows).toHaveLength(0);
  });

  it('refuses a relation whose start or end is a relation (400 when the caller may use both, else 404), storing nothing', async () => {
    // (Types of their own, deleted at the end: the introspection test below lists the types in use.)
    const a = await createElement(h(), alice.token, { type: 'Doc' });
    const b = await createElement(h(), alice.token, { type: 'Doc' });
    const link = await h().request('POST', '/', { token: alice.token, body: { type: 'POINTS_AT', start: a, end: b } });
    expect(link.status).toBe(201);
    const linkId = link.headers.get('location')!.slice(1);
    const count = async () =>
      Number((await h().db.query<{ n: string }>('SELECT count(*) AS n FROM elements')).rows[0]!.n);
    const before = await count();
    for (const body of [
      { start: a, end: linkId },
      { start: linkId, end: b },
    ]) {
      const res = await h().request('POST', '/', { token: alice.token, body: { type: 'ANNOTATES', ...body } });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
    }
    expect(await count()).toBe(before);
    // Someone who cannot read the relation learns nothing: the same 404 as for a missing id.
    const bob = await userWithToken(h(), 'bob@relation-ends.dev');
    const own = await createElement(h(), bob.token, { type: 'Doc' });
    const hidden = await h().request('POST', '/', {
      token: bob.token,
      body: { type: 'ANNOTATES', start: own, end: linkId },
    });
    const missing = await h().request('POST', '/', {
      token: bob.token,
      body: { type: 'ANNOTATES', start: own, end: '0b7f9a3e-3c1d-4f7a-9d7e-2f1c5b8a6e40' },
    });
    expect(hidden.status).toBe(404);
    expect(hidden.text.replace(/"instance":"[^"]*"/, '')).toBe(missing.text.replace(/"instance":"[^"]*"/, ''));
    expect((await h().request('DELETE', `/${linkId}`, { token: alice.token })).status).toBe(204);
  });

  it('deletes a node with its relations', async () => {
    const a = await createElement(h(), alice.token, { type: 'Doc' });
    const b = await createElement(h(), alice.token, { type: 'Doc' });
    const rel = await h().request('POST', '/', { token: alice.token, body: { type: 'LINKS', start: a, end: b } });
    const relId = rel.headers.get('location')!.slice(1);
    const del = await h().request('DELETE', `/${a}`, { token: alice.token });
    expect(del.status).toBe(204);
    expect((await h().request('GET', `/${a}`, { token: alice.token })).status).toBe(404);
    expect((await h().request('GET', `/${relId}`, { token: alice.token })).status).toBe(404);
    expect(
      (await h().db.query('SELECT 1 FROM elements WHERE id = $1 OR start_id = $1 OR end_id = $1', [a])).rows,
    ).toHaveLength(0);
    expect((await h().request('GET', `/${b}`, { token: alice.token })).status).toBe(200);
  });

  it('ETags: strong, change with the data, If-None-Match 304/412, If-Match 412 changes nothing', async () => {
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { v: 1 } });
    const first = await h().request('GET', `/${id}`, { token: alice.token });
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[^"]+"$/);
    const again = await h().request('GET', `/${id}`, { token: alice.token });
    expect(again.headers.get('etag')).toBe(etag);
    const notModified = await h().request('GET', `/${id}`, { token: alice.token, headers: { 'if-none-match': etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.text).toBe('');
    expect(notModified.headers.get('etag')).toBe(etag);
    const head = await h().request('HEAD', `/${id}`, { token: alice.token, headers: { 'if-none-match': etag } });
    expect(head.status).toBe(304);
    const headFull = await h().request('HEAD', `/${id}`, { token: alice.token });
    expect(headFull.headers.get('content-length')).toBe(first.headers.get('content-length'));
    expect(headFull.headers.get('etag')).toBe(etag);
    const stale = await h().request('PATCH', `/${id}`, {
      token: alice.token,
      headers: { 'if-match': '"stale"' },
      body: { v: 2 },
    });
    expect(stale.status).toBe(412);
    expect(stale.json.type).toMatch(/\/error\/412\/precondition-failed$/);
    expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data.v).toBe(1);
    const inm = await h().request('PUT', `/${id}`, {
      token: alice.token,
      headers: { 'if-none-match': '*' },
      body: { v: 3 },
    });
    expect(inm.status).toBe(412);
    h().clock.advance(1);
    const ok = await h().request('PATCH', `/${id}`, {
      token: alice.token,
      headers: { 'if-match': etag },
      body: { v: 2 },
    });
    expect(ok.status).toBe(204);
    const changed = await h().request('GET', `/${id}`, { token: alice.token });
    expect(changed.headers.get('etag')).not.toBe(etag);
    const delStale = await h().request('DELETE', `/${id}`, { token: alice.token, headers: { 'if-match': etag } });
    expect(delStale.status).toBe(412);
    expect((await h().request('GET', `/${id}`, { token: alice.token })).status).toBe(200);
  });

  it('If-Match on reads and on creating a child: 412 when it fails, and nothing is created', async () => {
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { v: 1 } });
    const etag = (await h().request('GET', `/${id}`, { token: alice.token })).headers.get('etag')!;
    for (const method of ['GET', 'HEAD']) {
      const stale = await h().request(method, `/${id}`, { token: alice.token, headers: { 'if-match': '"stale"' } });
      expect([method, stale.status]).toEqual([method, 412]);
      expect((await h().request(method, `/${id}`, { token: alice.token, headers: { 'if-match': etag } })).status).toBe(
        200,
      );
      expect((await h().request(method, `/${id}`, { token: alice.token, headers: { 'if-match': '*' } })).status).toBe(
        200,
      );
    }
    const children = await h().request('GET', `/${id}/children`, { token: alice.token });
    expect(
      (await h().request('GET', `/${id}/children`, { token: alice.token, headers: { 'if-match': '"stale"' } })).status,
    ).toBe(412);
    expect(
      (
        await h().request('GET', `/${id}/children`, {
          token: alice.token,
          headers: { 'if-match': children.headers.get('etag')! },
        })
      ).status,
    ).toBe(200);
    expect((await h().request('GET', '/', { token: alice.token, headers: { 'if-match': '"stale"' } })).status).toBe(
      412,
    );

    const count = async () =>
      (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements WHERE type = $1', ['Child'])).rows[0]!
        .n;
    const before = await count();
    const child = (headers: Record<string, string>) =>
      h().request('POST', `/${id}`, { token: alice.token, headers, body: { type: 'Child' } });
    const stale = await child({ 'if-match': '"stale"' });
    expect(stale.status).toBe(412);
    expect(stale.json.type).toMatch(/\/error\/412\/precondition-failed$/);
    expect((await child({ 'if-none-match': etag })).status).toBe(412);
    expect(await count()).toBe(before);
    expect((await child({ 'if-match': etag })).status).toBe(201);
    expect((await child({ 'if-none-match': '"other"' })).status).toBe(201);
    expect(await count()).toBe(before + 2);
    // A parent the caller cannot see stays a 404 without preconditions, and with If-Match there is no ETag to match.
    const bob = await userWithToken(h(), 'bob-if-match@crud.dev');
    expect((await h().request('POST', `/${id}`, { token: bob.token, body: { type: 'Child' } })).status).toBe(404);
    expect(
      (
        await h().request('POST', `/${id}`, {
          token: bob.token,
          headers: { 'if-none-match': '*' },
          body: { type: 'Child' },
        })
      ).status,
    ).toBe(404);
    expect(await count()).toBe(before + 2);
  });

  it('POST / evaluates its preconditions against the index collection (GET /)', async () => {
    const carol = await userWithToken(h(), 'carol-post-index@crud.dev');
    await createElement(h(), carol.token, { type: 'Doc' });
    const count = async () =>
      (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements WHERE type = $1', ['Rooted']))
        .rows[0]!.n;
    const post = (headers: Record<string, string>) =>
      h().request('POST', '/', { token: carol.token, headers, body: { type: 'Rooted' } });
    const index = async () => (await h().request('GET', '/', { token: carol.token })).headers.get('etag')!;
    const etag = await index();
    expect(etag).toMatch(/^"/);
    for (const headers of [{ 'if-none-match': '*' }, { 'if-match': '"stale"' }, { 'if-none-match': etag }] as Record<
      string,
      string
    >[]) {
      const res = await post(headers);
      expect(res.status, JSON.stringify(headers)).toBe(412);
      expect(res.json.type).toMatch(/\/error\/412\/precondition-failed$/);
    }
    expect(await count()).toBe(0);
    expect((await post({ 'if-match': '*' })).status).toBe(201);
    expect((await post({ 'if-match': etag })).status).toBe(412); // the index changed with the first Rooted node
    expect((await post({ 'if-match': await index() })).status).toBe(201);
    expect((await post({ 'if-none-match': '"other"' })).status).toBe(201);
    expect(await count()).toBe(3);
    // Credentials first: a bad token with a precondition is a 401.
    const bad = await h().request('POST', '/', {
      token: `secret-token:${'1'.repeat(22)}`,
      headers: { 'if-none-match': '*' },
      body: { type: 'Rooted' },
    });
    expect(bad.status).toBe(401);
  });

  it('concurrent PATCHes with If-Match: exactly one wins, no lost update', async () => {
    const id = await createElement(h(), alice.token, { type: 'Counter', data: { n: 0 } });
    const etag = (await h().request('GET', `/${id}`, { token: alice.token })).headers.get('etag')!;
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        h().request('PATCH', `/${id}`, {
          token: alice.token,
          headers: { 'if-match': etag },
          body: { n: i + 1, [`w${i}`]: true },
        }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 204)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(5);
    const final = (await h().request('GET', `/${id}`, { token: alice.token })).json.data;
    const winner = statuses.indexOf(204);
    expect(final.n).toBe(winner + 1);
    expect(Object.keys(final).filter((k) => k.startsWith('w'))).toEqual([`w${winner}`]);
  });

  it('concurrent PATCHes without preconditions merge into each other: no property is lost', async () => {
    const id = await createElement(h(), alice.token, { type: 'Counter', data: { base: true } });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        h().request('PATCH', `/${id}`, { token: alice.token, body: { [`w${i}`]: i } }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(204));
    const { rows } = await h().db.query<{ data: Record<string, unknown> }>('SELECT data FROM elements WHERE id = $1', [
      id,
    ]);
    expect(rows[0]!.data).toEqual({ base: true, w0: 0, w1: 1, w2: 2, w3: 3, w4: 4, w5: 5, w6: 6, w7: 7 });
  });

  it('answers 401 before anything else for unknown tokens, and writes nothing', async () => {
    const bogus = `secret-token:${'1'.repeat(22)}`;
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { keep: 1 } });
    const before = (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    for (const [method, path, body] of [
      ['POST', '/', { type: 'Doc' }],
      ['POST', '/', { type: 'User' }],
      ['POST', '/', 'not an object'],
      ['POST', `/${id}`, { type: 'Doc' }],
      ['PATCH', `/${id}`, { x: 1 }],
      ['PATCH', `/${id}`, [1, 2]],
      ['PUT', `/${id}`, { _internal: 1 }],
    ] as const) {
      const r = await h().request(method, path, { token: bogus, body });
      expect([method, path, r.status]).toEqual([method, path, 401]);
    }
    expect((await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n).toBe(before);
    expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data.keep).toBe(1);
  });

  it('children of an element the caller may not create in, and PATCHes of one it may not update, are 404 and write nothing', async () => {
    const bob = await userWithToken(h(), 'bob@crud.dev');
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { keep: 1 } });
    const before = (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const child = await h().request('POST', `/${id}`, { token: bob.token, body: { type: 'Doc' } });
    expect(child.status).toBe(404);
    expect(
      (await h().request('POST', `/${crypto.randomUUID()}`, { token: bob.token, body: { type: 'Doc' } })).status,
    ).toBe(404);
    expect((await h().request('PATCH', `/${id}`, { token: bob.token, body: { keep: 2 } })).status).toBe(404);
    expect((await h().request('PUT', `/${id}`, { token: bob.token, body: {} })).status).toBe(404);
    expect(
      (await h().request('PATCH', `/${crypto.randomUUID()}`, { token: bob.token, body: { keep: 2 } })).status,
    ).toBe(404);
    expect((await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n).toBe(before);
    expect((await h().request('GET', `/${id}`, { token: alice.token })).json.data.keep).toBe(1);
  });

  it('introspection: graph structure and instance configuration', async () => {
    const gs = await h().request('GET', '/graph-structure', { token: alice.token });
    expect(gs.status).toBe(200);
    expect(gs.json.nodeTypes).toEqual([...gs.json.nodeTypes].sort());
    expect(gs.json.nodeTypes).toEqual(expect.arrayContaining(['Doc', 'Folder', 'Tag', 'User', 'Token', 'Counter']));
    expect(gs.json.relationTypes).toEqual(expect.arrayContaining(['CREATED', 'HAS_TAG', 'OWNS']));
    expect(gs.json.relationTypes).not.toContain('LINKS'); // its only instance was deleted with its start node
    const ic = await h().request('GET', '/instance-configuration');
    expect(ic.status).toBe(200);
    expect(ic.json).toEqual({
      version: 'dev',
      pageSize: { min: 5, default: 25, max: 100 },
      register: { enabled: true, uniqueIdentifier: 'email', uniqueIdentifierRegex: false },
      expression: { enabled: true, maxLength: 10240 },
      file: {
        maxFileSizeInBytes: 10 * 1024 ** 3,
        uploadMinChunkSizeInBytes: 5 * 1024 ** 2,
        uploadMaxChunkSizeInBytes: 101 * 1024 ** 2,
        uploadChunkDigitsLength: 4,
        uploadExpiresInSecondsAfterFirstRequest: 10800,
        expiredUploadCanBeDeletedAfterExpirationInSeconds: 3600,
      },
    });
  });
});

describeBackends(
  'instance configuration switches',
  (h) => {
    it('hides the version or the whole document', async () => {
      expect((await h().request('GET', '/instance-configuration')).status).toBe(403);
    });
  },
  { settings: { instanceConfiguration: { enabled: false } } },
);

describeBackends(
  'instance configuration without version',
  (h) => {
    it('answers version null', async () => {
      expect((await h().request('GET', '/instance-configuration')).json.version).toBeNull();
    });
  },
  { settings: { instanceConfiguration: { showVersion: false } } },
);
