// The query DSL parser (src/search/language/query-dsl.ts): the validated queries it yields (analysed text, fields,
// minimum_should_match, query strings, dates) and its 400s naming the path of the first bad clause.
import { describe, expect, it } from 'vitest';
import { Problem } from '../../../../src/errors.js';
import { MAX_CLAUSES, MAX_DEPTH } from '../../../../src/search/language/limits.js';
import { parseQueryDsl } from '../../../../src/search/language/query-dsl.js';

const refusal = (query: unknown): string => {
  try {
    parseQueryDsl(query);
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    return (error as Problem).detail ?? '';
  }
  throw new Error(`parsed: ${JSON.stringify(query)}`);
};

describe('query DSL parser', () => {
  it('analyses match text into tokens and distinct terms, any of which matches by default', () => {
    expect(parseQueryDsl({ match: { note: 'Hello World hello' } })).toMatchObject({
      k: 'text',
      field: 'note',
      tokens: ['hello', 'world', 'hello'],
      terms: [
        { term: 'hello', distance: 0 },
        { term: 'world', distance: 0 },
      ],
      mode: { k: 'atLeast', required: 1 },
    });
  });

  it('resolves minimum_should_match, operators, fuzziness and phrases', () => {
    const msm = parseQueryDsl({ match: { note: { query: 'quick brown fox', minimum_should_match: '67%' } } });
    expect(msm).toMatchObject({ mode: { k: 'atLeast', required: 2 } });
    expect(parseQueryDsl({ match: { note: { query: 'a b', operator: 'AND' } } })).toMatchObject({ mode: { k: 'and' } });
    expect(parseQueryDsl({ match: { note: { query: 'kitten', fuzziness: 'AUTO' } } })).toMatchObject({
      terms: [{ term: 'kitten', distance: 2 }],
    });
    expect(parseQueryDsl({ match_phrase: { note: { query: 'a b', slop: 1 } } })).toMatchObject({
      mode: { k: 'phrase', slop: 1 },
    });
  });

  it('names fields by what they stand for', () => {
    const field = (name: string) => (parseQueryDsl({ exists: { field: name } }) as { field: unknown }).field;
    expect(field('name.keyword')).toEqual({ kind: 'keyword', name: 'name' });
    expect(field('name')).toEqual({ kind: 'data', name: 'name' });
    expect(field('*')).toEqual({ kind: 'any' });
    expect(field('_id')).toEqual({ kind: 'id' });
    expect(field('created')).toEqual({ kind: 'date', column: 'created' });
    expect(field('file.size')).toEqual({ kind: 'file', keys: ['file', 'size'] });
  });

  it('turns ids into terms on _id and dates into instants', () => {
    expect(parseQueryDsl({ ids: { values: ['a'] } })).toEqual({
      k: 'terms',
      field: { kind: 'id' },
      values: ['a'],
      boost: 1,
    });
    expect(parseQueryDsl({ range: { created: { gte: '2020-01-01' } } })).toMatchObject({
      bounds: [{ op: 'gte', value: '2020-01-01T00:00:00.000Z' }],
    });
  });

  it('translates a query string into the DSL queries it stands for', () => {
    expect(parseQueryDsl({ query_string: { query: 'a AND b:c' } })).toMatchObject({
      k: 'bool',
      must: [
        { k: 'text', field: null, tokens: ['a'] },
        { k: 'text', field: 'b', tokens: ['c'] },
      ],
    });
    expect(parseQueryDsl({ query_string: { query: 'n:[1 TO 5}' } })).toMatchObject({
      k: 'range',
      bounds: [
        { op: 'gte', value: 1 },
        { op: 'lt', value: 5 },
      ],
    });
    expect(parseQueryDsl({ query_string: { query: 'pre*' } })).toMatchObject({ k: 'pattern', syntax: 'wildcard' });
  });

  it('refuses a bad query with a 400 naming the path of the first bad clause', () => {
    expect(refusal({ nope: {} })).toBe("query: unknown or unsupported query kind 'nope'");
    expect(refusal({ match: {} })).toBe('query.match: must name exactly one field, not 0');
    expect(refusal({ bool: { must: [{ match_all: {} }, { term: { a: 1, b: 2 } }] } })).toBe(
      'query.bool.must[1].term: must name exactly one field, not 2',
    );
    expect(refusal({ match: { a: { query: 'x', fuzziness: 'bad' } } })).toBe(
      'query.match.a.fuzziness: must be 0, 1, 2 or "AUTO", not string "bad"',
    );
    expect(refusal({ query_string: { query: 'a AND (' } })).toBe(
      'query.query_string.query: is not a valid query string (empty group at position 7)',
    );
    expect(refusal({ match_all: { boost: 5000 } })).toBe(
      'query.match_all.boost: must be a number from 0 to 1000, not number 5000',
    );
  });

  it('bounds the depth and the clauses of a query', () => {
    let deep: unknown = { match_all: {} };
    for (let i = 0; i <= MAX_DEPTH; i++) deep = { bool: { must: [deep] } };
    expect(refusal(deep)).toMatch(`queries nest at most ${MAX_DEPTH} levels deep`);
    const wide = { terms: { 'tag.keyword': Array.from({ length: MAX_CLAUSES + 1 }, (_, i) => `v${i}`) } };
    expect(refusal(wide)).toMatch(`a query has at most ${MAX_CLAUSES} clauses`);
  });
});
