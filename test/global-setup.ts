// Vitest global setup: decides which database backends and blob stores the tests run against, and where the
// PostgreSQL server and the object store are.
//
//   TRELLIS_TEST_BACKENDS  comma list of "pglite" and/or "postgres" (default both)
//   TRELLIS_TEST_BLOBS     comma list of "disk" and/or "s3" (default both): the blob stores of the suites that
//                          declare them (test/helpers/harness.ts, `blobs: true`)
//   TRELLIS_TEST_PG_URL    server for the "postgres" backend; set by `npm test`.
//                          When missing (plain `npx vitest`), a throw-away
//                          cluster is started here and stopped in teardown.
//   TRELLIS_TEST_S3        the object store for "s3" (JSON: endpoint, accessKeyId, secretAccessKey); set by
//                          `npm test`, started here when missing, like the PostgreSQL cluster.
//
// Tests read the result with inject('pgUrl') / inject('backends') / inject('blobStores') / inject('s3').

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { type ObjectStore, type PgCluster, startCluster, startObjectStore } from '../bench/lib/cluster.js';
import { build } from '../scripts/build.js';
import { makePgliteImages, type PgliteImages } from './helpers/pglite-images.js';

/** Where the "s3" blob store's tests keep their objects: one bucket, a prefix per suite. */
export interface TestObjectStore {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string | null;
    backends: string[];
    blobStores: string[];
    s3: TestObjectStore | null;
  }
}

const TEST_BUCKET = 'trellis-test';

const list = (value: string | undefined, fallback: string) =>
  (value ?? fallback)
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const backends = list(process.env.TRELLIS_TEST_BACKENDS, 'pglite,postgres');
  const unknown = backends.filter((b) => b !== 'pglite' && b !== 'postgres');
  if (unknown.length > 0) {
    throw new Error(
      `TRELLIS_TEST_BACKENDS: unknown backend(s) ${unknown.join(', ')} (expected pglite and/or postgres)`,
    );
  }
  const blobStores = list(process.env.TRELLIS_TEST_BLOBS, 'disk,s3');
  const unknownStores = blobStores.filter((b) => b !== 'disk' && b !== 's3');
  if (unknownStores.length > 0)
    throw new Error(`TRELLIS_TEST_BLOBS: unknown blob store(s) ${unknownStores.join(', ')} (expected disk and/or s3)`);

  // Suites spawn the CLI as installed (bin/trellis.js runs dist/): what changed in src/ since the last build is
  // compiled first, and the template of a new embedded database made when missing.
  await build();

  const stops: Array<() => Promise<void>> = [];
  let pgUrl: string | null = null;
  if (backends.includes('postgres')) {
    pgUrl = process.env.TRELLIS_TEST_PG_URL || null;
    if (!pgUrl) {
      const cluster: PgCluster = await startCluster((msg) => process.stderr.write(`[global-setup] ${msg}\n`));
      pgUrl = cluster.url;
      // Test files forked by vitest inherit this environment as well.
      process.env.TRELLIS_TEST_PG_URL = pgUrl;
      stops.push(() => cluster.stop());
    }
  }

  let s3: TestObjectStore | null = null;
  if (blobStores.includes('s3')) {
    let given = process.env.TRELLIS_TEST_S3
      ? (JSON.parse(process.env.TRELLIS_TEST_S3) as Omit<TestObjectStore, 'bucket'>)
      : null;
    if (!given) {
      const store: ObjectStore = await startObjectStore((msg) => process.stderr.write(`[global-setup] ${msg}\n`));
      given = { endpoint: store.endpoint, accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
      process.env.TRELLIS_TEST_S3 = JSON.stringify(given);
      stops.push(() => store.stop());
    }
    s3 = { ...given, bucket: TEST_BUCKET };
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    try {
      await client.send(new CreateBucketCommand({ Bucket: TEST_BUCKET }));
    } catch (error) {
      if ((error as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw error;
    } finally {
      client.destroy();
    }
  }

  let pgliteImages: PgliteImages | null = null;
  if (backends.includes('pglite')) {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-test-images-'));
    stops.push(() => rm(dir, { recursive: true, force: true }));
    pgliteImages = await makePgliteImages(dir);
  }

  project.provide('pgliteImages', pgliteImages);
  project.provide('pgUrl', pgUrl);
  project.provide('backends', backends);
  project.provide('blobStores', blobStores);
  project.provide('s3', s3);

  if (stops.length === 0) return undefined;
  return async () => {
    for (const stop of stops) await stop();
  };
}
