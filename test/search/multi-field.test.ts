// multi_match and simple_query_string (search/language/multi-match.ts, simple-query-string.ts) on both backends:
// every field's query compiled as a match would be, combined as Elasticsearch combines them, the clause limit
// counted per field and word, and simple_query_string's syntax never refused.
import { beforeAll, describe, expect, it } from 'vitest';
import { runSearchEngine } from '../../src/domain/search/steps.js';
import type { SearchEngineOptions } from '../../src/search/results.js';
import { sqlSearchEngine } from '../../src/storage/search/search-engine.js';
import { sqlTransactions } from '../../src/storage/transactions.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const OPTIONS: SearchEngineOptions = { page: 1, pageSize: 100, minScore: null, nodeTypes: null, relationTypes: null };

describeBackends('multi_match and simple_query_string', (h) => {
  let alice: User;
  const el: Record<string, string> = {};

  const search = (query: unknown) =>
    runSearchEngine(sqlSearchEngine(), sqlTransactions(h().db).direct, alice.id, query, OPTIONS);
  /** Hit names in result order. */
  const names = async (query: unknown) => {
    const byId = new Map(Object.entries(el).map(([k, v]) => [v, k]));
    return (await search(query)).output.elements.map((e) => byId.get(e.id) ?? e.id);
  };
  /** The fixture elements among the hits (a negation also finds the users, tokens and relations). */
  const set = async (query: unknown) => new Set((await names(query)).filter((name) => name in el));
  const scoreOf = async (query: unknown, name: string) =>
    (await search(query)).output.elements.find((e) => e.id === el[name])?.metadata.score;
  const badRequest = async (query: unknown, detail: RegExp) => {
    const error = await search(query).then(
      () => null,
      (e: unknown) => e as { status?: number; slug?: string; detail?: string },
    );
    expect(error, JSON.stringify(query)).not.toBeNull();
    expect(error!.status).toBe(400);
    expect(error!.slug).toBe('bad-content');
    expect(error!.detail).toMatch(detail);
  };

  beforeAll(async () => {
    alice = await userWithToken(h(), 'alice@multi.dev');
    const A = alice.token;
    el.lily = await createElement(h(), A, {
      type: 'Plant',
      data: { name: 'Lily', description: 'the white lily, a true lily', notes: 'smells sweet' },
    });
    el.flame = await createElement(h(), A, {
      type: 'Plant',
      data: { name: 'Flame Lily', description: 'a climbing plant', notes: 'poisonous' },
    });
    el.tulip = await createElement(h(), A, {
      type: 'Plant',
      data: { name: 'Tulip', description: 'spring flower', notes: 'from Holland' },
    });
    el.rose = await createElement(h(), A, {
      type: 'Plant',
      data: { name: 'Rose', description: 'a flower with thorns', notes: 'white or red' },
    });
    el.memo = await createElement(h(), A, { type: 'Memo', data: { title: 'buy tulip bulbs', body: 'in autumn' } });
  });

  describe('multi_match', () => {
    it('searches every property by default, and only the fields named when given', async () => {
      expect(await names({ multi_match: { query: 'holland' } })).toEqual(['tulip']);
      expect(await names({ multi_match: { query: 'bulbs', fields: ['*'] } })).toEqual(['memo']);
      expect(await names({ multi_match: { query: 'holland', fields: ['name', 'description'] } })).toEqual([]);
      expect(await set({ multi_match: { query: 'tulip', fields: ['name', 'title'] } })).toEqual(
        new Set(['tulip', 'memo']),
      );
    });

    it('best_fields scores the best field, most_fields the sum, each field as its match alone', async () => {
      const name = await scoreOf({ match: { name: 'lily' } }, 'lily');
      const description = await scoreOf({ match: { description: 'lily' } }, 'lily');
      expect(name).toBeGreaterThan(0);
      expect(description).toBeGreaterThan(0);
      const fields = ['name', 'description'];
      expect(await scoreOf({ multi_match: { query: 'lily', fields } }, 'lily')).toBeCloseTo(
        Math.max(name!, description!),
        10,
      );
      expect(await scoreOf({ multi_match: { query: 'lily', fields, type: 'best_fields' } }, 'lily')).toBeCloseTo(
        Math.max(name!, description!),
        10,
      );
      expect(await scoreOf({ multi_match: { query: 'lily', fields, type: 'most_fields' } }, 'lily')).toBeCloseTo(
        name! + description!,
        10,
      );
      expect(await scoreOf({ multi_match: { query: 'lily', fields, boost: 2 } }, 'lily')).toBeCloseTo(
        2 * Math.max(name!, description!),
        10,
      );
    });

    it('weighs a field by its ^boost', async () => {
      // rose: 'white' in notes; lily: 'white' in description.
      expect(await names({ multi_match: { query: 'white', fields: ['notes^5', 'description'] } })).toEqual([
        'rose',
        'lily',
      ]);
      expect(await names({ multi_match: { query: 'white', fields: ['notes', 'description^5'] } })).toEqual([
        'lily',
        'rose',
      ]);
    });

    it('applies operator, fuzziness and the phrase type per field', async () => {
      // 'white' and 'red' are both in rose's notes; 'white' and 'lily' are in lily's description only.
      expect(await names({ multi_match: { query: 'white red', operator: 'and' } })).toEqual(['rose']);
      expect(await names({ multi_match: { query: 'white lily', fields: ['name', 'notes'], operator: 'and' } })).toEqual(
        [],
      );
      expect(await names({ multi_match: { query: 'tulp', fields: ['name'], fuzziness: 1 } })).toEqual(['tulip']);
      expect(await names({ multi_match: { query: 'tulp', fields: ['name'] } })).toEqual([]);
      expect(await names({ multi_match: { query: 'white lily', type: 'phrase' } })).toEqual(['lily']);
      expect(await names({ multi_match: { query: 'lily white', type: 'phrase' } })).toEqual([]);
      expect(await names({ multi_match: { query: 'lily white', type: 'phrase', slop: 2 } })).toEqual(['lily']);
    });

    it('refuses what it cannot do with 400 naming the place', async () => {
      await badRequest({ multi_match: { fields: ['name'] } }, /query\.multi_match\.query: is required/);
      await badRequest({ multi_match: { query: 'x', type: 'cross_fields' } }, /multi_match\.type: must be one of/);
      await badRequest({ multi_match: { query: 'x', fields: ['na*'] } }, /fields\[0\]: field name patterns/);
      await badRequest({ multi_match: { query: 'x', fields: [] } }, /fields: must be a non-empty list/);
      await badRequest({ multi_match: { query: 'x', fields: ['name^high'] } }, /fields\[0\]: its \^boost/);
      await badRequest({ multi_match: { query: 'x', slop: 1 } }, /slop: applies to type 'phrase' only/);
      await badRequest({ multi_match: { query: 'x', tie_breaker: 0.3 } }, /tie_breaker/);
    });

    it('counts every field times every word toward the 1,024 clauses', async () => {
      const fields = Array.from({ length: 64 }, (_, i) => `f${i}`);
      const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}x`).join(' ');
      expect(await names({ multi_match: { query: words(15), fields } })).toEqual([]);
      await badRequest({ multi_match: { query: words(17), fields } }, /at most 1024 clauses/);
    });
  });

  describe('simple_query_string', () => {
    it('joins words with the default operator, + and |, over every property by default', async () => {
      expect(await set({ simple_query_string: { query: 'tulip rose' } })).toEqual(new Set(['tulip', 'rose', 'memo']));
      expect(await names({ simple_query_string: { query: 'white red', default_operator: 'and' } })).toEqual(['rose']);
      expect(await names({ simple_query_string: { query: 'lily + climbing' } })).toEqual(['flame']);
      expect(await set({ simple_query_string: { query: 'holland | thorns' } })).toEqual(new Set(['tulip', 'rose']));
      expect(await names({ simple_query_string: { query: '(holland | thorns) + red' } })).toEqual(['rose']);
      expect(await names({ simple_query_string: { query: 'tulip', fields: ['name'] } })).toEqual(['tulip']);
    });

    it('reads - as "everything but", as Lucene does', async () => {
      expect(await set({ simple_query_string: { query: 'lily -climbing', default_operator: 'and' } })).toEqual(
        new Set(['lily']),
      );
      expect(await set({ simple_query_string: { query: 'lily +-climbing' } })).toEqual(new Set(['lily']));
      // With OR, "lily, or anything without 'climbing'": the climbing lily for its 'lily', everything else for the rest.
      expect(await set({ simple_query_string: { query: 'lily -climbing' } })).toEqual(
        new Set(['lily', 'flame', 'tulip', 'rose', 'memo']),
      );
      expect(await set({ simple_query_string: { query: '-climbing' } })).toEqual(
        new Set(['lily', 'tulip', 'rose', 'memo']),
      );
    });

    it('reads phrases with ~slop, prefixes, and ~N fuzziness', async () => {
      expect(await names({ simple_query_string: { query: '"white lily"' } })).toEqual(['lily']);
      expect(await names({ simple_query_string: { query: '"lily white"' } })).toEqual([]);
      expect(await names({ simple_query_string: { query: '"lily white"~2' } })).toEqual(['lily']);
      expect(await set({ simple_query_string: { query: 'tul*' } })).toEqual(new Set(['tulip', 'memo']));
      expect(await names({ simple_query_string: { query: 'tul*', fields: ['name'] } })).toEqual(['tulip']);
      expect(await names({ simple_query_string: { query: 'tulp~1', fields: ['name'] } })).toEqual(['tulip']);
      expect(await names({ simple_query_string: { query: 'tulp', fields: ['name'] } })).toEqual([]);
    });

    it('never refuses the syntax: bad syntax is read as plain words or left out', async () => {
      expect(await names({ simple_query_string: { query: '"unclosed holland' } })).toEqual(['tulip']);
      expect(await names({ simple_query_string: { query: 'holland)' } })).toEqual(['tulip']);
      expect(await names({ simple_query_string: { query: '((holland' } })).toEqual(['tulip']);
      expect(await names({ simple_query_string: { query: '|| + holland ~' } })).toEqual(['tulip']);
      expect(await names({ simple_query_string: { query: 'holland~x' } })).toEqual(['tulip']);
      expect(await names({ simple_query_string: { query: `${'('.repeat(100)}holland` } })).toEqual(['tulip']);
      for (const query of ['', '"', '\\', '-', '+', '|', '()', '~2', '*', 'AND OR NOT']) {
        const result = await search({ simple_query_string: { query } });
        expect(result.output.elements.length, query).toBeGreaterThanOrEqual(0);
      }
    });

    it('refuses a bad query object (not its syntax) with 400', async () => {
      await badRequest({ simple_query_string: { query: 5 } }, /simple_query_string\.query: must be a string/);
      await badRequest({ simple_query_string: { query: 'x', fields: ['created'] } }, /searches properties/);
      await badRequest({ simple_query_string: { query: 'x', default_operator: 'xor' } }, /default_operator/);
      await badRequest({ simple_query_string: { query: 'x', flags: 'ALL' } }, /flags/);
      const fields = Array.from({ length: 64 }, (_, i) => `f${i}`);
      await badRequest(
        { simple_query_string: { query: Array.from({ length: 17 }, (_, i) => `w${i}x`).join(' '), fields } },
        /at most 1024 clauses/,
      );
    });
  });

  it('both kinds run through POST /search', async () => {
    for (const query of [
      { multi_match: { query: 'holland', fields: ['notes^2', 'name'] } },
      { simple_query_string: { query: 'holland | "climbing plant"', fields: ['*'] } },
    ]) {
      const r = await h().request('POST', '/search', {
        token: alice.token,
        body: { steps: [{ type: 'searchengine-query-dsl-mixin', query }, { type: 'element-hydration' }] },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json.results.map((e: { id: string }) => e.id).sort()).toEqual(
        (JSON.stringify(query).includes('climbing') ? [el.tulip, el.flame] : [el.tulip]).sort(),
      );
    }
  });
});
