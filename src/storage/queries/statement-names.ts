// Names for statements whose SQL text is generated from the structure of a client's query (the search engine's
// query DSL, Cypher paths). The text depends only on that structure (values are bind parameters), so a client that
// repeats a query reuses a prepared statement instead of having it planned again
// (docs/decisions/018-prepared-search-statements.md). Bounded, because every name is a prepared statement on every
// connection of the pool for good, and clients can invent structures without end: the shapes beyond the first
// MAX_PREPARED go unnamed.
import { createHash } from 'node:crypto';

const MAX_PREPARED = 64;
const named = new Set<string>();

/** A statement name for `sql` (`prefix` tells the statements apart in pg_prepared_statements), or undefined. */
export function preparedName(prefix: string, sql: string): string | undefined {
  const name = `${prefix}_${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`;
  if (named.has(name)) return name;
  if (named.size >= MAX_PREPARED) return undefined;
  named.add(name);
  return name;
}
