// SQL of elements (nodes and relations).

import type { Credentials } from '../../domain/accounts/types.js';
import type { Permission } from '../../domain/elements/types.js';
import type { FileMeta } from '../../domain/files/types.js';
import {
  type AccessDecision,
  type AccessDecisions,
  decisionKey,
  EPOCH_SQL,
  expiresMsSql,
  whileEpochStands,
  withDecision,
} from '../access-decisions.js';
import type { Queryable } from '../db.js';
import { inlineCheck, inlineReadCheck, principalsSql } from './access.js';
import { callerParams, callerSql } from './accounts.js';
import { elementJsonSql } from './element-json.js';

export interface ElementRow {
  id: string;
  type: string;
  start_id: string | null;
  end_id: string | null;
  data: Record<string, unknown>;
  file: FileMeta | null;
  created: Date;
  updated: Date;
}

export const ELEMENT_COLUMNS = 'e.id, e.type, e.start_id, e.end_id, e.data, e.file, e.created, e.updated';

/** The element's JSON as clients see it, rendered by the database (element-json.ts), as the column `body`. */
const ELEMENT_BODY = `${elementJsonSql('e')} AS body`;

export interface NewElement {
  id: string;
  type: string;
  start?: string | null;
  end?: string | null;
  data: Record<string, unknown>;
  internal?: Record<string, unknown>;
  at: Date;
}

