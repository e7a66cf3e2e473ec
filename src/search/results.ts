// The shapes that flow between the steps of a search pipeline (POST /search). Each step kind lives in its own
// module (query-dsl/search-engine, cypher, hydration); the pipeline only passes these values along, so a step can
// be changed without touching the others.
import type { ElementId } from '../values.js';

/** One hit of the search-engine step, as the spec shows it. */
interface SearchEngineHit {
  id: ElementId;
  type: string;
  metadata: { score: number };
}

/** Output of a `searchengine-query-dsl-mixin` step. */
export interface SearchEngineOutput {
  elements: SearchEngineHit[];
  /** Hits over all pages (after `minScore`), not only the window returned. */
  totalHits: number;
  /** Highest score over all hits (after `minScore`); null without hits. */
  maxScore: number | null;
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
