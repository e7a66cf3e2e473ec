// The one access module: every capability asks "which of these ids may user U do P on" here, in one statement.
import type { Queryable } from '../db.js';

export type Permission = 'READ' | 'SEARCH' | 'CREATE' | 'UPDATE' | 'DELETE';

/** SQL boolean expression: may user `$user` (with principals `principals`) do `perm` on the row alias `e`. */
export const allowsSql = (user: string, principals: string, perm: string, e = 'e') =>
  `trellis_allows(${user}, ${principals}, ${perm}, ${e}.id, ${e}.start_id, ${e}.end_id, ${e}.type)`;

/** The subset of `ids` on which `userId` has `permission`. Missing ids are simply absent from the result. */
export async function permittedIds(q: Queryable, userId: string, permission: Permission, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await q.query<{ id: string }>(
    `SELECT e.id FROM elements e, (SELECT trellis_principals($1::uuid) AS ids) p
     WHERE e.id = ANY($3::uuid[]) AND ${allowsSql('$1::uuid', 'p.ids', '$2::text')}`,
    [userId, permission, ids],
    'permitted_ids',
  );
  return new Set(rows.map((r) => r.id));
}

/** Does the user own the element (an OWNS path from the user or one of its groups)? */
export async function owns(q: Queryable, userId: string, id: string): Promise<boolean> {
  const { rows } = await q.query<{ ok: boolean }>(
    `SELECT trellis_granted(trellis_principals($1::uuid), $2::uuid, ARRAY['OWNS']) AS ok`,
    [userId, id],
    'owns',
  );
  return rows[0]?.ok === true;
}
