// The store the search capability runs its steps on, in the search module's models: a parsed query DSL, a parsed
// Cypher query, element ids. storage/search/search-engine.ts implements it in SQL; every method takes the Tx of the
// search's transaction, so that all its statements share the search's time budget.
import type { CypherQuery } from '../../search/language/cypher-ast.js';
import type { CypherLimits } from '../../search/language/limits.js';
import type { DslQuery } from '../../search/language/query-dsl-types.js';
import type { PathsOutput, SearchEngineOptions, SearchEngineOutput } from '../../search/results.js';
import type { ElementId } from '../../values.js';
import type { Tx } from '../transactions.js';

/** An element the caller may read, with its JSON as the store renders every element response. */
export interface RenderedElement {
  id: ElementId;
  body: string;
}

export interface SearchEngine {
  /**
   * The page `options.page` (1-based) of hits of `query` that `userId` may SEARCH, by score (highest first, ties by
   * id), with the number of all hits and the highest score, both at or above `minScore`.
   */
  searchIndex(tx: Tx, userId: string, query: DslQuery, options: SearchEngineOptions): Promise<SearchEngineOutput>;
  /**
   * The paths of `query` whose nodes `userId` may READ (ids in path order). A missing `$parameter`, a value of the
   * wrong kind where a constant is needed or a query over `limits` is a 400 `bad-content`.
   */
  findPaths(
    tx: Tx,
    userId: string,
    query: CypherQuery,
    parameters: Readonly<Record<string, unknown>>,
    limits?: CypherLimits,
  ): Promise<PathsOutput>;
  /** The elements among `ids` that `userId` may READ, in no particular order; the others are simply absent. */
  readableElements(tx: Tx, userId: string, ids: readonly ElementId[]): Promise<RenderedElement[]>;
}
