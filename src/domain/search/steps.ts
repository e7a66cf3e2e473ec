// The search steps that ask the database: each parses and validates its query here (search/language/), then runs
// it through the SearchEngine port (ports.ts).

import { parseCypher } from '../../search/language/cypher-parse.js';
import type { CypherLimits } from '../../search/language/limits.js';
import { parseQueryDsl } from '../../search/language/query-dsl.js';
import type { SortKey } from '../../search/language/sort.js';
import {
  type PathsOutput,
  type SearchEngineOptions,
  type SearchEngineOutput,
  TOTAL_HITS_EXACT_UP_TO,
} from '../../search/results.js';
import type { Tx } from '../transactions.js';
import type { SearchEngine } from './ports.js';

/**
 * A search-engine step for `userId`, and the request the debug output shows. A malformed or unsupported query is a
 * 400 (bad-content) thrown before the database is asked.
 */
export async function runSearchEngine(
  engine: SearchEngine,
  tx: Tx,
  userId: string,
  query: unknown,
  options: SearchEngineOptions,
): Promise<{ output: SearchEngineOutput; combinedQuery: unknown }> {
  const combinedQuery = combined(userId, query, options);
  const output = await engine.searchIndex(tx, userId, parseQueryDsl(query), options);
  const last = output.elements.at(-1);
  if (options.sort && output.elements.length === options.pageSize && last?.metadata.sort)
    output.searchAfter = last.metadata.sort;
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
    ...(options.sort ? { sort: options.sort.keys.map(sortClause) } : {}),
    ...(options.sort?.after ? { search_after: options.sort.after } : {}),
    ...(options.trackTotalHits === undefined || options.trackTotalHits === TOTAL_HITS_EXACT_UP_TO
      ? {}
      : { track_total_hits: options.trackTotalHits }),
    query: { bool: { must: [query, accessFilter, ...types] } },
  };
}

/** One key of a sort as Elasticsearch writes it. */
function sortClause(key: SortKey): Record<string, unknown> {
  const order = key.desc ? 'desc' : 'asc';
  switch (key.k) {
    case 'score':
      return { _score: { order } };
    case 'id':
      return { _id: { order } };
    case 'time':
      return { [key.column]: { order } };
    case 'field':
      return { [key.name]: { order, missing: key.missingFirst ? '_first' : '_last' } };
  }
}

/**
 * A Cypher step for `userId`: its paths (ids in path order). A query outside the subset, a missing `$parameter` or
 * a query over the caps is a 400 `bad-content`. `limits` exists for tests.
 */
export async function runCypherPaths(
  engine: SearchEngine,
  tx: Tx,
  userId: string,
  query: string,
  parameters: Readonly<Record<string, unknown>>,
  limits?: CypherLimits,
): Promise<PathsOutput> {
  return engine.findPaths(tx, userId, parseCypher(query), parameters, limits);
}
