// simple_query_string (src/search/language/simple-query-string.ts): the queries its syntax stands for, combined as
// Lucene's SimpleQueryParser combines them, and its leniency: no syntax is refused.
import { describe, expect, it } from 'vitest';
import { parseQueryDsl } from '../../../../src/search/language/query-dsl.js';

const sqs = (query: string, extra: Record<string, unknown> = {}) =>
  parseQueryDsl({ simple_query_string: { query, fields: ['name'], ...extra } });
const word = (term: string) => ({ k: 'text', field: 'name', terms: [{ term, distance: 0 }] });

describe('simple_query_string', () => {
  it('joins with the default operator, + and |; a change of operator wraps what came before', () => {
    expect(sqs('a b')).toMatchObject({ k: 'bool', should: [word('a'), word('b')], must: [], required: 1 });
    expect(sqs('a b', { default_operator: 'AND' })).toMatchObject({ k: 'bool', must: [word('a'), word('b')] });
    // Left to right: (a OR b) AND c.
    expect(sqs('a | b + c')).toMatchObject({
      k: 'bool',
      must: [{ k: 'bool', should: [word('a'), word('b')] }, word('c')],
    });
    expect(sqs('(a | b) + c')).toMatchObject({
      k: 'bool',
      must: [{ k: 'bool', should: [word('a'), word('b')] }, word('c')],
    });
  });

  it('negates as "everything but", reads phrases, prefixes and fuzziness', () => {
    expect(sqs('-a')).toMatchObject({ k: 'bool', should: [{ k: 'all' }], mustNot: [word('a')], required: 1 });
    expect(sqs('--a')).toMatchObject(word('a'));
    expect(sqs('"a b"~3')).toMatchObject({ k: 'text', mode: { k: 'phrase', slop: 3 } });
    expect(sqs('ab*')).toMatchObject({ k: 'pattern', syntax: 'prefix', pattern: 'ab' });
    expect(sqs('AB*')).toMatchObject({ k: 'pattern', pattern: 'ab' });
    expect(sqs('abc~1')).toMatchObject({ k: 'text', terms: [{ term: 'abc', distance: 1 }] });
    expect(sqs('abc~9')).toMatchObject({ k: 'text', terms: [{ term: 'abc', distance: 2 }] });
    expect(sqs('abc\\*')).toMatchObject({ k: 'text', terms: [{ term: 'abc', distance: 0 }] });
  });

  it('queries each field once per word, summed, with its boost', () => {
    expect(parseQueryDsl({ simple_query_string: { query: 'a', fields: ['name^2', 'note'] } })).toMatchObject({
      k: 'bool',
      should: [
        { k: 'text', field: 'name', boost: 2 },
        { k: 'text', field: 'note', boost: 1 },
      ],
    });
    expect(parseQueryDsl({ simple_query_string: { query: 'a' } })).toMatchObject({ k: 'text', field: null });
  });

  it('never refuses the syntax', () => {
    for (const query of ['', '"', '"a', 'a)', '((a', '+', '|', '-', '~', '~2', 'a~x', '\\', '*', ')(', '"""'])
      expect(() => sqs(query), query).not.toThrow();
    expect(sqs('')).toEqual({ k: 'none' });
    expect(sqs('"a b')).toMatchObject({ k: 'bool', should: [word('a'), word('b')] });
    expect(sqs('((a')).toMatchObject(word('a'));
  });
});
