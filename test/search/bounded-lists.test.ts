// Lists inside a search (terms and ids values, on every kind of field) over HTTP on both backends: right up to the
// clause limit, a 400 naming it beyond, and the service answering the next request either way. A terms query of
// 12,000 values used to answer nothing on the embedded database and wedge it on the next such request.
import { beforeAll, expect, it } from 'vitest';
import { tinyPng } from '../files/fixtures.js';
import { attachFile, createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

const LIMIT = 1024;
const search = (h: Harness, token: string, query: unknown) =>
  h.request('POST', '/search', {
    token,
    body: {
      steps: [{ type: 'searchengine-query-dsl-mixin', query, parameters: { pageSize: 100, nodeTypes: ['Thing'] } }],
    },
  });
const idsOf = (body: { results: { id: string }[] }) => body.results.map((e) => e.id).sort();
/** `n` values of which `hits` come last, as a client building a long list would send them. */
const padded = <T>(n: number, hits: T[], filler: (i: number) => T): T[] => [
  ...Array.from({ length: n - hits.length }, (_, i) => filler(i)),
  ...hits,
];

describeBackends('bounded lists in searches', (h) => {
  let token: string;
  const ids: string[] = [];
  let created: string[];

  beforeAll(async () => {
    const alice = await userWithToken(h(), 'alice@lists.dev');
    token = alice.token;
    for (let i = 0; i < 5; i++)
      ids.push(await createElement(h(), token, { type: 'Thing', data: { name: `v${i}`, rank: i } }));
    await attachFile(h(), token, ids[0]!, tinyPng(), 'pixel.png');
    const shown = await Promise.all(
      ids.map(async (id) => (await h().request('GET', `/${id}`, { token })).json.data.created as string),
    );
    created = [...new Set(shown)];
  });

  it(`finds every element with a terms query of ${LIMIT} keyword values, twice in a row`, async () => {
    const values = padded(LIMIT, ['v0', 'v1', 'v2', 'v3', 'v4'], (i) => `absent-${i}`);
    for (let round = 0; round < 2; round++) {
      const res = await search(h(), token, { terms: { 'name.keyword': values } });
      expect(res.status).toBe(200);
      expect(idsOf(res.json)).toEqual([...ids].sort());
    }
  });

  it('finds by terms on numbers, ids, dates and file properties, each a long list', async () => {
    const numbers = await search(h(), token, { terms: { rank: padded<number>(LIMIT, [1, 3], (i) => 1000 + i) } });
    expect(idsOf(numbers.json)).toEqual([ids[1], ids[3]].sort());
    const byId = await search(h(), token, {
      ids: { values: padded(LIMIT, [ids[2]!, ids[4]!], () => crypto.randomUUID()) },
    });
    expect(idsOf(byId.json)).toEqual([ids[2], ids[4]].sort());
    const byDate = await search(h(), token, {
      terms: { created: padded(LIMIT, created, (i) => new Date(Date.UTC(2001, 0, 1, 0, 0, i)).toISOString()) },
    });
    expect(idsOf(byDate.json)).toEqual([...ids].sort());
    const byFile = await search(h(), token, { terms: { 'file.extension': padded(LIMIT, ['png'], (i) => `x${i}`) } });
    expect(idsOf(byFile.json)).toEqual([ids[0]]);
  });

  it('refuses one value more than the clause limit with a 400 that names the limit, and answers the next request', async () => {
    for (const query of [
      { terms: { 'name.keyword': padded(LIMIT + 1, ['v0'], (i) => `absent-${i}`) } },
      { terms: { rank: padded<number>(12_000, [1], (i) => 1000 + i) } },
      { ids: { values: padded(100_000, [ids[0]!], () => ids[1]!) } },
      // The values of every terms query add up with the other clauses.
      {
        bool: {
          should: [
            { terms: { 'name.keyword': padded(600, ['v0'], (i) => `a${i}`) } },
            { terms: { 'name.keyword': padded(600, ['v1'], (i) => `b${i}`) } },
          ],
        },
      },
    ]) {
      const res = await search(h(), token, query);
      expect(res.status).toBe(400);
      expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
      expect(res.json.detail).toMatch(new RegExp(`at most ${LIMIT} clauses`));
    }
    const after = await search(h(), token, { term: { 'name.keyword': 'v2' } });
    expect(after.status).toBe(200);
    expect(idsOf(after.json)).toEqual([ids[2]]);
  });

  it('answers a match query of many words and a bool of many term clauses (one tsquery each, balanced)', async () => {
    const words = padded(LIMIT, ['v3'], (i) => `word${i}`).join(' ');
    const match = await search(h(), token, { match: { name: words } });
    expect(match.status).toBe(200);
    expect(idsOf(match.json)).toEqual([ids[3]]);
    const should = padded<unknown>(LIMIT - 1, [{ term: { 'name.keyword': 'v4' } }], (i) => ({
      term: { 'name.keyword': `w${i}` },
    }));
    const bool = await search(h(), token, { bool: { should } });
    expect(bool.status).toBe(200);
    expect(idsOf(bool.json)).toEqual([ids[4]]);
  });
});
