// What the blob store of a harness holds, whichever store it is, so that the file, upload and backup suites assert
// the same things on the disk store and on the object store: the names kept for a key, the temporary blobs, the
// bytes of an element's file and of an upload.
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { inject } from 'vitest';
import type { BlobStore } from '../../src/blob/blob-store.js';
import { createBlobStore } from '../../src/services.js';
import { type Harness, newS3Prefix } from './harness.js';

let shared: { client: S3Client; bucket: string } | null = null;

/** A client of the test bucket. */
export function testBucket(): { client: S3Client; bucket: string } {
  if (shared) return shared;
  const store = inject('s3');
  if (!store) throw new Error('no object store was provided (run npm test with TRELLIS_TEST_BLOBS including s3)');
  const client = new S3Client({
    endpoint: store.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  shared = { client, bucket: store.bucket };
  return shared;
}

/** The names of the objects under `prefix`, with their sizes. */
export async function objectsUnder(prefix: string): Promise<Array<{ name: string; size: number }>> {
  const { client, bucket } = testBucket();
  const found: Array<{ name: string; size: number }> = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const o of page.Contents ?? []) found.push({ name: o.Key!, size: o.Size ?? 0 });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return found;
}

/** Multipart uploads under `prefix` that were neither completed nor aborted. */
export async function unfinishedUploads(prefix: string): Promise<Array<{ name: string; uploadId: string }>> {
  const { client, bucket } = testBucket();
  const page = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
  return (page.Uploads ?? []).map((u) => ({ name: u.Key!, uploadId: u.UploadId! }));
}

/** Removes everything under `prefix`. */
export async function emptyPrefix(prefix: string): Promise<void> {
  const { client, bucket } = testBucket();
  for (const u of await unfinishedUploads(prefix))
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.name, UploadId: u.uploadId }));
  const names = (await objectsUnder(prefix)).map((o) => o.name);
  for (let i = 0; i < names.length; i += 1000)
    await client.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: names.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true },
      }),
    );
}

const filesDir = (h: Harness) => join(h.dataDir, 'files');

/**
 * The names the store keeps for `key`: on disk the entries of its directory that start with it (the key itself,
 * asides), in the bucket the objects under `<prefix>/<key>/` (`f-<sha256>` versions, `c-<offset>` chunks).
 */
export async function storedNames(h: Harness, key: string): Promise<string[]> {
  if (h.s3Prefix === null) {
    const dir = join(filesDir(h), key.slice(0, 2));
    return existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith(key)) : [];
  }
  const base = `${h.s3Prefix}/${key}/`;
  return (await objectsUnder(base)).map((o) => o.name.slice(base.length));
}

/** Temporary blobs: files in files/tmp, or temporary objects and unfinished multipart uploads in the bucket. */
export async function temporaryBlobs(h: Harness): Promise<string[]> {
  if (h.s3Prefix === null) return readdirSync(join(filesDir(h), 'tmp'));
  return [
    ...(await objectsUnder(`${h.s3Prefix}/tmp/`)).map((o) => o.name),
    ...(await unfinishedUploads(`${h.s3Prefix}/`)).map((u) => `${u.name} (unfinished)`),
  ];
}

export async function collect(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** The stored bytes of element `id`'s file (the version its row names), or null when the store has none. */
export async function elementBytes(h: Harness, id: string): Promise<Buffer | null> {
  const { rows } = await h.db.query<{ sha256: string | null; has: boolean }>(
    `SELECT file->'hash'->>'sha256' AS sha256, file IS NOT NULL AS has FROM elements WHERE id = $1`,
    [id],
  );
  const row = rows[0];
  const tag = row?.has ? (row.sha256 ?? 'unhashed') : 'none';
  const blob = await h.services.blobs.open(id, undefined, tag);
  return blob ? await collect(blob.stream) : null;
}

/** The bytes appended under upload `id`, or null when there are none. */
export async function uploadBytes(h: Harness, id: string): Promise<Buffer | null> {
  const blob = await h.services.blobs.open(id);
  return blob ? await collect(blob.stream) : null;
}

/** A second, empty store of the same kind as the harness's (another directory, another prefix). */
export async function otherBlobStore(h: Harness): Promise<{ blobs: BlobStore; dispose(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'trellis-blobs-'));
  const prefix = h.s3Prefix === null ? null : newS3Prefix();
  const file = { ...h.config.settings.file, s3: { ...h.config.settings.file.s3, prefix: prefix ?? '' } };
  const blobs = await createBlobStore({
    settings: { ...h.config.settings, file },
    runtime: { ...h.config.runtime, dataDir },
  });
  return {
    blobs,
    async dispose() {
      await rm(dataDir, { recursive: true, force: true });
      if (prefix !== null) await emptyPrefix(`${prefix}/`);
    },
  };
}

/** What `storedNames` holds for element `id` once nothing is in flight: the one name of the file it has, if any. */
export async function currentNames(h: Harness, id: string): Promise<string[]> {
  const { rows } = await h.db.query<{ sha256: string | null; has: boolean }>(
    `SELECT file->'hash'->>'sha256' AS sha256, file IS NOT NULL AS has FROM elements WHERE id = $1`,
    [id],
  );
  if (!rows[0]?.has) return [];
  return h.s3Prefix === null ? [id] : [`f-${rows[0].sha256 ?? 'unhashed'}`];
}
