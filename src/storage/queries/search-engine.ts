// The `searchengine-query-dsl-mixin` step: the client's query DSL (compiled by src/domain/search/query-dsl.ts) run
// against the search index of migration 006, restricted to what the caller may SEARCH, in one statement that returns
// the page of hits, the number of all hits and the highest score.
import { compileQuery, SqlParams } from '../../domain/search/query-dsl.js';
import type { SearchEngineOptions, SearchEngineOutput } from '../../domain/search/types.js';
import type { Queryable } from '../db.js';
import { ACCESS_SET_CAPS, accessSetsCtes, searchableIndexed } from './access.js';
import { preparedName } from './statement-names.js';

interface HitRow {
  total: number;
  max_score: number | null;
  id: string | null;
  type: string | null;
  score: number | null;
}

/** Restriction to node types and relation types; null when both are absent (every element). */
function typeFilter(options: SearchEngineOptions, params: SqlParams): string | null {
  if (options.nodeTypes === null && options.relationTypes === null) return null;
  const nodes = options.nodeTypes === null ? 'false' : `(e.start_id IS NULL AND e.type = ANY(${params.add(options.nodeTypes, 'text[]')}))`;
  const relations = options.relationTypes === null ? 'false' : `(e.start_id IS NOT NULL AND e.type = ANY(${params.add(options.relationTypes, 'text[]')}))`;
  return `(${nodes} OR ${relations})`;
}

/** What the debug output shows, shaped like the request the reference implementation sends to Elasticsearch. */
function combined(userId: string, query: unknown, options: SearchEngineOptions): unknown {
  const accessFilter: Record<string, unknown> = { term: { _searchableBy: userId } };
  const types =
    options.nodeTypes === null && options.relationTypes === null
      ? []
      : [{ bool: { should: [{ terms: { _nodeType: options.nodeTypes ?? [] } }, { terms: { _relationType: options.relationTypes ?? [] } }], minimum_should_match: 1 } }];
  return {
    from: (options.page - 1) * options.pageSize,
    size: options.pageSize,
    ...(options.minScore === null ? {} : { min_score: options.minScore }),
    query: { bool: { must: [query, accessFilter, ...types] } },
  };
}

/**
 * Runs a search-engine step for `userId`: the page `options.page` (1-based) of `options.pageSize` hits by score
 * (highest first, ties by id), `totalHits` and `maxScore` over all hits at or above `minScore`. A malformed or
 * unsupported query is a 400 (bad-content) thrown before the database is asked. `caps`: access.ts ACCESS_SET_CAPS.
 */
export async function runSearchEngine(
  q: Queryable,
  userId: string,
  query: unknown,
  options: SearchEngineOptions,
  caps = ACCESS_SET_CAPS,
): Promise<{ output: SearchEngineOutput; combinedQuery: unknown }> {
  const combinedQuery = combined(userId, query, options);
  const params = new SqlParams([userId]);
  const searchable = searchableIndexed('$1::uuid');
  const compiled = compileQuery(query, params, searchable);
  if (compiled.matchesNothing) return { output: { elements: [], totalHits: 0, maxScore: null }, combinedQuery };
  const types = typeFilter(options, params);
  const where = [...compiled.where, ...(types === null ? [] : [types]), searchable];
  const minScore = options.minScore === null ? '' : `WHERE score >= ${params.add(options.minScore, 'float8')}`;
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
    LIMIT ${params.add(options.pageSize, 'int')} OFFSET ${params.add((options.page - 1) * options.pageSize, 'bigint')}
  ) w ON true`;
  const { rows } = await q.query<HitRow>(sql, params.values, preparedName('search', sql));
  const first = rows[0];
  const elements = rows.filter((r) => r.id !== null).map((r) => ({ id: r.id!, type: r.type!, metadata: { score: r.score! } }));
  return { output: { elements, totalHits: first?.total ?? 0, maxScore: first?.max_score ?? null }, combinedQuery };
}
