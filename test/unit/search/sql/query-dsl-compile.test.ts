// The DSL compiler's combination of clauses (src/search/sql/query-dsl-compile.ts) with its text and range parts
// (query-dsl-text.ts, query-dsl-range.ts), run on an in-memory PGlite with the real schema: bool semantics, scores
// and boosts, analysed text with fuzziness and phrases, ranges on numbers, strings, times and file properties.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../../src/storage/db.js';
import { migratedDb } from '../../helpers/database.js';
import { dslHits, seed } from '../../helpers/search.js';

describe('query DSL compiler', () => {
  let db: Db;
  const id: Record<string, string> = {};
  const nameOf = (i: string) => Object.entries(id).find(([, v]) => v === i)?.[0] ?? i;
  const names = async (query: unknown) => (await dslHits(db, query)).map((h) => nameOf(h.id)).sort();
  const ranked = async (query: unknown) => (await dslHits(db, query)).map((h) => [nameOf(h.id), h.score]);

  beforeAll(async () => {
    db = await migratedDb();
    [id.fox, id.dog, id.both, id.num] = await seed(db, [
      { type: 'Doc', data: { text: 'the quick brown fox', size: 5, code: 'b' }, at: new Date('2024-01-01T00:00:00Z') },
      { type: 'Doc', data: { text: 'a lazy dog sleeps', size: 50, code: 'd' }, at: new Date('2025-01-01T00:00:00Z') },
      { type: 'Doc', data: { text: 'quick fox and lazy dog and a long tail of words', size: [1, 500] } },
      { type: 'Doc', data: { text: 42, nested: { size: 7 } } },
    ]);
    await db.query(`UPDATE elements SET file = '{"size": 1234}'::jsonb WHERE id = $1`, [id.dog]);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('matches analysed text, any term by default, all with operator and', async () => {
    expect(await names({ match: { text: 'FOX dog' } })).toEqual(['both', 'dog', 'fox']);
    expect(await names({ match: { text: { query: 'fox dog', operator: 'and' } } })).toEqual(['both']);
    expect(await names({ match: { '*': 'sleeps' } })).toEqual(['dog']);
    // A number matches that value as well.
    expect(await names({ match: { text: 42 } })).toEqual(['num']);
  });

  it('scores more matched terms and shorter fields higher', async () => {
    const hits = await ranked({ match: { text: 'quick fox' } });
    expect(hits.map(([name]) => name)).toEqual(['fox', 'both']);
    expect(hits[0]![1]).toBeGreaterThan(hits[1]![1] as number);
  });

  it('expands fuzzy terms to the indexed words within the distance', async () => {
    expect(await names({ match: { text: { query: 'quack', fuzziness: 1 } } })).toEqual(['both', 'fox']);
    expect(await names({ match: { text: { query: 'quack', fuzziness: 0 } } })).toEqual([]);
    expect(await names({ match: { text: { query: 'qiuck', fuzziness: 1, fuzzy_transpositions: false } } })).toEqual([]);
  });

  it('finds phrases in order, within their slop', async () => {
    expect(await names({ match_phrase: { text: 'quick brown' } })).toEqual(['fox']);
    expect(await names({ match_phrase: { text: 'quick fox' } })).toEqual(['both']);
    expect(await names({ match_phrase: { text: { query: 'quick fox', slop: 1 } } })).toEqual(['both', 'fox']);
  });

  it('combines clauses as bool does: must, should with minimum_should_match, must_not, filter', async () => {
    expect(
      await names({ bool: { must: [{ match: { text: 'fox' } }], must_not: [{ match: { text: 'dog' } }] } }),
    ).toEqual(['fox']);
    expect(
      await names({
        bool: {
          should: [{ match: { text: 'fox' } }, { match: { text: 'dog' } }, { match: { text: 'tail' } }],
          minimum_should_match: 2,
        },
      }),
    ).toEqual(['both']);
    expect(await names({ bool: { filter: [{ range: { size: { gte: 50 } } }] } })).toEqual(['both', 'dog']);
    expect(await ranked({ bool: { filter: [{ term: { 'code.keyword': 'b' } }] } })).toEqual([['fox', 0]]);
    expect(await ranked({ constant_score: { filter: { term: { 'code.keyword': 'b' } }, boost: 4 } })).toEqual([
      ['fox', 4],
    ]);
  });

  it('finds values within ranges on numbers (any array item), strings, times and file properties', async () => {
    expect(await names({ range: { size: { gt: 5, lt: 100 } } })).toEqual(['dog']);
    expect(await names({ range: { size: { lte: 1 } } })).toEqual(['both']);
    expect(await names({ range: { code: { gte: 'c' } } })).toEqual(['dog']);
    expect(await names({ range: { 'nested.size': { gte: 7 } } })).toEqual(['num']);
    expect(await names({ range: { created: { lt: '2024-06-01' } } })).toEqual(['fox']);
    expect(await names({ range: { 'file.size': { gt: 1000 } } })).toEqual(['dog']);
  });

  it('matches nothing without asking the database when nothing can match', async () => {
    expect(await dslHits(db, { match_none: {} })).toEqual([]);
    expect(await dslHits(db, { bool: { must: [{ match_all: {} }, { term: { _id: 'no' } }] } })).toEqual([]);
  });
});