/** Inserts elements; returns false (and inserts nothing of that row) when the id is taken. */
export async function insertElement(q: Queryable, el: NewElement): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO elements (id, type, start_id, end_id, data, internal, created, updated)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (id) DO NOTHING`,
    [el.id, el.type, el.start ?? null, el.end ?? null, el.data, el.internal ?? {}, el.at],
    'insert_element',
  );
  return rowCount === 1;
}

export async function elementById(q: Queryable, id: string, lock = false): Promise<ElementRow | null> {
  const { rows } = await q.query<ElementRow>(
    `SELECT ${ELEMENT_COLUMNS} FROM elements e WHERE e.id = $1${lock ? ' FOR UPDATE' : ''}`,
    [id],
    lock ? 'element_by_id_locked' : 'element_by_id',
  );
  return rows[0] ?? null;
}

/**
 * The element and whether `userId` may do `permission` on it, in one statement, optionally locking the row and
 * rendering it (`body`, for a write that compares ETags under that lock).
 */
export async function elementWithPermission(
  q: Queryable,
  id: string,
  userId: string,
  permission: Permission,
  options: { lock?: boolean; render?: boolean; alsoUpdate?: boolean } = {},
): Promise<{ row: ElementRow & { body?: string }; allowed: boolean; mayUpdate?: boolean } | null> {
  const { lock = false, render = false, alsoUpdate = false } = options;
  const { rows } = await q.query<ElementRow & { body?: string; allowed: boolean; may_update?: boolean }>(
    `SELECT ${ELEMENT_COLUMNS}${render ? `, ${ELEMENT_BODY}` : ''}, ${inlineCheck('$2::uuid', permission)} AS allowed${
      alsoUpdate ? `, ${inlineCheck('$2::uuid', 'UPDATE')} AS may_update` : ''
    }
     FROM elements e WHERE e.id = $1${lock ? ' FOR UPDATE OF e' : ''}`,
    [id, userId],
    `element_with_${permission.toLowerCase()}${lock ? '_locked' : ''}${render ? '_rendered' : ''}${alsoUpdate ? '_and_update' : ''}`,
  );
  const first = rows[0];
  if (!first) return null;
  const { allowed, may_update, ...row } = first;
  return alsoUpdate
    ? { row, allowed: allowed === true, mayUpdate: may_update === true }
    : { row, allowed: allowed === true };
}

/** The element's rendering (element-json.ts), or null when it does not exist. */
export async function elementBodyById(q: Queryable, id: string): Promise<string | null> {
  const { rows } = await q.query<{ body: string }>(
    `SELECT ${ELEMENT_BODY} FROM elements e WHERE e.id = $1`,
    [id],
    'element_body_by_id',
  );
  return rows[0]?.body ?? null;
}

/** Built once per caller variant (the text never changes; rebuilding it per request showed in profiles). */
const readableElementSql = new Map<string, string>();

/** What a reader may also do on the element (the `Allow` of GET /<id>): UPDATE (PUT, PATCH) and DELETE. */
export interface Writes {
  update: boolean;
  delete: boolean;
}

const NO_WRITES: Writes = { update: false, delete: false };

/**
 * SQL: the caller `user`'s UPDATE and DELETE on row `e`, as the columns `may_update` and `may_delete`, reading the
 * lateral `w` of writesJoin. A User node is never deleted through DELETE /<id> (403), so DELETE is not offered on one.
 */
const writesSql = (user: string) =>
  `CASE WHEN e.start_id IS NULL THEN coalesce(w.u, false) ELSE ${inlineCheck(user, 'UPDATE')} END AS may_update,
   e.type <> 'User' AND CASE WHEN e.start_id IS NULL THEN coalesce(w.d, false) ELSE ${inlineCheck(user, 'DELETE')} END AS may_delete`;

/**
 * The node rule of UPDATE and of DELETE (a grant of OWNS or HAS_UPDATE_ACCESS / HAS_DELETE_ACCESS from the caller or
 * its groups on the node or one of its owners: grantedSql of access.ts) for both at once, in one walk of the node's
 * owners: deciding them one by one walked the owners twice more beside READ's walk.
 */
const writesJoin = (user: string) => `LEFT JOIN LATERAL (
    SELECT bool_or(g.type <> 'HAS_DELETE_ACCESS') AS u, bool_or(g.type <> 'HAS_UPDATE_ACCESS') AS d
    FROM (SELECT e.id AS id UNION ALL SELECT o.owner_id FROM element_owners o WHERE o.element_id = e.id) up
    JOIN elements g ON g.end_id = up.id AND g.type IN ('OWNS', 'HAS_UPDATE_ACCESS', 'HAS_DELETE_ACCESS')
    WHERE e.start_id IS NULL AND g.start_id = ANY(${principalsSql(user)})) w ON true`;

/**
 * GET /<id> in one statement: resolves the credentials, reads the element, checks READ and renders it, and decides
 * UPDATE and DELETE (`writes`, for the answer's Allow) in the same statement.
 * `authenticated` is false when the credentials name no user (401); `body` is null when the element is missing or
 * not readable. The database renders the body (docs/decisions/010-json-rendered-by-the-database.md).
 *
 * With `decisions`, a READ these credentials were allowed before is not decided again while the access epoch is
 * the one it was allowed under and the token has not expired (access-decisions.ts): the statement is
 * then the element and the epoch alone, a primary-key lookup (on PGlite the element alone, with the epoch this
 * process was notified of: SessionAccessEpoch); when the epoch has moved, the full statement runs. Both are short
 * reads (Queryable.read: on a PostgreSQL server, pipelined). The writes are remembered with the READ when both were
 * allowed (a permission stays while the epoch stands); a caller without one of them has both decided again in the
 * remembered statement, since a grant added meanwhile does not move the epoch.
 */
export function readableElement(
  q: Queryable,
  credentials: Credentials,
  now: Date,
  id: string,
  decisions?: AccessDecisions,
): Promise<{ authenticated: boolean; body: string | null; writes: Writes }> {
  type Row = { body: string | null; epoch?: string; may_update?: boolean | null; may_delete?: boolean | null };
  const known = (epoch: string, decision: AccessDecision) =>
    whileEpochStands(decisions?.sessionEpoch, epoch, async (readEpoch) => {
      const full = decision.writes?.update === true && decision.writes.delete === true;
      const checks = full ? '' : `, ${writesSql('$2::uuid')}`;
      const join = full ? '' : ` ${writesJoin('$2::uuid')}`;
      const params = full ? [id] : [id, decision.userId];
      const name = full ? '' : '_writes';
      const { rows } = readEpoch
        ? await q.read<Row>(
            `SELECT ${ELEMENT_BODY}, a.epoch::text AS epoch${checks} FROM access_epoch a LEFT JOIN elements e ON e.id = $1::uuid${join}`,
            params,
            `known_readable_element${name}`,
          )
        : await q.read<Row>(
            `SELECT ${ELEMENT_BODY}${checks} FROM elements e${join} WHERE e.id = $1::uuid`,
            params,
            `session_readable_element${name}`,
          );
      const row = rows[0];
      const writes = full ? decision.writes! : { update: row?.may_update === true, delete: row?.may_delete === true };
      return { result: { authenticated: true, body: row?.body ?? null, writes }, epoch: row?.epoch };
    });
  const decide = async () => {
    const caller = callerSql(credentials);
    let text = readableElementSql.get(caller.suffix);
    if (text === undefined) {
      text = `SELECT ${ELEMENT_BODY}, ${inlineReadCheck('caller.user_id')} AS allowed, ${EPOCH_SQL} AS epoch,
           ${expiresMsSql('caller')} AS expires, caller.user_id::text AS user_id, ${writesSql('caller.user_id')}
         FROM (${caller.sql}) caller LEFT JOIN elements e ON e.id = $4::uuid ${writesJoin('caller.user_id')}`;
      readableElementSql.set(caller.suffix, text);
    }
    const { rows } = await q.read<{
      body: string | null;
      allowed: boolean | null;
      epoch: string;
      expires: number | null;
      user_id: string;
      may_update: boolean | null;
      may_delete: boolean | null;
    }>(text, [...callerParams(credentials, now), id], `readable_element${caller.suffix}`);
    const row = rows[0];
    if (!row) return { result: { authenticated: false, body: null, writes: NO_WRITES }, decision: null };
    if (row.allowed !== true) return { result: { authenticated: true, body: null, writes: NO_WRITES }, decision: null };
    const writes = { update: row.may_update === true, delete: row.may_delete === true };
    return {
      result: { authenticated: true, body: row.body, writes },
      decision: { epoch: row.epoch, expires: row.expires, userId: row.user_id, writes },
    };
  };
  return withDecision(decisions, decisionKey(credentials, 'READ', id), now, known, decide);
}

export async function replaceData(q: Queryable, id: string, data: Record<string, unknown>, at: Date): Promise<void> {
  await q.query('UPDATE elements SET data = $2, updated = $3 WHERE id = $1', [id, data, at], 'replace_data');
}

export async function setFile(q: Queryable, id: string, file: FileMeta | null, at: Date): Promise<void> {
  await q.query('UPDATE elements SET file = $2, updated = $3 WHERE id = $1', [id, file, at]);
}

/** Deletes an element; its relations go with it (cascade). Returns the ids of deleted elements that had files. */
export async function deleteElement(q: Queryable, id: string): Promise<string[]> {
  // Collect the files of the element and of every relation attached to it (transitively) before the cascade.
  const { rows } = await q.query<{ id: string }>(
    `WITH RECURSIVE gone(id) AS (
       SELECT $1::uuid
       UNION
       SELECT r.id FROM elements r JOIN gone g ON r.start_id = g.id OR r.end_id = g.id
     )
     SELECT e.id FROM elements e JOIN gone g ON g.id = e.id WHERE e.file IS NOT NULL`,
    [id],
  );
  await q.query('DELETE FROM elements WHERE id = $1', [id], 'delete_element');
  return rows.map((r) => r.id);
}

export async function elementTypes(q: Queryable): Promise<{ nodeTypes: string[]; relationTypes: string[] }> {
  // Loose index scan over (type, is-node): cost grows with the number of distinct types, not of elements.
  const { rows } = await q.query<{ type: string; is_node: boolean }>(
    `WITH RECURSIVE t(type, is_node) AS (
       (SELECT type, start_id IS NULL FROM elements ORDER BY type, start_id IS NULL LIMIT 1)
       UNION ALL
       SELECT n.type, n.is_node FROM t, LATERAL (
         SELECT e.type, e.start_id IS NULL AS is_node FROM elements e
         WHERE (e.type, e.start_id IS NULL) > (t.type, t.is_node)
         ORDER BY e.type, e.start_id IS NULL LIMIT 1) n
     )
     SELECT type, is_node FROM t`,
  );
  const visible = rows.filter((r) => !r.type.startsWith('_'));
  return {
    nodeTypes: visible
      .filter((r) => r.is_node)
      .map((r) => r.type)
      .sort(),
    relationTypes: visible
      .filter((r) => !r.is_node)
      .map((r) => r.type)
      .sort(),
  };
}

/**
 * POST / and POST /<parent> of a node in one statement (autocommit, so atomic): resolves the credentials, checks
 * CREATE on the parent (a node: a relation has no children), inserts the node, its OWNS (from the parent, else from the caller) and its CREATED relation.
 * The access index trigger (schema/access.ts) records the new node's owners at the end of the statement; the node's
 * search keys (its parent, the parent's owners and its creator) are written with it, so that the
 * keys trigger finds nothing to add (updating the fresh row would write it and its search index entries twice).
 * Returns what failed, in the order the endpoint reports it: no caller (401), parent missing or not permitted (404), id taken.
 */
export async function insertNodeAs(
  q: Queryable,
  credentials: Credentials,
  now: Date,
  node: {
    id: string;
    type: string;
    data: Record<string, unknown>;
    parentId: string | null;
    ownsId: string;
    createdId: string;
  },
): Promise<{ authenticated: boolean; allowed: boolean; inserted: boolean }> {
  const caller = callerSql(credentials);
  const { rows } = await q.query<{ authenticated: boolean; allowed: boolean; inserted: boolean }>(
    `WITH caller AS MATERIALIZED (${caller.sql}),
     owner AS MATERIALIZED (
       SELECT caller.user_id AS creator, COALESCE(p.id, caller.user_id) AS owner_id
       FROM caller LEFT JOIN elements p ON p.id = $4::uuid
       WHERE $4::uuid IS NULL
          OR (p.start_id IS NULL AND ${inlineCheck('caller.user_id', 'CREATE', 'p')})
     ),
     node AS (
       INSERT INTO elements (id, type, data, created, updated, access_keys)
       SELECT $5::uuid, $6::text, $7::jsonb, $2::timestamptz, $2::timestamptz,
              ARRAY[owner.owner_id, owner.creator] || ARRAY(SELECT o.owner_id FROM element_owners o WHERE o.element_id = owner.owner_id)
       FROM owner
       ON CONFLICT (id) DO NOTHING
       RETURNING id, access_keys
     ),
     rels AS (
       INSERT INTO elements (id, type, start_id, end_id, data, created, updated, access_keys)
       SELECT r.id, r.type, r.start_id, node.id, '{}'::jsonb, $2::timestamptz, $2::timestamptz, node.access_keys || node.id
       FROM node, owner, LATERAL (VALUES ($8::uuid, 'OWNS', owner.owner_id), ($9::uuid, 'CREATED', owner.creator)) r(id, type, start_id)
       RETURNING id
     )
     SELECT EXISTS (SELECT 1 FROM caller) AS authenticated, EXISTS (SELECT 1 FROM owner) AS allowed,
            EXISTS (SELECT 1 FROM node) AND (SELECT count(*) FROM rels) = 2 AS inserted`,
    [...callerParams(credentials, now), node.parentId, node.id, node.type, node.data, node.ownsId, node.createdId],
    `insert_node_as${caller.suffix}`,
  );
  return rows[0]!;
}

/**
 * PATCH/PUT without preconditions in one statement: resolves the credentials, checks UPDATE and changes the data
 * under the row lock the UPDATE takes (a concurrent change is merged into, not overwritten: READ COMMITTED
 * re-evaluates the row). `set` holds the properties to write, `remove` the keys to drop (merge); a replace keeps the
 * keys of `keep` (per type: properties clients cannot set) from the stored data. With `decisions`, an UPDATE these
 * credentials were allowed before under the current access epoch is not decided again (access-decisions.ts): the
 * statement is the UPDATE alone, made only if the epoch has not moved; otherwise the full statement runs.
 */
export async function updateDataAs(
  q: Queryable,
  credentials: Credentials,
  now: Date,
  change: {
    id: string;
    mode: 'replace' | 'merge';
    set: Record<string, unknown>;
    remove: string[];
    keep: Record<string, string[]>;
    limits: [number, number];
  },
  decisions?: AccessDecisions,
): Promise<{ authenticated: boolean; updated: boolean }> {
  const values = [change.mode, change.set, change.remove, change.keep, ...change.limits];
  const known = async (epoch: string) => {
    // The UPDATE alone, made only if the epoch is still the one the decision was made under.
    const { rows } = await q.query(
      `UPDATE elements u SET data = ${newDataSql('$4', '$5', '$6', '$7', '$8', '$9')}, updated = $2::timestamptz
       WHERE u.id = $1::uuid AND ${EPOCH_SQL} = $3::text
       RETURNING u.id`,
      [change.id, now.toISOString(), epoch, ...values],
      'known_update_data',
    );
    return rows.length === 1 ? { authenticated: true, updated: true } : undefined;
  };
  const decide = async () => {
    const caller = callerSql(credentials);
    const { rows } = await q.query<{ authenticated: boolean; updated: boolean; epoch: string; expires: number | null }>(
      `WITH caller AS MATERIALIZED (${caller.sql}),
       target AS MATERIALIZED (
         SELECT e.id FROM caller, elements e
         WHERE e.id = $4::uuid AND ${inlineCheck('caller.user_id', 'UPDATE')}
       ),
       upd AS (
         UPDATE elements u SET data = ${newDataSql('$5', '$6', '$7', '$8', '$9', '$10')}, updated = $2::timestamptz
         FROM target WHERE u.id = target.id
         RETURNING u.id
       )
       SELECT EXISTS (SELECT 1 FROM caller) AS authenticated, EXISTS (SELECT 1 FROM upd) AS updated,
         ${EPOCH_SQL} AS epoch, (SELECT ${expiresMsSql('c')} FROM caller c) AS expires`,
      [...callerParams(credentials, now), change.id, ...values],
      `update_data_as${caller.suffix}`,
    );
    const { authenticated, updated, epoch, expires } = rows[0]!;
    return { result: { authenticated, updated }, decision: updated ? { epoch, expires } : null };
  };
  return withDecision(decisions, decisionKey(credentials, 'UPDATE', change.id), now, known, decide);
}

/**
 * The new `data` of row `u` for a PATCH (merge) or PUT (replace), from the parameters holding the change. A merge is
 * checked against the element limits `maxBytes` and `maxValues` (trellis_checked_data): only here is its result known.
 */
const newDataSql = (
  mode: string,
  set: string,
  remove: string,
  keep: string,
  maxBytes: string,
  maxValues: string,
) => `CASE WHEN ${mode}::text = 'merge'
         THEN trellis_checked_data((u.data - ${remove}::text[]) || ${set}::jsonb, ${maxBytes}::int, ${maxValues}::int)
         ELSE ${set}::jsonb || COALESCE((
           SELECT jsonb_object_agg(kv.key, kv.value) FROM jsonb_each(u.data) kv
           WHERE kv.key IN (SELECT jsonb_array_elements_text(COALESCE(${keep}::jsonb -> u.type, ${keep}::jsonb -> '*')))), '{}'::jsonb)
         END`;
