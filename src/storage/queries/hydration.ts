// Element hydration for the search pipeline: full elements for a list of ids, only those the caller may read.
import type { Queryable } from '../db.js';
import { grantsCte, readableSetwise } from './access.js';
import { ELEMENT_COLUMNS, type ElementRow } from './elements.js';

/**
 * The readable elements among `ids`, in one statement, READ decided set-wise (access.ts `readableSetwise`). Ids that are missing
 * or unreadable are simply absent (an inaccessible element is indistinguishable from a missing one); the caller
 * puts the rows back into the order it wants.
 */
export async function readableElements(q: Queryable, userId: string, ids: readonly string[]): Promise<ElementRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<ElementRow>(
    `WITH ${grantsCte('READ')}
     SELECT ${ELEMENT_COLUMNS} FROM elements e WHERE e.id = ANY($2::uuid[]) AND ${readableSetwise('$1::uuid')}`,
    [userId, ids],
    'search_hydration',
  );
  return rows;
}
