// `sort` and `search_after` of the query DSL step over HTTP, on both backends: each kind of key, `missing`, ties,
// descending ids, the sort values of the hits and the response's searchAfter, paging while elements are inserted
// and while access is taken away, and every malformed sort a 400 naming its place.
import { beforeAll, describe, expect, it } from 'vitest';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const list = (h: Harness, token: string, parameters: Record<string, unknown>, query: unknown = { match_all: {} }) =>
  h.request('POST', '/search', {
    token,
    body: {
      steps: [{ type: 'searchengine-query-dsl-mixin', query, parameters: { nodeTypes: ['Item'], ...parameters } }],
    },
  });
const names = (res: { json: any }) => res.json.results.map((e: any) => e.data.name);
const hits = async (h: Harness, token: string, parameters: Record<string, unknown>) => {
  const res = await h.request('POST', '/search', {
    token,
    body: {
      debug: true,
      steps: [
        {
          type: 'searchengine-query-dsl-mixin',
          query: { match_all: {} },
          parameters: { nodeTypes: ['Item'], ...parameters },
        },
      ],
    },
  });
  expect(res.status, res.text).toBe(200);
  return res.json.debug[1].input.parameters.stepResults[0].elements as { id: string; metadata: { sort: unknown[] } }[];
};

async function expectBadContent(h: Harness, token: string, parameters: Record<string, unknown>, detail: RegExp) {
  const res = await list(h, token, parameters);
  expect(res.status, res.text).toBe(400);
  expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
  expect(res.json.detail).toMatch(detail);
}

