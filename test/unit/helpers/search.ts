// Seeding and querying the in-memory PGlite of database.ts for the unit tests of the search module's SQL and of the
// search pipeline. Elements are written with plain INSERTs (the database computes their search documents); a seeded
// user may read and search them through the CREATED relations the service would write.
import { randomUUID } from 'node:crypto';
import { parseCypher } from '../../../src/search/language/cypher-parse.js';
import { CYPHER_LIMITS, type CypherLimits } from '../../../src/search/language/limits.js';
import { parseQueryDsl } from '../../../src/search/language/query-dsl.js';
import type { PathsOutput } from '../../../src/search/results.js';
import { Binder } from '../../../src/search/sql/binder.js';
import { compileCypher, type PathRow, pathsOf } from '../../../src/search/sql/cypher-statement.js';
import { compileQuery } from '../../../src/search/sql/query-dsl-compile.js';
import type { Db } from '../../../src/storage/db.js';
import { inlineCheck } from '../../../src/storage/queries/access.js';
import { insertElement } from '../../../src/storage/queries/elements.js';
import type { ElementId } from '../../../src/values.js';

export interface SeedElement {
  type: string;
  data?: Record<string, unknown>;
  /** A relation: its start and end ids. */
  start?: string;
  end?: string;
  at?: Date;
}

/** A user (its node and its account row) who may read and search what `seed` gives it. */
export async function seedUser(db: Db): Promise<ElementId> {
  const id = randomUUID() as ElementId;
  await insertElement(db, { id, type: 'User', data: {}, at: new Date() });
  await db.query('INSERT INTO users (id, identifier, password_hash) VALUES ($1, $2, NULL)', [id, `${id}@unit.test`]);
  return id;
}

/**
 * Inserts `elements` in order and returns their ids. With `creator`, each node gets the CREATED relation from it,
 * so the creator may read and search it, and the search keys are rebuilt.
 */
export async function seed(db: Db, elements: SeedElement[], creator: string | null = null): Promise<ElementId[]> {
  const ids: ElementId[] = [];
  for (const el of elements) {
    const id = randomUUID() as ElementId;
    const at = el.at ?? new Date();
    await insertElement(db, { id, type: el.type, data: el.data ?? {}, start: el.start, end: el.end, at });
    if (creator !== null && el.start === undefined)
      await insertElement(db, { id: randomUUID(), type: 'CREATED', data: {}, start: creator, end: id, at });
    ids.push(id);
  }
  if (creator !== null) await db.query('SELECT trellis_rebuild_access_keys()');
  return ids;
}

/**
 * The ids a query DSL object finds among all elements (no access restriction), by score (highest first), then id,
 * compiled by search/sql/query-dsl-compile.ts and run as it is compiled.
 */
export async function dslHits(db: Db, query: unknown): Promise<Array<{ id: string; score: number }>> {
  const params = new Binder([], { unstorable: () => new Error('unstorable') });
  const compiled = compileQuery(parseQueryDsl(query), params, 'true');
  if (compiled.matchesNothing) return [];
  const sql = `${compiled.ctes.length === 0 ? '' : `WITH ${compiled.ctes.join(',\n')}\n`}SELECT e.id, (${compiled.score})::float8 AS score
    FROM elements e WHERE ${compiled.where.map((w) => `(${w})`).join(' AND ')}
    ORDER BY 2 DESC, 1`;
  const { rows } = await db.query<{ id: string; score: number }>(sql, params.values);
  return rows;
}

/** The paths of a Cypher query for `user`, compiled by search/sql/cypher-statement.ts with the access module's READ. */
export async function cypherPaths(
  db: Db,
  user: string,
  query: string,
  parameters: Record<string, unknown> = {},
  limits: CypherLimits = CYPHER_LIMITS,
): Promise<PathsOutput> {
  const readable = (who: string, alias: string) => inlineCheck(who, 'READ', alias);
  const compiled = compileCypher(parseCypher(query), parameters, user, readable, limits);
  const { rows } = await db.query<PathRow>(compiled.text, compiled.values);
  return pathsOf(rows, compiled, limits);
}
