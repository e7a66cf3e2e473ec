// SQL of element files: the shared lock a download holds while it opens the bytes, and what the blob store's
// startup sweep asks the database.
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

/** The file metadata of those of `ids` that have a file. */
export async function fileHashes(q: Queryable, ids: readonly string[]): Promise<Map<string, string | null>> {
  if (ids.length === 0) return new Map();
  const { rows } = await q.query<{ id: string; sha256: string | null }>(
    `SELECT id::text AS id, file->'hash'->>'sha256' AS sha256 FROM elements WHERE id = ANY($1::uuid[]) AND file IS NOT NULL`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.sha256]));
}
