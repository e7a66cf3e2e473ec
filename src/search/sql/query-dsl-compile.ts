// A validated query DSL (language/query-dsl.ts) compiled for the row alias `e` of `elements`: a condition the
// search index can narrow (the lexeme layout is described where the schema defines the index) and a score, with every
// value a bind parameter. docs/search.md describes the scores; ties are broken by id by the caller.
// This module combines the clauses (bool, boosts); the text queries (query-dsl-text.ts), the term-level ones
// (query-dsl-terms.ts) and the ranges (query-dsl-range.ts) compile in their own modules.
import type { DslQuery } from '../language/query-dsl-types.js';
import type { Binder } from './binder.js';
import { maxClause } from './query-dsl-max.js';
import { rangeOn } from './query-dsl-range.js';
import {
  type CompileContext,
  existsOn,
  likeEscape,
  patternOn,
  termOn,
  terms,
  wildcardToLike,
} from './query-dsl-terms.js';
import { textClause } from './query-dsl-text.js';
import {
  and,
  type Clause,
  type Cond,
  constScore,
  FALSE,
  NO_NARROW,
  narrowAnd,
  narrowOr,
  not,
  or,
  renderCond,
  renderScore,
  renderTs,
  type Score,
  TRUE,
  ZERO,
} from './tsquery.js';

export interface CompiledQuery {
  /** true when the query can match nothing (the caller need not ask the database). */
  matchesNothing: boolean;
  /** WITH entries the conditions refer to (fuzzy expansions), without the WITH keyword. */
  ctes: string[];
  /** Conjuncts of the WHERE clause: index lookups first, then the exact condition. */
  where: string[];
  /** float8 score of a matching row. */
  score: string;
}

/**
 * Compiles a query for the statement of search-engine.ts. `searchable` is an SQL boolean over the row `e`, whether
 * the caller may search it: the parts that read other rows than the hits (fuzzy expansions) read only those, and
 * may refer to the WITH entries the caller defines before `ctes`.
 */
export function compileQuery(query: DslQuery, params: Binder, searchable: string): CompiledQuery {
  const ctx: CompileContext = { params, searchable, ctes: [], fuzzyTerms: 0 };
  const compiled = clause(ctx, query);
  if (compiled.cond.k === 'const' && !compiled.cond.value)
    return { matchesNothing: true, ctes: [], where: ['false'], score: '0' };
  const where: string[] = [];
  if (compiled.narrow.ts !== null && !(compiled.cond.k === 'ts' && compiled.cond.q === compiled.narrow.ts))
    where.push(`e.search @@ ${renderTs(compiled.narrow.ts, params)}`);
  if (compiled.narrow.ids !== null) where.push(`e.id = ANY(${params.bind(compiled.narrow.ids, 'uuid[]')})`);
  if (!(compiled.cond.k === 'const' && compiled.cond.value)) where.push(renderCond(compiled.cond, params));
  return { matchesNothing: false, ctes: ctx.ctes, where, score: renderScore(compiled.score, params) };
}

function clause(ctx: CompileContext, q: DslQuery): Clause {
  switch (q.k) {
    case 'all':
      return { cond: TRUE, score: constScore(q.boost), narrow: NO_NARROW };
    case 'none':
      return { cond: FALSE, score: ZERO, narrow: NO_NARROW };
    case 'constantScore': {
      const inner = clause(ctx, q.filter);
      return { cond: inner.cond, score: constScore(q.boost), narrow: inner.narrow };
    }
    case 'boosted': {
      const inner = clause(ctx, q.query);
      return { ...inner, score: { k: 'times', factor: q.factor, score: inner.score } };
    }
    case 'max':
      return maxClause(
        q.queries.map((c) => clause(ctx, c)),
        q.boost,
        ctx.params,
      );
    case 'bool':
      return bool(
        q.must.map((c) => clause(ctx, c)),
        q.filter.map((c) => clause(ctx, c)),
        q.should.map((c) => clause(ctx, c)),
        q.mustNot.map((c) => clause(ctx, c)),
        q.required,
        q.boost,
      );
    case 'text':
      return textClause(ctx, q);
    case 'term':
      return termOn(ctx, q.field, q.value, q.boost, q.caseInsensitive);
    case 'terms':
      return terms(ctx, q.field, q.values, q.boost);
    case 'pattern':
      return patternOn(
        ctx,
        q.field,
        q.syntax === 'prefix'
          ? { like: `${likeEscape(q.pattern)}%`, literalPrefix: q.pattern, exact: null }
          : wildcardToLike(q.pattern),
        q.boost,
        q.caseInsensitive,
      );
    case 'range':
      return { ...rangeOn(ctx, q.field, q.bounds), score: constScore(q.boost) };
    case 'exists':
      return { ...existsOn(ctx, q.field), score: constScore(q.boost) };
  }
}

/** bool: must and filter required, should scores and `required` of them must match, must_not excludes. */
function bool(
  must: Clause[],
  filter: Clause[],
  should: Clause[],
  mustNot: Clause[],
  required: number,
  boost: number,
): Clause {
  const shouldCond: Cond =
    required <= 0
      ? TRUE
      : required > should.length
        ? FALSE
        : required === 1
          ? or(should.map((c) => c.cond))
          : { k: 'atLeast', n: required, items: should.map((c) => c.cond) };
  const cond = and([
    ...must.map((c) => c.cond),
    ...filter.map((c) => c.cond),
    shouldCond,
    ...mustNot.map((c) => not(c.cond)),
  ]);
  const narrow = narrowAnd([
    ...must.map((c) => c.narrow),
    ...filter.map((c) => c.narrow),
    ...(required >= 1 ? [narrowOr(should.map((c) => c.narrow))] : []),
  ]);
  const score: Score = {
    k: 'times',
    factor: boost,
    score: {
      k: 'sum',
      parts: [
        ...must.map((c) => ({ when: null, score: c.score })),
        ...should.map((c) => ({ when: c.cond, score: c.score })),
      ],
    },
  };
  return { cond, score, narrow };
}
