// The shapes that flow between the steps of a search pipeline (POST /search). Each step kind lives in its own
// module (query-dsl/search-engine, cypher, hydration); the pipeline only passes these values along, so a step can
// be changed without touching the others.
import type { ElementId } from '../values.js';
import type { Sort } from './language/sort.js';

/** One hit of the search-engine step, as the spec shows it. */
interface SearchEngineHit {
  id: ElementId;
  type: string;
  /** `sort`: the hit's sort values (with a `sort`), which `search_after` takes to continue after it. */
  metadata: { score: number; sort?: unknown[] };
}

/**
 * How far `totalHits` is exact, as Elasticsearch's default `track_total_hits`: above it the step reports this number
 * as a lower bound, so that counting costs no more than this many hits.
 */
export const TOTAL_HITS_EXACT_UP_TO = 10_000;

/** Output of a `searchengine-query-dsl-mixin` step. */
export interface SearchEngineOutput {
  elements: SearchEngineHit[];
  /** Hits over all pages (after `minScore`), not only the window returned; at most TOTAL_HITS_EXACT_UP_TO. */
  totalHits: number;
  /** `eq` when totalHits is the exact number, `gte` when there are more (Elasticsearch's `hits.total.relation`). */
  totalHitsRelation: 'eq' | 'gte';
  /** Highest score over all hits (after `minScore`); null without hits. */
  maxScore: number | null;
  /** With a sort and a full page: the last hit's sort values, the `search_after` of the next page. */
  searchAfter?: unknown[];
}

/** Window and filters of a search-engine step, already validated. */
export interface SearchEngineOptions {
  /** 1-based page number. */
  page: number;
  pageSize: number;
  minScore: number | null;
  /** Limit hits to nodes of these types / relations of these types; both absent = all elements. */
  nodeTypes: string[] | null;
  relationTypes: string[] | null;
  /** Up to how many hits totalHits is exact (track_total_hits; absent: TOTAL_HITS_EXACT_UP_TO). */
  trackTotalHits?: number;
  /** `sort` and `search_after`; null or absent: by score, then id. */
  sort?: Sort | null;
}

/** One path found by a `cypher-path-subset` step: its nodes and relations in path order. */
export interface PathIds {
  nodeIds: ElementId[];
  relationIds: ElementId[];
}

/** Output of a `cypher-path-subset` step. */
export interface PathsOutput {
  paths: PathIds[];
}

/** Extra fields a step adds to its debug entry (e.g. `indices`, `combinedQuery`, `accessibleElementIds`). */
export type DebugFields = Record<string, unknown>;
