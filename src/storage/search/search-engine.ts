// The `searchengine-query-dsl-mixin` step's statement: a validated query DSL run against the search index,
// restricted to what the caller may SEARCH, in one statement that returns the page of hits, the number of all hits
// and the highest score.
import type { DslQuery } from '../../domain/search/query-dsl-types.js';
import type { SearchEngineOptions, SearchEngineOutput } from '../../domain/search/types.js';
import { badContent } from '../../errors.js';
import type { Queryable } from '../db.js';
import { ACCESS_SET_CAPS, accessSetsCtes, searchableIndexed } from '../queries/access.js';
import { preparedName } from '../queries/statement-names.js';
import { Binder } from './binder.js';
import { compileQuery } from './query-dsl-compile.js';

interface HitRow {
  total: number;
  max_score: number | null;
  id: string | null;
  type: string | null;
  score: number | null;
}

/** Restriction to node types and relation types; null when both are absent (every element). */
function typeFilter(options: SearchEngineOptions, params: Binder): string | null {
  if (options.nodeTypes === null && options.relationTypes === null) return null;
  const nodes =
    options.nodeTypes === null
      ? 'false'
      : `(e.start_id IS NULL AND e.type = ANY(${params.bind(options.nodeTypes, 'text[]')}))`;
  const relations =
    options.relationTypes === null
      ? 'false'
      : `(e.start_id IS NOT NULL AND e.type = ANY(${params.bind(options.relationTypes, 'text[]')}))`;
  return `(${nodes} OR ${relations})`;
}

/** A value of the query PostgreSQL cannot take: the client's mistake, a 400. */
const unstorable = () =>
  badContent('query: a string holds U+0000 or an unpaired surrogate, which no stored text holds');

/**
 * Searches for `userId`: the page `options.page` (1-based) of `options.pageSize` hits by score (highest first, ties
 * by id), `totalHits` and `maxScore` over all hits at or above `minScore`. `caps`: access.ts ACCESS_SET_CAPS.
 */
export async function searchIndex(
  q: Queryable,
  userId: string,
  query: DslQuery,
  options: SearchEngineOptions,
  caps = ACCESS_SET_CAPS,
): Promise<SearchEngineOutput> {
  const params = new Binder([userId], { unstorable });
  const searchable = searchableIndexed('$1::uuid');
  const compiled = compileQuery(query, params, searchable);
  if (compiled.matchesNothing) return { elements: [], totalHits: 0, maxScore: null };
  const types = typeFilter(options, params);
  const where = [...compiled.where, ...(types === null ? [] : [types]), searchable];
  const minScore = options.minScore === null ? '' : `WHERE score >= ${params.bind(options.minScore, 'float8')}`;
  // Scores are rounded so that two hits whose scores differ only by floating-point noise are ordered by id. The
  // access sets come first: the query's own WITH entries (fuzzy expansions) read them too.
  const sql = `WITH ${[accessSetsCtes('SEARCH', caps), ...compiled.ctes].join(',\n  ')},
  hits AS MATERIALIZED (
    SELECT e.id, e.type, round((${compiled.score})::numeric, 6)::float8 AS score
    FROM elements e
    WHERE ${where.map((w) => `(${w})`).join('\n      AND ')}
  ),
  kept AS (SELECT id, type, score FROM hits ${minScore})
  SELECT agg.total, agg.max_score, w.id, w.type, w.score
  FROM (SELECT count(*) AS total, max(score) AS max_score FROM kept) agg
  LEFT JOIN LATERAL (
    SELECT id, type, score FROM kept ORDER BY score DESC, id
    LIMIT ${params.bind(options.pageSize, 'int')} OFFSET ${params.bind((options.page - 1) * options.pageSize, 'bigint')}
  ) w ON true`;
  const { rows } = await q.query<HitRow>(sql, params.values, preparedName('search', sql));
  const first = rows[0];
  const elements = rows
    .filter((r) => r.id !== null)
    .map((r) => ({ id: r.id!, type: r.type!, metadata: { score: r.score! } }));
  return { elements, totalHits: first?.total ?? 0, maxScore: first?.max_score ?? null };
}
