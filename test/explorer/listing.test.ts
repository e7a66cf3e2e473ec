// The explorer's sort arithmetic (explorer/src/sorting.ts) without a browser: the address it keeps, the `sort`
// it sends, and a refused sort in plain words. The browser flows over it are in sorting.test.ts.
import { describe, expect, it } from 'vitest';
import { putSort, RELEVANCE, type Sort, sortKeys, sortOf, sortRefusal, totalOf } from '../../explorer/src/sorting.js';

const roundTrip = (sort: Sort) => {
  const params = new URLSearchParams({ q: 'x' });
  putSort(params, sort);
  return { address: params.toString(), sort: sortOf(params) };
};

describe('explorer sorting', () => {
  it('keeps the sort in the address and reads it back, relevance when absent or incomplete', () => {
    expect(roundTrip(RELEVANCE)).toEqual({ address: 'q=x', sort: RELEVANCE });
    const byPriority: Sort = { by: 'property', property: 'address.city', desc: true };
    expect(roundTrip(byPriority)).toEqual({
      address: 'q=x&sort=property&property=address.city&order=desc',
      sort: byPriority,
    });
    expect(sortOf(new URLSearchParams('sort=created'))).toEqual({ by: 'created', property: '', desc: true });
    expect(sortOf(new URLSearchParams('sort=name'))).toEqual({ by: 'name', property: '', desc: false });
    expect(sortOf(new URLSearchParams('sort=property&property=%20'))).toEqual(RELEVANCE);
    expect(sortOf(new URLSearchParams('sort=toString'))).toEqual(RELEVANCE);
  });

  it('sends names as whole strings, a property with missing values last, and relevance as _score', () => {
    expect(sortKeys({ by: 'name', property: '', desc: false })).toEqual([{ 'name.keyword': 'asc' }]);
    expect(sortKeys({ by: 'updated', property: '', desc: true })).toEqual([{ updated: 'desc' }]);
    expect(sortKeys({ by: 'property', property: 'rank', desc: false })).toEqual([
      { rank: { order: 'asc', missing: '_last' } },
    ]);
    expect(sortKeys(RELEVANCE)).toEqual([{ _score: 'desc' }]);
  });

  it('says a refused sort plainly, and nothing for a refusal about something else', () => {
    const code: Sort = { by: 'property', property: 'code', desc: false };
    const mixed = 'steps[0].parameters.sort[0] (code): the hits hold values of several kinds there (number, string)';
    expect(sortRefusal(mixed, code)).toBe(
      "Cannot sort by 'code': its values are of different kinds (number and string).",
    );
    const name: Sort = { by: 'name', property: '', desc: false };
    const keyword =
      'steps[0].parameters.sort[0] (name.keyword): .keyword sorts strings, and the hits hold numbers there';
    expect(sortRefusal(keyword, name)).toBe('Cannot sort by name: some of its values are not text.');
    const empty: Sort = { by: 'property', property: 'a..b', desc: false };
    expect(sortRefusal('steps[0].parameters.sort[0].a..b: a field name has no empty parts', empty)).toBe(
      "Cannot sort by 'a..b': a field name has no empty parts.",
    );
    expect(sortRefusal('steps[0].query: unknown kind', code)).toBeNull();
  });

  it('counts exactly up to 10,000 and says "at least" beyond', () => {
    const answer = { type: '_SearchResultResponse' as const, results: [] };
    expect(totalOf({ ...answer, totalHits: 42, totalHitsRelation: 'eq' })).toBe('42 elements.');
    expect(totalOf({ ...answer, totalHits: 10_000, totalHitsRelation: 'gte' })).toMatch(/^At least 10.000 elements\.$/);
    expect(totalOf({ ...answer, totalHits: 0, totalHitsRelation: 'eq' })).toBe('No elements match.');
  });
});
