// The best of several queries (multi_match's best_fields and phrase): a row matches when any of them does and
// scores the highest of their scores, each compiled as it would be alone.
import type { Binder } from './binder.js';
import { type Clause, narrowOr, or, renderCond, renderScore } from './tsquery.js';

export function maxClause(parts: Clause[], boost: number, params: Binder): Clause {
  const scoreOf = (c: Clause) =>
    c.cond.k === 'const' && c.cond.value
      ? renderScore(c.score, params)
      : `CASE WHEN ${renderCond(c.cond, params)} THEN ${renderScore(c.score, params)} ELSE 0 END`;
  return {
    cond: or(parts.map((c) => c.cond)),
    narrow: narrowOr(parts.map((c) => c.narrow)),
    score: {
      k: 'times',
      factor: boost,
      score: { k: 'sql', sql: () => `GREATEST(${parts.map(scoreOf).join(', ')})` },
    },
  };
}
