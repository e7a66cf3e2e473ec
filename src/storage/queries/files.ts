// SQL of element files: the shared lock a download holds while it opens the bytes, and what the blob store's
// sweep asks the database.
import type { Queryable } from '../db.js';

/**
 * Locks the element row against writers (FOR SHARE) until the transaction ends. Writers rename file bytes while
 * holding the row's FOR UPDATE lock, so under this lock the metadata read next and the bytes opened next belong
 * together.
 */
export async function lockForDownload(q: Queryable, id: string): Promise<void> {
  await q.query('SELECT 1 FROM elements WHERE id = $1 FOR SHARE', [id], 'file_lock_for_download');
}

/** Of `keys` (UUIDs), those whose blob is referenced: an element that has a file, or an upload. */
export async function referencedBlobKeys(q: Queryable, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const { rows } = await q.query<{ id: string }>(
    `SELECT id::text AS id FROM elements WHERE id = ANY($1::uuid[]) AND file IS NOT NULL
     UNION
     SELECT id::text FROM uploads WHERE id = ANY($1::uuid[])`,
    [keys],
  );
  return new Set(rows.map((r) => r.id));
}

/**
 * Takes the element's row lock (FOR UPDATE, waiting for a writer that holds it: file replacements are short) and
 * returns its file's SHA-256 (null for a file stored without one), or undefined when the element or its file is
 * gone. The sweep settles a replacement's leftovers under it (the blob stores' sweep).
 */
export async function lockFileForSweep(q: Queryable, id: string): Promise<{ sha256: string | null } | undefined> {
  const { rows } = await q.query<{ sha256: string | null; has_file: boolean }>(
    `SELECT file->'hash'->>'sha256' AS sha256, file IS NOT NULL AS has_file FROM elements WHERE id = $1 FOR UPDATE`,
    [id],
    'file_lock_for_sweep',
  );
  const row = rows[0];
  return row?.has_file ? { sha256: row.sha256 } : undefined;
}

/** Of `keys` (UUIDs), the elements that have a file, with its SHA-256 (null for a file stored without one). */
export async function fileTags(q: Queryable, keys: readonly string[]): Promise<Map<string, string | null>> {
  if (keys.length === 0) return new Map();
  const { rows } = await q.query<{ id: string; sha256: string | null }>(
    `SELECT id::text AS id, file->'hash'->>'sha256' AS sha256 FROM elements
     WHERE id = ANY($1::uuid[]) AND file IS NOT NULL`,
    [keys],
  );
  return new Map(rows.map((r) => [r.id, r.sha256]));
}
