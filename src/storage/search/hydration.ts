// Element hydration for the search pipeline: full elements for a list of ids, only those the caller may read.
import type { Queryable } from '../db.js';
import { ACCESS_SET_CAPS, accessSetsCtes, readableSetwise } from '../queries/access.js';
import { elementJsonSql } from '../queries/element-json.js';

/**
 * The readable elements among `ids` and their JSON (element-json.ts), in one statement, READ decided set-wise
 * (access.ts `readableSetwise`). Ids that are missing or unreadable are simply absent (an inaccessible element is
 * indistinguishable from a missing one); the caller puts the rows back into the order it wants. `caps`: access.ts
 * ACCESS_SET_CAPS.
 */
export async function readableElements(
  q: Queryable,
  userId: string,
  ids: readonly string[],
  caps = ACCESS_SET_CAPS,
): Promise<Array<{ id: string; body: string }>> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<{ id: string; body: string }>(
    `WITH ${accessSetsCtes('READ', caps)}
     SELECT e.id, ${elementJsonSql('e')} AS body FROM elements e WHERE e.id = ANY($2::uuid[]) AND ${readableSetwise('$1::uuid')}`,
    [userId, ids],
    caps === ACCESS_SET_CAPS ? 'search_hydration' : `search_hydration_${caps.grants}`,
  );
  return rows;
}
