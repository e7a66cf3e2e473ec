// SQL of GET /principals: Users and groups by identifier or name, or by id. A group is a node that some element is
// IS_IN_GROUP in (schema/access.ts). Only the id, the type and a string `name` leave the database.
import type { Queryable } from '../db.js';

export interface PrincipalRow {
  id: string;
  type: string;
  name: string | null;
}

/**
 * The columns of an answer row of node `e`: its `name` when a string, except on a User node when `userNames` is
 * false (the instance's unique identifier is the `name` property: a name would be an identifier).
 */
const principalColumns = (userNames: boolean) => `e.id::text AS id, e.type,
  CASE WHEN jsonb_typeof(e.data->'name') = 'string' ${userNames ? '' : `AND e.type <> 'User' `}THEN e.data->>'name' END AS name`;

/**
 * A node that is a principal: a User, or a group (the end of an IS_IN_GROUP; one probe of (end_id, type)). OFFSET 0
 * keeps the probe per row: without it PostgreSQL may hash every IS_IN_GROUP relation once per look-up instead.
 */
const IS_PRINCIPAL = `(e.type = 'User' OR EXISTS (
  SELECT 1 FROM elements r WHERE r.end_id = e.id AND r.type = 'IS_IN_GROUP' OFFSET 0))`;

/**
 * The principals `text` names exactly: the User whose registration identifier it is, compared as log-in compares it
 * (schema/accounts.ts NORMALISED_IDENTIFIERS: the exact spelling, or the normalised key of an account that holds it),
 * and the Users and groups whose `name` is it, trimmed and without case (an index probe: schema/principals.ts).
 */
export async function principalsByText(
  q: Queryable,
  text: string,
  limit: number,
  userNames: boolean,
): Promise<PrincipalRow[]> {
  const { rows } = await q.query<PrincipalRow>(
    `SELECT ${principalColumns(userNames)} FROM elements e
     WHERE e.start_id IS NULL AND e.id IN (
       SELECT u.id FROM users u
       WHERE u.identifier = $1 OR (trellis_identifier_key(u.identifier) = trellis_identifier_key($1) AND NOT u.case_duplicate)
       UNION ALL
       SELECT n.id FROM elements n WHERE n.start_id IS NULL AND lower(btrim(n.data->>'name')) = lower(btrim($1)))
       AND ${IS_PRINCIPAL}
     ORDER BY e.type, lower(e.data->>'name'), e.id
     LIMIT $2`,
    [text, limit],
    `principals_by_text${userNames ? '' : '_hidden'}`,
  );
  return rows;
}

/** Of `ids`, the Users and groups, in the order given. */
export async function principalsById(
  q: Queryable,
  ids: readonly string[],
  userNames: boolean,
): Promise<PrincipalRow[]> {
  const { rows } = await q.query<PrincipalRow>(
    `SELECT ${principalColumns(userNames)} FROM elements e
     WHERE e.id = ANY($1::uuid[]) AND e.start_id IS NULL AND ${IS_PRINCIPAL}
     ORDER BY array_position($1::uuid[], e.id)`,
    [ids],
    `principals_by_id${userNames ? '' : '_hidden'}`,
  );
  return rows;
}
