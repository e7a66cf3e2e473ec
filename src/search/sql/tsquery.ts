// The conditions and scores a query DSL compiles to, and their SQL: lexeme conditions of one and/or become one
// tsquery (one index lookup, one @@ per row), every value is a bind parameter, and long chains are balanced trees.

import { badContent } from '../../errors.js';
import { lexemeFits, TSQUERY_MAX_OPERAND_BYTES, TSQUERY_MAX_TOTAL_BYTES } from '../index/lexemes.js';
import type { Binder } from './binder.js';

/** tsquery trees: lexemes (exact or prefix), a tsquery computed by SQL (fuzzy expansions), and, or, not. */
export type Ts =
  | { op: 'lex'; lexeme: string; prefix: boolean }
  | { op: 'sql'; sql: string }
  | { op: 'and' | 'or'; items: Ts[] }
  | { op: 'not'; item: Ts };

export type Cond =
  | { k: 'const'; value: boolean }
  | { k: 'ts'; q: Ts }
  | { k: 'sql'; sql: () => string }
  | { k: 'and' | 'or'; items: Cond[] }
  | { k: 'not'; item: Cond }
  | { k: 'atLeast'; n: number; items: Cond[] };

/** A score expression, valid for rows that satisfy the clause's condition. */
export type Score =
  | { k: 'const'; value: number }
  | { k: 'sql'; sql: () => string }
  | { k: 'sum'; parts: { when: Cond | null; score: Score }[] }
  | { k: 'times'; factor: number; score: Score };

/** What an index can use: a superset of the matches. null = no narrowing from that index. */
export interface Narrow {
  ts: Ts | null;
  ids: string[] | null;
}

export interface Clause {
  cond: Cond;
  score: Score;
  narrow: Narrow;
}

export const TRUE: Cond = { k: 'const', value: true };
export const FALSE: Cond = { k: 'const', value: false };
export const NO_NARROW: Narrow = { ts: null, ids: null };
export const ZERO: Score = { k: 'const', value: 0 };
export const constScore = (boost: number): Score => ({ k: 'const', value: boost });
export const lex = (lexeme: string, prefix = false): Ts => ({ op: 'lex', lexeme, prefix });

export function and(items: Cond[]): Cond {
  const kept: Cond[] = [];
  for (const item of items.flatMap((i) =>
    i.k === 'and' ? i.items : i.k === 'ts' && i.q.op === 'and' ? i.q.items.map((q): Cond => ({ k: 'ts', q })) : [i],
  )) {
    if (item.k === 'const') {
      if (!item.value) return FALSE;
    } else kept.push(item);
  }
  return kept.length === 0 ? TRUE : kept.length === 1 ? kept[0]! : merged('and', kept);
}

/** An and/or of lexeme conditions is one tsquery (one index lookup, one @@ per row). */
function merged(op: 'and' | 'or', items: Cond[]): Cond {
  if (items.every((i) => i.k === 'ts')) return { k: 'ts', q: { op, items: items.map((i) => (i as { q: Ts }).q) } };
  return { k: op, items };
}

export function or(items: Cond[]): Cond {
  const kept: Cond[] = [];
  for (const item of items.flatMap((i) =>
    i.k === 'or' ? i.items : i.k === 'ts' && i.q.op === 'or' ? i.q.items.map((q): Cond => ({ k: 'ts', q })) : [i],
  )) {
    if (item.k === 'const') {
      if (item.value) return TRUE;
    } else kept.push(item);
  }
  return kept.length === 0 ? FALSE : kept.length === 1 ? kept[0]! : merged('or', kept);
}

export const not = (item: Cond): Cond =>
  item.k === 'const' ? { k: 'const', value: !item.value } : item.k === 'not' ? item.item : { k: 'not', item };

/** A lexeme condition, or false when the lexeme cannot be in the index (too long). */
export const lexCond = (lexeme: string, prefix = false): Cond =>
  lexemeFits(lexeme) ? { k: 'ts', q: lex(lexeme, prefix) } : FALSE;

export function narrowAnd(items: Narrow[]): Narrow {
  const ts = items.map((n) => n.ts).filter((t): t is Ts => t !== null);
  const ids = items.map((n) => n.ids).filter((i): i is string[] => i !== null);
  return {
    ts: ts.length === 0 ? null : ts.length === 1 ? ts[0]! : { op: 'and', items: ts },
    ids: ids.length === 0 ? null : ids.reduce((a, b) => a.filter((id) => b.includes(id))),
  };
}

export function narrowOr(items: Narrow[]): Narrow {
  const ts = items.map((n) => n.ts);
  const ids = items.map((n) => n.ids);
  return {
    ts:
      items.length > 0 && ts.every((t) => t !== null)
        ? ts.length === 1
          ? ts[0]!
          : { op: 'or', items: ts as Ts[] }
        : null,
    ids: items.length > 0 && ids.every((i) => i !== null) ? [...new Set((ids as string[][]).flat())] : null,
  };
}

/** The narrowing a condition built from lexemes allows by itself (its lexeme part). */
export function narrowOf(cond: Cond): Narrow {
  switch (cond.k) {
    case 'ts':
      return { ts: cond.q, ids: null };
    case 'and':
      return narrowAnd(cond.items.map(narrowOf));
    case 'or':
      return narrowOr(cond.items.map(narrowOf));
    case 'atLeast':
      return cond.n >= 1 ? narrowOr(cond.items.map(narrowOf)) : NO_NARROW;
    default:
      return NO_NARROW;
  }
}

