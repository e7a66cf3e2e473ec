// Element hydration for the search pipeline: full elements for a list of ids, only those the caller may read.
import type { Queryable } from '../db.js';
import { ACCESS_SET_CAPS, accessSetsCtes, OWNED_CTE, readableSetwise } from './access.js';
import { elementJsonSql } from './element-json.js';

/**
 * The readable elements among `ids` and their JSON (element-json.ts), in one statement, READ decided set-wise
 * (access.ts `readableSetwise`). Ids that are missing or unreadable are simply absent (an inaccessible element is
 * indistinguishable from a missing one); the caller puts the rows back into the order it wants. `caps`: access.ts
 * ACCESS_SET_CAPS; `sharedOwnedFrom`: SHARED_OWNED_FROM (parameters so that the tests can run every way of deciding).
 */
export async function readableElements(
  q: Queryable,
  userId: string,
  ids: readonly string[],
  caps = ACCESS_SET_CAPS,
  sharedOwnedFrom = SHARED_OWNED_FROM,
): Promise<Array<{ id: string; body: string }>> {
  if (ids.length === 0) return [];
  const owned = ids.length >= sharedOwnedFrom ? 'shared' : 'planned';
  const { rows } = await q.query<{ id: string; body: string }>(
    `WITH ${accessSetsCtes('READ', caps)}${owned === 'shared' ? `, ${OWNED_CTE}` : ''}
     SELECT e.id, ${elementJsonSql('e')} AS body FROM elements e WHERE e.id = ANY($2::uuid[]) AND ${readableSetwise('$1::uuid', owned)}`,
    [userId, ids],
    `search_hydration_${owned}${caps === ACCESS_SET_CAPS ? '' : `_${caps.grants}`}`,
  );
  return rows;
}

/**
 * From how many ids hydration builds what the caller's grants own once for the statement (access.ts
 * reachableSetwise, 'shared'). Hydrating the 253 elements of the bench's Cypher paths took 10.3-10.5 instead of
 * 12.8-12.9 ms on PGlite (scratch/time-cypher-pglite.ts); the scenario's p50 went from 25.2-25.4 to 22.8-23.0 ms on
 * PGlite and from 14.4-14.7 to 13.6 ms on PostgreSQL (bench --quick, 5 s, alternating). The 25 hits of its text
 * match are cheaper with PostgreSQL's own plan: with the set built for them too, that scenario fell from 185 to
 * 140-156 searches/s on PGlite and from 387-404 to 354-359 on PostgreSQL; below this threshold it is unchanged.
 */
export const SHARED_OWNED_FROM = 100;
