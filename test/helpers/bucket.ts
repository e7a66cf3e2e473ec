// The test bucket of the object store the test runner started (scripts/ceph-cluster.ts): a client, a fresh prefix
// per harness, and what a prefix holds.
import { randomBytes } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { inject } from 'vitest';

/** A new prefix in the test bucket. */
export const newS3Prefix = () => `t-${randomBytes(8).toString('hex')}`;

let shared: { client: S3Client; bucket: string } | null = null;

/**
 * The object store of the test run: the one the global setup provides, or for the unit tier (which has no global
 * setup) the one TRELLIS_TEST_S3 names, with the test bucket; null when there is none.
 */
export function testObjectStore(): {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
} | null {
  const provided = inject('s3');
  if (provided) return provided;
  const given = process.env.TRELLIS_TEST_S3;
  if (!given) return null;
  return {
    ...(JSON.parse(given) as { endpoint: string; accessKeyId: string; secretAccessKey: string }),
    bucket: 'trellis-test',
  };
}

/** Creates the test bucket if it is not there (the unit tier's tests run without the global setup that makes it). */
export async function ensureTestBucket(): Promise<void> {
  const { client, bucket } = testBucket();
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    if ((error as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw error;
  }
}

/** A client of the test bucket. */
export function testBucket(): { client: S3Client; bucket: string } {
  if (shared) return shared;
  const store = testObjectStore();
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