/** tsquery input text: every lexeme quoted, so no character of it is syntax. */
function tsText(q: Ts): string {
  switch (q.op) {
    case 'lex':
      return `'${q.lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'${q.prefix ? ':*' : ''}`;
    case 'and':
    case 'or':
      // A tsquery is parsed into a chain and evaluated recursively like SQL's operators (see balanced).
      return balanced(q.items.map(tsText), q.op === 'and' ? '&' : '|');
    case 'not':
      return `!(${tsText(q.item)})`;
    case 'sql':
      throw new Error('a computed tsquery has no text form');
  }
}

const isStatic = (q: Ts): boolean =>
  q.op === 'sql' ? false : q.op === 'lex' ? true : q.op === 'not' ? isStatic(q.item) : q.items.every(isStatic);

/**
 * A static tsquery within PostgreSQL's limits, or 400. Lexemes built from values are checked where they are made
 * (lexCond: a value no stored lexeme can equal matches nothing); what is left here is a field name too long to
 * search for, or a query of more words than one tsquery holds.
 */
function checkTsquery(q: Ts): void {
  let total = 0;
  const walk = (t: Ts): void => {
    if (t.op === 'lex') {
      const bytes = Buffer.byteLength(t.lexeme);
      if (bytes > TSQUERY_MAX_OPERAND_BYTES)
        failQuery(
          `a field name or term is too long to search for (a search term is at most ${TSQUERY_MAX_OPERAND_BYTES} bytes with its field name)`,
        );
      total += bytes + 1;
    } else if (t.op === 'not') walk(t.item);
    else if (t.op !== 'sql') t.items.forEach(walk);
  };
  walk(q);
  if (total > TSQUERY_MAX_TOTAL_BYTES)
    failQuery(
      `its terms add up to more than PostgreSQL takes in one search (${TSQUERY_MAX_TOTAL_BYTES.toLocaleString('en-US')} bytes)`,
    );
}

/** A tsquery as SQL: static parts as one bind parameter each, computed parts combined with && || !!. */
export function renderTs(q: Ts, params: Binder): string {
  if (isStatic(q)) {
    checkTsquery(q);
    return params.bind(tsText(q), 'tsquery');
  }
  switch (q.op) {
    case 'sql':
      return q.sql;
    case 'not':
      return `(!! ${renderTs(q.item, params)})`;
    case 'and':
    case 'or': {
      // The static items as one tsquery parameter, the computed ones beside it, as a balanced tree (see balanced).
      const statics = q.items.filter(isStatic);
      const computed = q.items.filter((i) => !isStatic(i)).map((i) => renderTs(i, params));
      const parts =
        statics.length === 0
          ? computed
          : [renderTs(statics.length === 1 ? statics[0]! : { op: q.op, items: statics }, params), ...computed];
      return balanced(parts, q.op === 'and' ? '&&' : '||');
    }
    default:
      throw new Error('unreachable');
  }
}

export function renderCond(c: Cond, params: Binder): string {
  switch (c.k) {
    case 'const':
      return c.value ? 'true' : 'false';
    case 'ts':
      return `e.search @@ ${renderTs(c.q, params)}`;
    case 'sql':
      return c.sql();
    case 'not':
      return `NOT (${renderCond(c.item, params)})`;
    case 'atLeast':
      return `${balanced(
        c.items.map((i) => `(${renderCond(i, params)})::int`),
        '+',
      )} >= ${params.bind(c.n, 'int')}`;
    case 'and':
    case 'or': {
      // All lexeme conditions of one and/or become one tsquery: one index lookup, one @@ per row.
      const ts = c.items.filter((i): i is { k: 'ts'; q: Ts } => i.k === 'ts');
      const rest = c.items.filter((i) => i.k !== 'ts');
      const parts = rest.map((i) => renderCond(i, params));
      if (ts.length > 0)
        parts.unshift(
          renderCond({ k: 'ts', q: ts.length === 1 ? ts[0]!.q : { op: c.k, items: ts.map((t) => t.q) } }, params),
        );
      return parts.length === 1 ? parts[0]! : `(${parts.map((p) => `(${p})`).join(c.k === 'and' ? ' AND ' : ' OR ')})`;
    }
  }
}

export function renderScore(s: Score, params: Binder): string {
  switch (s.k) {
    case 'const':
      return s.value === 0 || s.value === 1 ? String(s.value) : params.bind(s.value, 'float8');
    case 'sql':
      return s.sql();
    case 'times':
      return s.factor === 1
        ? renderScore(s.score, params)
        : `${params.bind(s.factor, 'float8')} * (${renderScore(s.score, params)})`;
    case 'sum': {
      const parts = s.parts
        .filter((p) => !(p.score.k === 'const' && p.score.value === 0) && !(p.when?.k === 'const' && !p.when.value))
        .map((p) =>
          p.when === null || (p.when.k === 'const' && p.when.value)
            ? renderScore(p.score, params)
            : `CASE WHEN ${renderCond(p.when, params)} THEN ${renderScore(p.score, params)} ELSE 0 END`,
        );
      return parts.length === 0 ? '0' : balanced(parts, '+');
    }
  }
}

/**
 * `(a op b op c …)` as a balanced tree of parenthesised pairs. PostgreSQL parses `a + b + c + …` (and a tsquery's
 * `a | b | c …`) into a chain as deep as it is long and recurses along it, which exceeds the stack of a server and
 * overflows the embedded database's. Balanced, the depth is the logarithm of the length.
 */
function balanced(parts: string[], op: string): string {
  if (parts.length === 1) return `(${parts[0]!})`;
  const middle = parts.length >> 1;
  return `(${balanced(parts.slice(0, middle), op)} ${op} ${balanced(parts.slice(middle), op)})`;
}

const failQuery = (message: string): never => {
  throw badContent(`query: ${message}`);
};
