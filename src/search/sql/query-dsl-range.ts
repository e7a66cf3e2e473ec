// Range queries of the query DSL compiled to conditions: on the time columns as shown, and on data and file
// properties by a jsonpath test (numbers, or strings), which the index narrows by the field's `e` lexeme.
import { existsLex } from '../index/lexemes.js';
import type { DslField, RangeOp } from '../language/query-dsl-types.js';
import { type CompileContext, existsOn } from './query-dsl-terms.js';
import { shownFileSql, shownTimeSql } from './shown.js';
import { and, type Cond, FALSE, lex, type Narrow, NO_NARROW } from './tsquery.js';

/** The SQL (and jsonpath) operator of each range bound. */
const SQL_OP = { gte: '>=', gt: '>', lte: '<=', lt: '<' } as const;

/** The key paths a dotted field name can stand for ("a.b": a -> b, or the key "a.b"), as ES treats both alike. */
function keyPaths(name: string): string[][] {
  const parts = name.split('.');
  if (parts.length > 6) return [parts, [name]].filter((keys) => !keys[0]!.startsWith('_'));
  const out: string[][] = [];
  for (let mask = 0; mask < 1 << (parts.length - 1); mask++) {
    const keys: string[] = [parts[0]!];
    for (let i = 1; i < parts.length; i++) {
      if (mask & (1 << (i - 1))) keys[keys.length - 1] += `.${parts[i]}`;
      else keys.push(parts[i]!);
    }
    if (!keys[0]!.startsWith('_')) out.push(keys);
  }
  return out;
}

/** Bounds on a field (instants on a date field); none: the field exists. */
export function rangeOn(
  ctx: CompileContext,
  target: DslField,
  bounds: ReadonlyArray<{ op: RangeOp; value: string | number }>,
): { cond: Cond; narrow: Narrow } {
  switch (target.kind) {
    case 'date': {
      const conds = bounds.map(
        ({ op, value }): Cond => ({
          k: 'sql',
          sql: () => `${shownTimeSql(`e.${target.column}`)} ${SQL_OP[op]} ${ctx.params.bind(value, 'timestamptz')}`,
        }),
      );
      return { cond: and(conds), narrow: NO_NARROW };
    }
    case 'data':
    case 'file':
      break;
    default:
      // 'none'; the parser refuses the other kinds.
      return { cond: FALSE, narrow: NO_NARROW };
  }
  if (bounds.length === 0) return existsOn(ctx, target);
  if (target.kind === 'file')
    return { cond: jsonRange(ctx, shownFileSql('e'), [target.keys], bounds), narrow: NO_NARROW };
  const paths = keyPaths(target.name);
  if (paths.length === 0) return { cond: FALSE, narrow: NO_NARROW };
  // The jsonpath test is exact by itself; the field's `e` lexeme lets the GIN index narrow the rows to test.
  return { cond: jsonRange(ctx, 'e.data', paths, bounds), narrow: { ts: lex(existsLex(target.name)), ids: null } };
}

/** Some value at one of `paths` (key lists) of the jsonb `doc` within the bounds (numbers, or strings). */
function jsonRange(
  ctx: CompileContext,
  doc: string,
  paths: string[][],
  bounds: ReadonlyArray<{ op: RangeOp; value: string | number }>,
): Cond {
  const vars: Record<string, string | number> = {};
  for (const { op, value } of bounds) vars[op] = value;
  // jsonpath in lax mode unwraps arrays, and the filter tests each value alone (ES: one value within the range).
  const test = bounds.map(({ op }) => `@ ${SQL_OP[op]} $${op}`).join(' && ');
  const tests = paths.map((keys) => `exists(@${keys.map((k) => `.${JSON.stringify(k)}`).join('')} ? (${test}))`);
  return {
    k: 'sql',
    sql: () =>
      `jsonb_path_exists(${doc}, ${ctx.params.bind(`$ ? (${tests.join(' || ')})`, 'jsonpath')}, ${ctx.params.bind(JSON.stringify(vars), 'jsonb')}, true)`,
  };
}
