// The UploadStore port (domain/uploads/ports.ts) in SQL: storage/queries/uploads.ts, its rows in the domain's terms.
import type { Upload, UploadAccess, UploadStore } from '../domain/uploads/ports.js';
import { storedElementId } from '../values.js';
import * as sql from './queries/uploads.js';
import { queryable } from './transactions.js';

function uploadOf(row: sql.UploadRow): Upload {
  return {
    id: storedElementId(row.id),
    elementId: row.element_id === null ? null : storedElementId(row.element_id),
    userId: row.user_id,
    offset: row.offset,
    length: row.length,
    chunks: row.chunks,
    extension: row.extension,
    expectedSha256: row.expected_sha256,
    leaseToken: row.lease_token,
    leaseUntil: row.lease_until,
    created: row.created,
    expires: row.expires,
    ifMatch: row.if_match,
    ifNoneMatch: row.if_none_match,
    generation: row.generation,
  };
}

const orNull = (row: sql.UploadRow | null): Upload | null => (row === null ? null : uploadOf(row));

export const sqlUploadStore: UploadStore = {
  async uploadOf(tx, id, userId): Promise<UploadAccess | null> {
    const row = await sql.uploadOf(queryable(tx), id, userId);
    return row === null ? null : { ...uploadOf(row), permitted: row.permitted };
  },
  insertUpload: async (tx, upload) => uploadOf(await sql.insertUpload(queryable(tx), upload)),
  releaseAllLeases: (tx) => sql.releaseAllLeases(queryable(tx)),
  async takeLease(tx, id, userId, offset, token, now, until) {
    const row = await sql.takeLease(queryable(tx), id, userId, offset, token, now, until);
    return row === null ? null : { ...uploadOf(row), takenOver: row.taken_over };
  },
  setGeneration: async (tx, id, token, generation) =>
    orNull(await sql.setGeneration(queryable(tx), id, token, generation)),
  renewLease: (tx, id, token, until) => sql.renewLease(queryable(tx), id, token, until),
  commitAppend: async (tx, id, token, offset, appended, length) =>
    orNull(await sql.commitAppend(queryable(tx), id, token, offset, appended, length)),
  resetUpload: (tx, id, token) => sql.resetUpload(queryable(tx), id, token),
  releaseLease: (tx, id, token) => sql.releaseLease(queryable(tx), id, token),
  deleteLeasedUpload: (tx, id, token) => sql.deleteLeasedUpload(queryable(tx), id, token),
  deleteUpload: (tx, id) => sql.deleteUpload(queryable(tx), id),
  async deleteExpiredOrOrphaned(tx, before, limit) {
    const rows = await sql.deleteExpiredOrOrphaned(queryable(tx), before, limit);
    return rows.map((r) => ({ id: storedElementId(r.id), cancelled: r.cancelled }));
  },
  async uploadsWithoutAccess(tx, after, limit) {
    const { denied, last } = await sql.uploadsWithoutAccess(queryable(tx), after, limit);
    return { denied: denied.map(storedElementId), last: last === null ? null : storedElementId(last) };
  },
  deleteWithoutAccess: async (tx, ids) => (await sql.deleteWithoutAccess(queryable(tx), ids)).map(storedElementId),
};