describeBackends('search sort and search_after', (h) => {
  let ada: User;
  let ben: User;
  const ids: Record<string, string> = {};
  // name -> priority (absent: no such property; null counts as missing too), a tie between b and c.
  const items: [string, unknown][] = [
    ['a', 3],
    ['b', 1],
    ['c', 1],
    ['d', 2.5],
    ['e', null],
    ['f', undefined],
    ['g', -4],
  ];

  beforeAll(async () => {
    ada = await userWithToken(h(), 'ada@sort.dev');
    ben = await userWithToken(h(), 'ben@sort.dev');
    for (const [name, priority] of items)
      ids[name] = await createElement(h(), ada.token, {
        type: 'Item',
        data: { name, label: name.toUpperCase(), ...(priority === undefined ? {} : { priority }) },
      });
  });

  const byId = (a: string, b: string) => (ids[a]! < ids[b]! ? -1 : 1);

  it('sorts numbers ascending and descending, missing last by default, ties by id', async () => {
    const asc = await list(h(), ada.token, { sort: [{ priority: 'asc' }] });
    expect(asc.status, asc.text).toBe(200);
    expect(names(asc)).toEqual(['g', ...['b', 'c'].sort(byId), 'd', 'a', ...['e', 'f'].sort(byId)]);
    expect(asc.json.totalHits).toBe(7);
    expect(asc.json.totalHitsRelation).toBe('eq');
    // Descending, the id breaks ties descending too.
    const desc = await list(h(), ada.token, { sort: [{ priority: { order: 'desc', missing: '_first' } }] });
    expect(names(desc)).toEqual([
      ...['e', 'f'].sort(byId).reverse(),
      'a',
      'd',
      ...['b', 'c'].sort(byId).reverse(),
      'g',
    ]);
  });

  it('carries the sort values and the id in metadata.sort', async () => {
    const found = await hits(h(), ada.token, { sort: [{ priority: 'desc' }, { created: 'asc' }] });
    const a = found.find((x) => x.id === ids.a)!;
    expect(a.metadata.sort).toEqual([
      3,
      expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/),
      ids.a,
    ]);
    const e = found.find((x) => x.id === ids.e)!;
    expect(e.metadata.sort[0]).toBeNull();
  });

  it('sorts strings by .keyword in byte order, ids descending, and _score', async () => {
    const byLabel = await list(h(), ada.token, { sort: [{ 'label.keyword': 'desc' }] });
    expect(names(byLabel)).toEqual(['g', 'f', 'e', 'd', 'c', 'b', 'a']);
    const byIdDesc = await list(h(), ada.token, { sort: [{ _id: 'desc' }] });
    expect(names(byIdDesc)).toEqual(Object.keys(ids).sort(byId).reverse());
    const byScore = await list(h(), ada.token, { sort: ['_score'] }, { match: { label: 'A' } });
    expect(names(byScore)).toEqual(['a']);
  });

  it('pages with search_after to the same list as one page, while elements are inserted', async () => {
    const whole = names(await list(h(), ada.token, { sort: [{ priority: 'asc' }], pageSize: 100 }));
    const seen: string[] = [];
    let after: unknown[] | undefined;
    for (let round = 0; round < 10; round++) {
      const res = await list(h(), ada.token, {
        sort: [{ priority: 'asc' }],
        pageSize: 2,
        ...(after ? { search_after: after } : {}),
      });
      expect(res.status, res.text).toBe(200);
      seen.push(...names(res));
      // An element inserted before the cursor never shows up later; one after it does, in its place.
      await createElement(h(), ada.token, { type: 'Item', data: { name: `early${round}`, priority: -100 } });
      after = res.json.searchAfter;
      if (after === undefined) break;
    }
    expect(seen.filter((n) => !n.startsWith('early'))).toEqual(whole);
    expect(seen.some((n) => n.startsWith('early'))).toBe(false);
  });

  it('never shows an element on a later page once its reader lost access', async () => {
    const folder = await createElement(h(), ada.token, { type: 'Item', data: { name: 'shared', priority: 1000 } });
    const inner = await createElement(
      h(),
      ada.token,
      { type: 'Item', data: { name: 'inner', priority: 2000 } },
      folder,
    );
    const grant = await h().request('POST', '/', {
      token: ada.token,
      body: { type: 'HAS_READ_ACCESS', start: ben.id, end: folder },
    });
    expect(grant.status, grant.text).toBe(201);
    const first = await list(h(), ben.token, { sort: [{ priority: 'asc' }], pageSize: 1 });
    expect(names(first)).toEqual(['shared']);
    expect(first.json.totalHits).toBe(2);
    const revoke = await h().request('DELETE', grant.headers.get('location')!, { token: ada.token });
    expect(revoke.status).toBe(204);
    const next = await list(h(), ben.token, {
      sort: [{ priority: 'asc' }],
      pageSize: 1,
      search_after: first.json.searchAfter,
    });
    expect(next.status, next.text).toBe(200);
    expect(next.json.results).toEqual([]);
    expect(next.json.totalHits).toBe(0);
    expect(inner).toBeTruthy();
  });

  it('counts as far as track_total_hits says', async () => {
    const none = await list(h(), ada.token, { sort: [{ priority: 'asc' }], track_total_hits: false });
    expect(none.status, none.text).toBe(200);
    expect([none.json.totalHits, none.json.totalHitsRelation]).toEqual([0, 'gte']);
    expect(names(none).length).toBeGreaterThan(0);
    const three = await list(h(), ada.token, { sort: [{ priority: 'asc' }], track_total_hits: 3 });
    expect([three.json.totalHits, three.json.totalHitsRelation]).toEqual([3, 'gte']);
    const all = await list(h(), ada.token, { nodeTypes: ['Nothing'], track_total_hits: 3 });
    expect([all.json.totalHits, all.json.totalHitsRelation]).toEqual([0, 'eq']);
    await expectBadContent(
      h(),
      ada.token,
      { track_total_hits: 10_001 },
      /track_total_hits must be true, false or an integer/,
    );
  });

  describe('refuses', () => {
    it('a sort on a field of mixed kinds or of objects, and .keyword of numbers', async () => {
      await createElement(h(), ada.token, { type: 'Mixed', data: { v: 1 } });
      await createElement(h(), ada.token, { type: 'Mixed', data: { v: 'one' } });
      await createElement(h(), ada.token, { type: 'Mixed', data: { o: { x: 1 } } });
      const mixed = await list(h(), ada.token, { nodeTypes: ['Mixed'], sort: [{ v: 'asc' }] });
      expect(mixed.status).toBe(400);
      expect(mixed.json.detail).toMatch(/sort\[0\] \(v\).*several kinds there \(number, string\)/);
      const objects = await list(h(), ada.token, { nodeTypes: ['Mixed'], sort: ['o'] });
      expect(objects.json.detail).toMatch(/sort\[0\] \(o\).*objects or arrays/);
      await expectBadContent(h(), ada.token, { sort: ['priority.keyword'] }, /\.keyword sorts strings/);
    });

    it('malformed sorts and cursors, naming the place', async () => {
      const t = ada.token;
      await expectBadContent(h(), t, { search_after: [1] }, /steps\[0\]\.parameters\.search_after: needs a `sort`/);
      await expectBadContent(h(), t, { sort: [{ priority: 'up' }] }, /sort\[0\]\.priority: must be "asc", "desc"/);
      await expectBadContent(
        h(),
        t,
        { sort: [{ priority: { order: 'asc', mode: 'min' } }] },
        /unknown parameter 'mode'/,
      );
      await expectBadContent(h(), t, { sort: [{ priority: { missing: 0 } }] }, /missing: must be "_first" or "_last"/);
      await expectBadContent(h(), t, { sort: [{ a: 'asc', b: 'asc' }] }, /sort\[0\]: must be a field name/);
      await expectBadContent(h(), t, { sort: [] }, /sort: must name at least one field/);
      await expectBadContent(h(), t, { sort: ['_source'] }, /'_source' cannot be sorted on/);
      await expectBadContent(h(), t, { sort: ['priority'], search_after: [1] }, /must be the 2 values/);
      await expectBadContent(
        h(),
        t,
        { sort: ['priority'], search_after: [1, 'x'] },
        /search_after\[1\]: must be an element id/,
      );
      await expectBadContent(h(), t, { sort: ['created'], search_after: ['yesterday', ids.a] }, /search_after\[0\]/);
      await expectBadContent(h(), t, { sort: ['priority'], search_after: ['x', ids.a] }, /search_after\[0\]: a string/);
      await expectBadContent(h(), t, { sort: ['priority'], search_after: [1, ids.a], page: 2 }, /page must be 1/);
    });
  });
});
