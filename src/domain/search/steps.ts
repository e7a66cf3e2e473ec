// The search steps that ask the database: each parses and validates its query here, then runs it through
// storage/search/.
import type { Queryable } from '../../storage/db.js';
import type { ACCESS_SET_CAPS } from '../../storage/queries/access.js';
import { type CypherLimits, findPaths } from '../../storage/search/cypher-statement.js';
import { searchIndex } from '../../storage/search/search-engine.js';
import { parseCypher } from './cypher-parse.js';
import { parseQueryDsl } from './query-dsl.js';
import type { PathsOutput, SearchEngineOptions, SearchEngineOutput } from './types.js';

/**
 * A search-engine step for `userId` (storage/search/search-engine.ts), and the request the debug output shows. A
 * malformed or unsupported query is a 400 (bad-content) thrown before the database is asked. `caps`: access.ts
 * ACCESS_SET_CAPS, for tests.
 */
export async function runSearchEngine(
  q: Queryable,
  userId: string,
  query: unknown,
  options: SearchEngineOptions,
  caps?: typeof ACCESS_SET_CAPS,
): Promise<{ output: SearchEngineOutput; combinedQuery: unknown }> {
  const combinedQuery = combined(userId, query, options);
  const output = await searchIndex(q, userId, parseQueryDsl(query), options, caps);
  return { output, combinedQuery };
}

/** What the debug output shows, shaped like the request the reference implementation sends to Elasticsearch. */
function combined(userId: string, query: unknown, options: SearchEngineOptions): unknown {
  const accessFilter: Record<string, unknown> = { term: { _searchableBy: userId } };
  const types =
    options.nodeTypes === null && options.relationTypes === null
      ? []
      : [
          {
            bool: {
              should: [
                { terms: { _nodeType: options.nodeTypes ?? [] } },
                { terms: { _relationType: options.relationTypes ?? [] } },
              ],
              minimum_should_match: 1,
            },
          },
        ];
  return {
    from: (options.page - 1) * options.pageSize,
    size: options.pageSize,
    ...(options.minScore === null ? {} : { min_score: options.minScore }),
    query: { bool: { must: [query, accessFilter, ...types] } },
  };
}

/**
 * A Cypher step for `userId`: its paths (ids in path order). A query outside the subset, a missing `$parameter` or
 * a query over the caps is a 400 `bad-content`. `limits` exists for tests.
 */
export async function runCypherPaths(
  q: Queryable,
  userId: string,
  query: string,
  parameters: Readonly<Record<string, unknown>>,
  limits?: CypherLimits,
): Promise<PathsOutput> {
  return findPaths(q, userId, parseCypher(query), parameters, limits);
}
