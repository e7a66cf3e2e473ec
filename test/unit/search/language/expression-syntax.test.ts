// The parser of the `{{ … }}` expressions (src/search/language/expression-syntax.ts): the tree it builds (precedence,
// chained comparisons, closures, literals) and the errors with their offsets.
import { describe, expect, it } from 'vitest';
import { MAX_NESTING, MAX_TREE_DEPTH, Parser } from '../../../../src/search/language/expression-syntax.js';
import { ExpressionError } from '../../../../src/search/language/expression-tokens.js';

/** The tree without positions and depths, for comparison. */
const shape = (e: unknown): unknown =>
  Array.isArray(e)
    ? e.map(shape)
    : e !== null && typeof e === 'object'
      ? Object.fromEntries(
          Object.entries(e)
            .filter(([k]) => k !== 'pos' && k !== 'depth')
            .map(([k, v]) => [k, shape(v)]),
        )
      : e;
const parse = (source: string) => shape(new Parser(source).parseAll());
const failure = (source: string): { message: string; offset: number } => {
  try {
    new Parser(source).parseAll();
  } catch (error) {
    expect(error).toBeInstanceOf(ExpressionError);
    return { message: (error as ExpressionError).message, offset: (error as ExpressionError).offset };
  }
  throw new Error(`parsed: ${source}`);
};

describe('expression syntax', () => {
  it('binds * before +, and ** to the right', () => {
    expect(parse('1 + 2 * 3')).toMatchObject({
      type: 'binary',
      op: '+',
      left: { type: 'literal', value: 1 },
      right: { type: 'binary', op: '*' },
    });
    expect(parse('2 ** 3 ^ 2')).toMatchObject({
      type: 'binary',
      op: '**',
      left: { value: 2 },
      right: { type: 'binary', op: '**', left: { value: 3 }, right: { value: 2 } },
    });
  });

  it('reads word operators as their symbols and a chained comparison as a conjunction', () => {
    expect(parse('a and not b')).toMatchObject({ type: 'binary', op: '&&', right: { type: 'unary', op: '!' } });
    expect(parse('1 < x <= 3')).toMatchObject({
      type: 'binary',
      op: '&&',
      left: { type: 'binary', op: '<' },
      right: { type: 'binary', op: '<=' },
    });
  });

  it('reads literals, member access, optional chains, slices and calls with closures', () => {
    expect(parse('[1, "a", true, nil, {k: 2}]')).toMatchObject({ type: 'array' });
    expect(parse('a?.b.c')).toMatchObject({ type: 'chain' });
    expect(JSON.stringify(parse('filter(xs, # > 1)'))).toContain('"pointer"');
    expect(JSON.stringify(parse('map(xs, {.name})'))).toContain('"name"');
    expect(parse('xs[1:2]')).toMatchObject({ type: 'slice' });
    expect(parse('x ? 1 : 2')).toMatchObject({ type: 'conditional' });
  });

  it('refuses malformed input with the offset of the problem', () => {
    expect(failure('')).toEqual({ message: 'empty expression', offset: 0 });
    expect(failure('1 +').offset).toBe(3);
    expect(failure('(1').offset).toBe(2);
    expect(failure('# > 1').message).toMatch(/#/);
    expect(failure('"open').message).toMatch(/string/);
  });

  it('refuses nesting and trees deeper than its guards', () => {
    expect(failure(`${'('.repeat(MAX_NESTING + 1)}1${')'.repeat(MAX_NESTING + 1)}`).message).toBe(
      `expression is nested more than ${MAX_NESTING} levels deep`,
    );
    expect(failure(Array.from({ length: MAX_TREE_DEPTH + 2 }, () => '1').join(' + ')).message).toBe(
      `expression is nested more than ${MAX_TREE_DEPTH} levels deep`,
    );
  });
});
