// SQL of backup:create and backup:load. Bulk writes pass a whole batch as one JSON array parameter and expand it
// with json_to_recordset: one statement and one round trip per batch, the same on PostgreSQL and PGlite.

import type { FileMeta } from '../../domain/files/types.js';
import type { Queryable } from '../db.js';

export interface BackupElementRow {
  id: string;
  type: string;
  start_id: string | null;
  end_id: string | null;
  data: Record<string, unknown>;
  internal: Record<string, unknown>;
  file: FileMeta | null;
  /** ISO 8601 strings; PostgreSQL parses them (keeping sub-second precision and offsets). */
  created: string;
  updated: string;
}

export interface BackupUserRow {
  id: string;
  identifier: string;
  password_hash: string | null;
}

export interface BackupTokenRow {
  id: string;
  hash: string;
  user_id: string;
  state: 'ACTIVE' | 'REVOKED';
  issued: string;
  expires: string | null;
}

export async function isDatabaseEmpty(q: Queryable): Promise<boolean> {
  const { rows } = await q.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM elements) AS any');
  return !rows[0]!.any;
}

export async function insertElementRows(q: Queryable, rows: readonly BackupElementRow[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO elements (id, type, start_id, end_id, data, internal, file, created, updated)
     SELECT id, type, start_id, end_id, data, internal, file, created, updated
     FROM json_to_recordset($1::json) AS r(id uuid, type text, start_id uuid, end_id uuid, data jsonb, internal jsonb,
                                           file jsonb, created timestamptz, updated timestamptz)`,
    [JSON.stringify(rows)],
    'backup_insert_elements',
  );
}

/**
 * A backup may hold two spellings of one identifier (Unicode NFC, e-mail addresses also without case; it may come
 * from an earlier Trellis, or from the reference implementation): the first user (already stored, else the smallest
 * id) keeps the identifier for every spelling and the others are case_duplicate, logging in with their exact spelling.
 */
export async function insertUserRows(q: Queryable, rows: readonly BackupUserRow[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO users (id, identifier, password_hash, case_duplicate)
     SELECT id, identifier, password_hash,
            row_number() OVER (PARTITION BY trellis_identifier_key(identifier) ORDER BY id) > 1
            OR EXISTS (SELECT 1 FROM users u WHERE trellis_identifier_key(u.identifier) = trellis_identifier_key(r.identifier)
                         AND NOT u.case_duplicate)
     FROM json_to_recordset($1::json) AS r(id uuid, identifier text, password_hash text)`,
    [JSON.stringify(rows)],
    'backup_insert_users',
  );
}

export async function insertTokenRows(q: Queryable, rows: readonly BackupTokenRow[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO tokens (id, hash, user_id, state, issued, expires)
     SELECT id, hash, user_id, state, issued, expires
     FROM json_to_recordset($1::json) AS r(id uuid, hash text, user_id uuid, state text, issued timestamptz, expires timestamptz)`,
    [JSON.stringify(rows)],
    'backup_insert_tokens',
  );
}

/**
 * Keeps the hashes of loaded tokens that get no tokens row (no single owning user: they never authenticate) with
 * their element's internal properties, which no response shows and backup:create writes back into `data`.
 */
export async function keepUnboundTokenHashes(
  q: Queryable,
  rows: ReadonlyArray<{ id: string; hash: string }>,
): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `UPDATE elements e SET internal = e.internal || jsonb_build_object('hash', r.hash)
     FROM json_to_recordset($1::json) AS r(id uuid, hash text) WHERE e.id = r.id`,
    [JSON.stringify(rows)],
    'backup_keep_token_hashes',
  );
}

/** Which of these ids are elements already, with their type and kind (for loading into a non-empty database). */
export async function existingElements(
  q: Queryable,
  ids: readonly string[],
): Promise<Map<string, { type: string; isNode: boolean }>> {
  const found = new Map<string, { type: string; isNode: boolean }>();
  if (ids.length === 0) return found;
  const { rows } = await q.query<{ id: string; type: string; is_node: boolean }>(
    'SELECT id, type, start_id IS NULL AS is_node FROM elements WHERE id = ANY($1::uuid[])',
    [ids],
  );
  for (const r of rows) found.set(r.id, { type: r.type, isNode: r.is_node });
  return found;
}

/** Which of these ids have a users row (a User that can own tokens). */
export async function existingUsers(q: Queryable, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await q.query<{ id: string }>('SELECT id FROM users WHERE id = ANY($1::uuid[])', [ids]);
  return new Set(rows.map((r) => r.id));
}

export async function takenIdentifiers(q: Queryable, identifiers: readonly string[]): Promise<Set<string>> {
  if (identifiers.length === 0) return new Set();
  const { rows } = await q.query<{ identifier: string }>(
    'SELECT identifier FROM users WHERE identifier = ANY($1::text[])',
    [identifiers],
  );
  return new Set(rows.map((r) => r.identifier));
}

export async function takenTokenHashes(q: Queryable, hashes: readonly string[]): Promise<Set<string>> {
  if (hashes.length === 0) return new Set();
  const { rows } = await q.query<{ hash: string }>('SELECT hash FROM tokens WHERE hash = ANY($1::text[])', [hashes]);
  return new Set(rows.map((r) => r.hash));
}

/** Starts the snapshot that backup:create reads everything from. Must be the first statement of the transaction. */
export async function beginSnapshot(q: Queryable): Promise<void> {
  await q.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
}

export async function countElements(q: Queryable): Promise<{ nodes: number; relations: number }> {
  const { rows } = await q.query<{ nodes: number; relations: number }>(
    'SELECT count(*) FILTER (WHERE start_id IS NULL) AS nodes, count(*) FILTER (WHERE start_id IS NOT NULL) AS relations FROM elements',
  );
  return rows[0]!;
}

export interface DumpRow extends Omit<BackupElementRow, 'created' | 'updated'> {
  created: Date;
  updated: Date;
  password_hash: string | null;
  token_hash: string | null;
  token_state: 'ACTIVE' | 'REVOKED' | null;
  token_expires: Date | null;
}

/** The next `limit` elements after `after` in id order (keyset pagination), with their user and token rows. */
export async function dumpPage(q: Queryable, after: string | null, limit: number): Promise<DumpRow[]> {
  // Two statements rather than `$1 IS NULL OR e.id > $1`, so that the prepared plan is a plain primary-key range scan.
  const select = `SELECT e.id, e.type, e.start_id, e.end_id, e.data, e.internal, e.file, e.created, e.updated,
            u.password_hash, t.hash AS token_hash, t.state AS token_state, t.expires AS token_expires
     FROM elements e LEFT JOIN users u ON u.id = e.id LEFT JOIN tokens t ON t.id = e.id`;
  const { rows } =
    after === null
      ? await q.query<DumpRow>(`${select} ORDER BY e.id LIMIT $1`, [limit], 'backup_dump_first')
      : await q.query<DumpRow>(
          `${select} WHERE e.id > $1::uuid ORDER BY e.id LIMIT $2`,
          [after, limit],
          'backup_dump_next',
        );
  return rows;
}
