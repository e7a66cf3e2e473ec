// The query_string parser (src/search/language/lucene.ts): Lucene's classic grammar and QueryParserBase.addClause's
// reading of conjunctions and modifiers.
import { describe, expect, it } from 'vitest';
import {
  type LuceneNode,
  type LuceneQuery,
  LuceneSyntaxError,
  parseLucene,
} from '../../../../src/search/language/lucene.js';

/** A compact picture of a parsed query: occurrence prefix (+ must, - must_not, none should) and the node. */
function show(q: LuceneQuery): string {
  const node = (n: LuceneNode): string => {
    const f = n.field === null ? '' : `${n.field}:`;
    const b = n.boost === null ? '' : `^${n.boost}`;
    switch (n.k) {
      case 'group':
        return `${f}(${show(n.query)})${b}`;
      case 'term':
        return `${f}${n.quoted ? JSON.stringify(n.text) : n.raw}${n.fuzzy === null ? '' : `~${n.fuzzy}`}${b}`;
      case 'range':
        return `${f}${n.minInclusive ? '[' : '{'}${n.min ?? '*'} TO ${n.max ?? '*'}${n.maxInclusive ? ']' : '}'}${b}`;
      case 'compare':
        return `${f}${n.op} ${n.value}${b}`;
    }
  };
  return q.clauses
    .map((c) => `${c.occur === 'must' ? '+' : c.occur === 'must_not' ? '-' : ''}${node(c.node)}`)
    .join(' ');
}

describe('query_string parser', () => {
  it('reads conjunctions and modifiers as Lucene does', () => {
    const cases: Array<[string, 'or' | 'and', string]> = [
      ['a b', 'or', 'a b'],
      ['a b', 'and', '+a +b'],
      ['a OR b', 'and', 'a b'],
      ['a AND b', 'or', '+a +b'],
      ['a OR b AND c', 'or', 'a +b +c'],
      ['a && b || c', 'or', '+a +b c'],
      ['+a -b c', 'or', '+a -b c'],
      ['+a -b c', 'and', '+a -b +c'],
      ['a AND NOT b', 'or', '+a -b'],
      ['a NOT b', 'or', 'a -b'],
      ['NOT a', 'or', '-a'],
      ['!a b', 'or', '-a b'],
      ['ANDROID ORBIT NOTE', 'or', 'ANDROID ORBIT NOTE'],
    ];
    for (const [text, operator, expected] of cases)
      expect([text, operator, show(parseLucene(text, operator))]).toEqual([text, operator, expected]);
  });

  it('reads fields, groups, phrases, boosts, fuzziness, ranges, comparisons and escapes', () => {
    const cases: Array<[string, string]> = [
      ['title:(apple OR banana)', 'title:(apple banana)'],
      ['(a b)^3 c', '(a b)^3 c'],
      ['title:apple^2', 'title:apple^2'],
      ['apple^0.5', 'apple^0.5'],
      ['apple~', 'apple~2'],
      ['title:appl~1', 'title:appl~1'],
      ['"apple number"~2', '"apple number"'],
      ['name.keyword:"Lily \\"the\\" white"', 'name.keyword:"Lily \\"the\\" white"'],
      ['n:[1 TO 5}', 'n:[1 TO 5}'],
      ['n:{* TO 5]', 'n:{* TO 5]'],
      ['d:["2020-01-01" TO *]', 'd:[2020-01-01 TO *]'],
      ['age:>=10 age:<20', 'age:gte 10 age:lt 20'],
      ['e-mail c++ a&b', 'e-mail c++ a&b'],
      ['path:a\\:b\\ c', 'path:a\\:b\\ c'],
      ['app* ?ear _exists_:title', 'app* ?ear _exists_:title'],
      ['title:*', 'title:*'],
    ];
    for (const [text, expected] of cases) expect([text, show(parseLucene(text, 'or'))]).toEqual([text, expected]);
    const escaped = parseLucene('path:a\\:b\\ c', 'or').clauses[0]!.node;
    expect(escaped).toMatchObject({ k: 'term', field: 'path', raw: 'a\\:b\\ c', text: 'a:b c' });
    // A phrase's slop (Lucene truncates a fractional one; a bare ~ leaves the default); a term has none.
    const slopOf = (text: string) => (parseLucene(text, 'or').clauses[0]!.node as { slop: number | null }).slop;
    expect([slopOf('"a b"~2'), slopOf('"a b"~2.7'), slopOf('"a b"~'), slopOf('"a b"'), slopOf('a~1')]).toEqual([
      2,
      2,
      null,
      null,
      null,
    ]);
  });

  it('refuses what Lucene refuses, saying where', () => {
    for (const text of [
      '',
      '   ',
      'a AND',
      'AND a',
      'a OR ',
      '(a',
      'a)',
      '()',
      'x:/re/',
      '"abc',
      'a~3',
      'a~1.5',
      'a^',
      'n:[1 TO',
      'n:[1 5]',
      'a:',
      '+',
      'x:>',
      'a\\',
      '(a AND)',
      'name:(a OR)',
      '(a NOT)',
      '(a &&)',
    ]) {
      let error: unknown = null;
      try {
        parseLucene(text, 'or');
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(text)).toBeInstanceOf(LuceneSyntaxError);
      expect((error as Error).message).toMatch(/at position \d+$/);
    }
    // Nesting is bounded before the recursion could exhaust the stack.
    expect(show(parseLucene(`${'('.repeat(32)}a${')'.repeat(32)}`, 'or'))).toBe(`${'('.repeat(32)}a${')'.repeat(32)}`);
    expect(() => parseLucene(`${'('.repeat(33)}a${')'.repeat(33)}`, 'or')).toThrow(
      /nest at most 32 levels deep at position 32/,
    );
    expect(() => parseLucene(`${'('.repeat(200_000)}a`, 'or')).toThrow(LuceneSyntaxError);
  });
});
