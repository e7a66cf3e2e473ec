// SQL of resumable uploads. Every statement is short: no transaction stays open while a body streams (PGlite has
// one connection); an append holds a lease column instead of a row lock.
import type { Queryable } from '../db.js';
import { allowsSql } from './access.js';

export interface UploadRow {
  id: string;
  element_id: string | null;
  user_id: string;
  offset: number;
  length: number | null;
  chunks: number;
  extension: string;
  expected_sha256: Buffer | null;
  lease_token: string | null;
  lease_until: Date | null;
  created: Date;
  expires: Date;
  /** The start's preconditions on the target's file, checked again at completion. */
  if_match: string | null;
  if_none_match: string | null;
  /** Which generation of the blob holds the committed bytes (null: the first). */
  generation: string | null;
}

/** The row and whether its creator may still write its target (false also when the target was deleted). */
export type UploadAccess = UploadRow & { permitted: boolean };

const COLUMNS = `u.id, u.element_id, u.user_id, u."offset", u.length, u.chunks, u.extension, u.expected_sha256,
  u.lease_token, u.lease_until, u.created, u.expires, u.if_match, u.if_none_match, u.generation`;

/** Uploads only answer their creator: for anyone else the row does not exist. */
export async function uploadOf(q: Queryable, id: string, userId: string): Promise<UploadAccess | null> {
  const { rows } = await q.query<UploadAccess>(
    `SELECT ${COLUMNS}, COALESCE(${allowsSql('u.user_id', 'trellis_principals(u.user_id)', `'UPDATE'`)}, false) AS permitted
     FROM uploads u LEFT JOIN elements e ON e.id = u.element_id
     WHERE u.id = $1 AND u.user_id = $2`,
    [id, userId],
    'upload_of',
  );
  return rows[0] ?? null;
}

export interface NewUpload {
  id: string;
  elementId: string;
  userId: string;
  length: number | null;
  extension: string;
  expectedSha256: Buffer | null;
  leaseToken: string;
  leaseUntil: Date;
  created: Date;
  expires: Date;
  ifMatch: string | null;
  ifNoneMatch: string | null;
}

