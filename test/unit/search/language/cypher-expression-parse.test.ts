// The expression grammar of the Cypher subset (src/search/language/cypher-expression-parse.ts), read through WHERE
// clauses: precedence, predicates, property access and literals, and the refusals with their messages and offsets.
import { describe, expect, it } from 'vitest';
import { Problem } from '../../../../src/errors.js';
import type { Expr } from '../../../../src/search/language/cypher-ast.js';
import { parseCypher } from '../../../../src/search/language/cypher-parse.js';

const PREFIX = 'MATCH p = (n)-[r]->(m) WHERE ';
const whereOf = (condition: string): Expr => parseCypher(`${PREFIX}${condition} RETURN p`).where!;

/** The tree without offsets, for comparison. */
const shape = (e: unknown): unknown =>
  Array.isArray(e)
    ? e.map(shape)
    : e !== null && typeof e === 'object'
      ? Object.fromEntries(
          Object.entries(e)
            .filter(([k]) => k !== 'offset')
            .map(([k, v]) => [k, shape(v)]),
        )
      : e;

const refusal = (condition: string): { message: string; offset: number } => {
  try {
    whereOf(condition);
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    const detail = (error as Problem).detail ?? '';
    const match = /at offset (\d+): (.*)$/.exec(detail);
    return { offset: Number(match?.[1]) - PREFIX.length, message: match?.[2] ?? detail };
  }
  throw new Error(`parsed: ${condition}`);
};

describe('Cypher expressions (syntax)', () => {
  it('binds OR loosest, then XOR, AND, NOT, comparisons', () => {
    expect(shape(whereOf('n.a = 1 OR NOT m.b AND r.c <> $x'))).toEqual({
      kind: 'logical',
      op: 'OR',
      left: {
        kind: 'comparison',
        op: '=',
        left: { kind: 'property', object: { kind: 'variable', name: 'n' }, key: 'a' },
        right: { kind: 'literal', value: 1 },
      },
      right: {
        kind: 'logical',
        op: 'AND',
        left: { kind: 'not', operand: { kind: 'property', object: { kind: 'variable', name: 'm' }, key: 'b' } },
        right: {
          kind: 'comparison',
          op: '<>',
          left: { kind: 'property', object: { kind: 'variable', name: 'r' }, key: 'c' },
          right: { kind: 'parameter', name: 'x' },
        },
      },
    });
  });

  it('reads predicates: IN, STARTS WITH, IS [NOT] NULL, labels', () => {
    expect(shape(whereOf("n.name STARTS WITH 'a'"))).toMatchObject({ kind: 'string-match', op: 'STARTS WITH' });
    expect(shape(whereOf('n.x IS NOT NULL'))).toMatchObject({ kind: 'is-null', negated: true });
    expect(shape(whereOf('n.x IN [1, -2.5, "s", null, true]'))).toEqual({
      kind: 'in',
      left: { kind: 'property', object: { kind: 'variable', name: 'n' }, key: 'x' },
      right: {
        kind: 'list',
        items: [1, -2.5, 's', null, true].map((value) => ({ kind: 'literal', value })),
      },
    });
    expect(shape(whereOf('n:Person|Admin OR n:Robot'))).toMatchObject({
      kind: 'logical',
      left: { kind: 'has-label', variable: 'n', labels: ['Person', 'Admin'] },
    });
  });

  it('reads maps, indexing and property chains', () => {
    expect(shape(whereOf("{a: n.x, `b c`: 1}['a'] = $p.q[0]"))).toMatchObject({
      kind: 'comparison',
      left: { kind: 'index', object: { kind: 'map' }, index: { kind: 'literal', value: 'a' } },
      right: { kind: 'index', object: { kind: 'property', key: 'q', object: { kind: 'parameter', name: 'p' } } },
    });
  });

  it('refuses what the subset leaves out, naming it and its offset', () => {
    expect(refusal('n.a + 1 = 2')).toEqual({ offset: 4, message: "arithmetic ('+') is not supported" });
    expect(refusal("n.name =~ 'a.*'")).toMatchObject({ message: 'regular expressions (=~) are not supported' });
    expect(refusal('1 < n.a < 3')).toMatchObject({
      message: 'chained comparisons (a < b < c) are not supported; use AND',
    });
    expect(refusal('size(n.a) > 1')).toMatchObject({ offset: 0, message: 'functions are not supported (size(…))' });
    expect(refusal('n.a IS 1')).toMatchObject({ message: 'expected NULL or NOT NULL but found 1' });
    expect(refusal('n.a = ')).toEqual({ offset: 7, message: "expected an expression but found 'RETURN'" });
    expect(() => whereOf('n:A:B')).toThrow(/an element has exactly one type/);
    expect(refusal('CASE WHEN n.a THEN 1 END')).toMatchObject({ message: 'CASE expressions are not supported' });
  });

  it('refuses nesting deeper than its guard with a 400, not a stack overflow', () => {
    const deep = `${'('.repeat(100)}n.a${')'.repeat(100)}`;
    expect(refusal(deep).message).toMatch(/nested more than 64 levels deep/);
  });
});
