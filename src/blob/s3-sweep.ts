// The sweep of the S3 store (BlobStore.sweep): unfinished multipart uploads, temporary objects, chunks of no upload
// and file versions the database does not name, each once older than the grace.
import type { SweepPolicy, SweepReport } from './blob-store.js';
import type { S3Bucket } from './s3-bucket.js';

const ENTRY = /^([A-Za-z0-9_-]{2,128})\/(?:f-([A-Za-z0-9]{1,128})|(?:g-[A-Za-z0-9_-]{2,128}\/)?c-(\d{15}))$/;
/** Keys per sweep batch (one query to the database each). */
const SWEEP_BATCH = 500;

/** The objects of one key: its file versions by tag, its upload's chunks, and when the newest chunk was written. */
type Entry = { files: Array<{ name: string; tag: string; modified?: Date }>; chunks: string[]; newest: number };

/** One sweep: the policy, the report it fills, and whether a thing written `at` is past the grace. */
interface Sweep {
  bucket: S3Bucket;
  policy: SweepPolicy;
  report: SweepReport;
  settled(at: Date | undefined): boolean;
}

/** Sweeps the objects under `prefix`. */
export async function sweepBucket(bucket: S3Bucket, prefix: string, policy: SweepPolicy): Promise<SweepReport> {
  const report: SweepReport = { temporary: 0, orphans: 0, restored: 0, dropped: 0 };
  const now = Date.now();
  const settled = (at: Date | undefined) =>
    policy.graceMs <= 0 || (at !== undefined && now - at.getTime() >= policy.graceMs);
  const sweep: Sweep = { bucket, policy, report, settled };

  // Unfinished multipart uploads first: an instance died in the middle of one (the grace spares live ones).
  for await (const u of bucket.unfinished(prefix)) {
    if (!settled(u.initiated)) continue;
    await bucket.abortUpload(u.name, u.uploadId);
    report.temporary++;
  }

  let batch = new Map<string, Entry>();
  const temporary: string[] = [];
  for await (const o of bucket.list(prefix)) {
    const rest = o.name.slice(prefix.length);
    if (rest.startsWith('tmp/')) {
      if (settled(o.modified)) temporary.push(o.name);
      continue;
    }
    const match = ENTRY.exec(rest);
    if (!match) continue; // not written by this service: left alone
    const [, key, tag, offset] = match as unknown as [string, string, string | undefined, string | undefined];
    if (!batch.has(key) && batch.size >= SWEEP_BATCH) {
      await settleBatch(sweep, batch);
      batch = new Map();
    }
    const entry = batch.get(key) ?? { files: [], chunks: [], newest: 0 };
    batch.set(key, entry);
    if (tag !== undefined) entry.files.push({ name: o.name, tag, ...(o.modified ? { modified: o.modified } : {}) });
    if (offset !== undefined) {
      entry.chunks.push(o.name);
      entry.newest = Math.max(entry.newest, o.modified?.getTime() ?? now);
    }
  }
  await settleBatch(sweep, batch);
  await bucket.remove(temporary);
  report.temporary += temporary.length;
  return report;
}

/** Removes the chunks no upload wants and the file versions the database does not name, of one batch of keys. */
async function settleBatch({ bucket, policy, report, settled }: Sweep, entries: Map<string, Entry>): Promise<void> {
  const keys = [...entries.keys()];
  const chunked = keys.filter((k) => entries.get(k)!.chunks.length > 0);
  const wanted = await policy.wanted(chunked);
  const orphans: string[] = [];
  for (const key of chunked) {
    const e = entries.get(key)!;
    if (wanted.has(key) || !settled(new Date(e.newest))) continue;
    orphans.push(...e.chunks);
    report.orphans++;
  }
  await bucket.remove(orphans);
  const filed = keys.filter((k) => entries.get(k)!.files.length > 0);
  const tags = await policy.tags(filed);
  for (const key of filed) {
    const current = tags.get(key);
    const stale = entries.get(key)!.files.filter((f) => f.tag !== current && settled(f.modified));
    if (stale.length === 0) continue;
    // Confirmed under the element's row lock: a replacement between its copy and its commit holds it.
    await policy.settleAside(key, async (locked) => {
      const gone = stale.filter((f) => f.tag !== locked);
      await bucket.remove(gone.map((f) => f.name));
      report.dropped += gone.length;
    });
  }
}
