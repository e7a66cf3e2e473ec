// The ends of uploads that do not complete: cancellation by the client, leases a crash left behind, and the
// background job that removes expired uploads and those whose creator can no longer write their target.
import { notFound } from '../../errors.js';
import type { Caller } from '../accounts/types.js';
import type { UploadId } from './ports.js';
import type { UploadContext } from './upload-context.js';
import type { CleanupReport } from './upload-requests.js';

/** Rows per statement in the cleanup job. */
const CLEANUP_BATCH = 200;

/**
 * DELETE `/upload/<id>`: removes the upload and its bytes, ending a request still appending to it here. An
 * upload whose creator lost UPDATE on its target was cancelled already: 404, as for anyone else's.
 */
export async function cancelUpload(ctx: UploadContext, caller: Caller, id: UploadId): Promise<void> {
  const upload = await ctx.store.uploadOf(ctx.tx.direct, id, caller.userId);
  if (!upload) throw notFound();
  await ctx.inFlight.preempt(upload.id);
  // A completion that won the race has removed the row (and moved the bytes): then there was nothing to cancel.
  if (!(await ctx.store.deleteUpload(ctx.tx.direct, upload.id))) throw notFound();
  await ctx.dropBytes(upload.id);
  if (!upload.permitted) throw notFound();
}

/**
 * At the start of an embedded server: the leases in the database were held by requests of an earlier process of
 * this DATA_DIR (the datadir lock admits one), which a crash ended. Without this a client resuming after the
 * crash got 409 until the lease ran out. With PostgreSQL another live instance may hold a lease, so there they
 * run out by themselves.
 */
export async function releaseStaleLeases(ctx: UploadContext): Promise<number> {
  return ctx.tx.embedded ? await ctx.store.releaseAllLeases(ctx.tx.direct) : 0;
}

/**
 * The background job (every instance, the design notes' section 1): removes uploads that expired more than the grace
 * period ago and uploads whose target was deleted or whose creator lost UPDATE on it, with their bytes. Rows are
 * deleted by statements that skip rows another instance is deleting, so each upload is removed once.
 */
export async function cleanupUploads(ctx: UploadContext): Promise<CleanupReport> {
  const report: CleanupReport = { expired: 0, cancelled: 0 };
  const graceMs = ctx.settings.file.expiredUploadCanBeDeletedAfterExpirationInSeconds * 1000;
  const before = new Date(ctx.clock.now().getTime() - graceMs);
  for (;;) {
    const rows = await ctx.store.deleteExpiredOrOrphaned(ctx.tx.direct, before, CLEANUP_BATCH);
    for (const row of rows) {
      await ctx.dropBytes(row.id, true);
      report[row.cancelled ? 'cancelled' : 'expired']++;
    }
    if (rows.length < CLEANUP_BATCH) break;
  }
  let after: UploadId | null = null;
  do {
    const batch = await ctx.store.uploadsWithoutAccess(ctx.tx.direct, after, CLEANUP_BATCH);
    for (const id of await ctx.store.deleteWithoutAccess(ctx.tx.direct, batch.denied)) {
      await ctx.dropBytes(id, true);
      report.cancelled++;
    }
    after = batch.last;
  } while (after !== null);
  return report;
}