export async function insertUpload(q: Queryable, u: NewUpload): Promise<UploadRow> {
  const { rows } = await q.query<UploadRow>(
    `INSERT INTO uploads AS u (id, element_id, user_id, length, extension, expected_sha256, lease_token, lease_until, created, expires,
                               if_match, if_none_match)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
    [
      u.id,
      u.elementId,
      u.userId,
      u.length,
      u.extension,
      u.expectedSha256,
      u.leaseToken,
      u.leaseUntil,
      u.created,
      u.expires,
      u.ifMatch,
      u.ifNoneMatch,
    ],
    'insert_upload',
  );
  return rows[0]!;
}

/** Ends every lease (at the start of the only process that may hold any: embedded PGlite). Returns how many. */
export async function releaseAllLeases(q: Queryable): Promise<number> {
  const { rowCount } = await q.query(
    'UPDATE uploads SET lease_token = NULL, lease_until = NULL WHERE lease_token IS NOT NULL',
    [],
    'release_all_upload_leases',
  );
  return rowCount ?? 0;
}

/**
 * Takes the lease for an append at `offset` when nobody holds it (or the holder's lease ran out). Null when the
 * row is gone, its offset moved, or someone else holds it: the caller reads the row again to tell which.
 * `taken_over`: the lease was taken from a holder whose lease ran out without being given back, which may still
 * be writing.
 */
export async function takeLease(
  q: Queryable,
  id: string,
  userId: string,
  offset: number,
  token: string,
  now: Date,
  until: Date,
): Promise<(UploadRow & { taken_over: boolean }) | null> {
  const { rows } = await q.query<UploadRow & { taken_over: boolean }>(
    `WITH previous AS (
       SELECT id, lease_token FROM uploads
       WHERE id = $1 AND user_id = $2 AND "offset" = $3 AND (lease_until IS NULL OR lease_until <= $5)
       FOR UPDATE)
     UPDATE uploads u SET lease_token = $4, lease_until = $6 FROM previous
     WHERE u.id = previous.id
     RETURNING ${COLUMNS}, previous.lease_token IS NOT NULL AS taken_over`,
    [id, userId, offset, token, now, until],
    'take_upload_lease',
  );
  return rows[0] ?? null;
}

/** Names the generation that holds the upload's bytes from now on, if the caller still holds its lease. */
export async function setGeneration(
  q: Queryable,
  id: string,
  token: string,
  generation: string,
): Promise<UploadRow | null> {
  const { rows } = await q.query<UploadRow>(
    `UPDATE uploads u SET generation = $3 WHERE u.id = $1 AND u.lease_token = $2 RETURNING ${COLUMNS}`,
    [id, token, generation],
    'set_upload_generation',
  );
  return rows[0] ?? null;
}

/** Extends a lease the caller still holds; false when it was lost (taken over, or the upload is gone). */
export async function renewLease(q: Queryable, id: string, token: string, until: Date): Promise<boolean> {
  const { rowCount } = await q.query(
    'UPDATE uploads SET lease_until = $3 WHERE id = $1 AND lease_token = $2',
    [id, token, until],
    'renew_upload_lease',
  );
  return rowCount === 1;
}

/**
 * Records what an append made durable and gives the lease back, if the caller still holds it. `appended` bytes
 * count as one chunk when there are any; `length`, an Upload-Length the request announced, is kept when the upload
 * had none. Null when the lease was lost or the upload is gone.
 */
export async function commitAppend(
  q: Queryable,
  id: string,
  token: string,
  offset: number,
  appended: number,
  length: number | null = null,
): Promise<UploadRow | null> {
  const { rows } = await q.query<UploadRow>(
    `UPDATE uploads u SET "offset" = $3, chunks = u.chunks + CASE WHEN $4::bigint > 0 THEN 1 ELSE 0 END,
       length = COALESCE(u.length, $5::bigint), lease_token = NULL, lease_until = NULL
     WHERE u.id = $1 AND u.lease_token = $2 RETURNING ${COLUMNS}`,
    [id, token, offset, appended, length],
    'commit_upload_append',
  );
  return rows[0] ?? null;
}

/**
 * The stored bytes are being discarded (digest or size violation on completion): back to offset 0 and no chunks,
 * still under the caller's lease (the bytes go next, then the lease). False when the lease was lost.
 */
export async function resetUpload(q: Queryable, id: string, token: string): Promise<boolean> {
  const { rowCount } = await q.query(
    'UPDATE uploads SET "offset" = 0, chunks = 0 WHERE id = $1 AND lease_token = $2',
    [id, token],
    'reset_upload',
  );
  return rowCount === 1;
}

/** Gives a lease back unchanged (nothing was appended, or a completion failed before it committed). */
export async function releaseLease(q: Queryable, id: string, token: string): Promise<void> {
  await q.query(
    'UPDATE uploads SET lease_token = NULL, lease_until = NULL WHERE id = $1 AND lease_token = $2',
    [id, token],
    'release_upload_lease',
  );
}

/** Removes the row of a completing upload inside the transaction that attaches its bytes; false if it is gone. */
export async function deleteLeasedUpload(q: Queryable, id: string, token: string): Promise<boolean> {
  const { rowCount } = await q.query(
    'DELETE FROM uploads WHERE id = $1 AND lease_token = $2',
    [id, token],
    'delete_leased_upload',
  );
  return rowCount === 1;
}

/** Removes an upload whatever its state (cancellation); false when there was none. */
export async function deleteUpload(q: Queryable, id: string, userId?: string): Promise<boolean> {
  const { rowCount } =
    userId === undefined
      ? await q.query('DELETE FROM uploads WHERE id = $1', [id], 'delete_upload')
      : await q.query('DELETE FROM uploads WHERE id = $1 AND user_id = $2', [id, userId], 'delete_own_upload');
  return rowCount === 1;
}

/**
 * Removes up to `limit` uploads that expired before `before`, or whose target was deleted. Rows another
 * instance is removing right now are skipped (SKIP LOCKED), so each row is removed, and reported, once.
 */
export async function deleteExpiredOrOrphaned(
  q: Queryable,
  before: Date,
  limit: number,
): Promise<Array<{ id: string; cancelled: boolean }>> {
  const { rows } = await q.query<{ id: string; cancelled: boolean }>(
    `DELETE FROM uploads WHERE id IN (
       SELECT id FROM uploads WHERE expires <= $1 OR element_id IS NULL
       ORDER BY expires LIMIT $2 FOR UPDATE SKIP LOCKED)
     RETURNING id, element_id IS NULL AS cancelled`,
    [before, limit],
    'delete_expired_uploads',
  );
  return rows;
}

/**
 * One batch of the access check over all uploads (keyset order by id, after `after`): the ids of those whose
 * creator no longer has UPDATE on the target, and the last id looked at (null when there were no more).
 */
export async function uploadsWithoutAccess(
  q: Queryable,
  after: string | null,
  limit: number,
): Promise<{ denied: string[]; last: string | null }> {
  const { rows } = await q.query<{ id: string; permitted: boolean }>(
    `SELECT u.id, COALESCE(${allowsSql('u.user_id', 'trellis_principals(u.user_id)', `'UPDATE'`)}, false) AS permitted
     FROM uploads u JOIN elements e ON e.id = u.element_id
     WHERE ($1::uuid IS NULL OR u.id > $1::uuid)
     ORDER BY u.id LIMIT $2`,
    [after, limit],
    'uploads_access_batch',
  );
  return {
    denied: rows.filter((r) => !r.permitted).map((r) => r.id),
    last: rows.length < limit ? null : rows[rows.length - 1]!.id,
  };
}

/** Removes those of `ids` whose creator still lacks UPDATE (checked again, in the same statement). */
export async function deleteWithoutAccess(q: Queryable, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await q.query<{ id: string }>(
    `DELETE FROM uploads u USING elements e
     WHERE u.id = ANY($1::uuid[]) AND e.id = u.element_id
       AND NOT COALESCE(${allowsSql('u.user_id', 'trellis_principals(u.user_id)', `'UPDATE'`)}, false)
     RETURNING u.id`,
    [ids],
    'delete_uploads_without_access',
  );
  return rows.map((r) => r.id);
}
