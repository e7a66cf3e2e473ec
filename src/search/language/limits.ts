// What one query may ask for: bounds on the size of the SQL it compiles to and on its work. The query DSL's first,
// then Cypher's (its path length, MAX_HOPS, is part of the syntax tree: cypher-ast.ts).

/** Levels a query (and the groups of a query_string inside it) may nest. */
export const MAX_DEPTH = 32;

/**
 * Clauses per query, Elasticsearch's max_clause_count: every query object, every term of a match, every value of a
 * terms or ids query beyond its first, every clause of a query_string
 * ([decision 007](../../../docs/decisions/007-balanced-trees-and-clause-limit.md)).
 */
export const MAX_CLAUSES = 1024;

/** Fuzzy terms per query: each one reads the words of every element the caller may search that has the field. */
export const MAX_FUZZY_TERMS = 16;

/**
 * The largest boost. Scores are float8 products of the boosts along a query's nesting summed over its clauses: with
 * boosts up to 1000 they stay far below float8's limit, where a boost of 1e308 overflowed in the database.
 */
export const MAX_BOOST = 1000;

/** Matches (complete paths) a Cypher query without LIMIT may return; more is a 400, never a truncation. */
export const MAX_PATHS = 10_000;
/** Partial paths a Cypher query may explore (all rows of its walks); more is a 400. Bounds work and memory per query. */
const MAX_EXPLORED = 100_000;
/** Items a Cypher UNWIND list may hold. */
export const MAX_UNWIND = 10_000;

/** The caps of a Cypher query's work; tests lower them. */
export interface CypherLimits {
  maxPaths: number;
  maxExplored: number;
}
export const CYPHER_LIMITS: CypherLimits = { maxPaths: MAX_PATHS, maxExplored: MAX_EXPLORED };
