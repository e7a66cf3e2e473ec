// What the blob store of a harness holds, whichever store it is, so that the file, upload and backup suites assert
// the same things on the disk store and on the object store: the names kept for a key, the temporary blobs, the
// bytes of an element's file and of an upload.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { inject } from 'vitest';
import type { BlobStore } from '../../src/blob/blob-store.js';
import { createBlobStore } from '../../src/services.js';
import { emptyPrefix, newS3Prefix, objectsUnder, testBucket, unfinishedUploads } from './bucket.js';
import type { Harness } from './harness.js';

/** Where a service keeps its blobs: a harness, or a service in a child process (its DATA_DIR and prefix). */
export type StoreLocation = Pick<Harness, 'dataDir' | 's3Prefix'>;

const filesDir = (h: StoreLocation) => join(h.dataDir, 'files');

/**
 * The names the store keeps for `key`: on disk the entries of its directory that start with it (the key itself,
 * asides), in the bucket the objects under `<prefix>/<key>/` (`f-<sha256>` versions, `c-<offset>` chunks).
 */
export async function storedNames(h: StoreLocation, key: string): Promise<string[]> {
  if (h.s3Prefix === null) {
    const dir = join(filesDir(h), key.slice(0, 2));
    return existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith(key)) : [];
  }
  const base = `${h.s3Prefix}/${key}/`;
  return (await objectsUnder(base)).map((o) => o.name.slice(base.length));
}

/**
 * Whether the store already holds part of an append to upload `key` at `offset` whose body is still arriving. On
 * disk the upload's file grows past `offset`. In the bucket an append is one object, which a body shorter than one
 * part (the store's PART_BYTES) becomes only once it ends; a longer one is a multipart upload of that object whose
 * first part is stored while the rest arrives.
 */
export async function appendInStore(h: StoreLocation, key: string, offset: number): Promise<boolean> {
  if (h.s3Prefix === null) {
    const path = join(filesDir(h), key.slice(0, 2), key);
    return existsSync(path) && statSync(path).size > offset;
  }
  const { client, bucket } = testBucket();
  for (const u of await unfinishedUploads(`${h.s3Prefix}/${key}/c-`)) {
    const parts = await client.send(new ListPartsCommand({ Bucket: bucket, Key: u.name, UploadId: u.uploadId }));
    if ((parts.Parts ?? []).length > 0) return true;
  }
  return false;
}

/** Temporary blobs: files in files/tmp, or temporary objects and unfinished multipart uploads in the bucket. */
export async function temporaryBlobs(h: StoreLocation): Promise<string[]> {
  if (h.s3Prefix === null) return readdirSync(join(filesDir(h), 'tmp'));
  return [
    ...(await objectsUnder(`${h.s3Prefix}/tmp/`)).map((o) => o.name),
    ...(await unfinishedUploads(`${h.s3Prefix}/`)).map((u) => `${u.name} (unfinished)`),
  ];
}

/**
 * Puts `bytes` under `name` in the store behind the service's back (on disk below DATA_DIR/files, in the bucket
 * below the prefix): what another program, or a crash of the service itself, left there.
 */
export async function plant(h: StoreLocation, name: string, bytes: Buffer | string): Promise<void> {
  if (h.s3Prefix === null) {
    const path = join(filesDir(h), name);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
    return;
  }
  const { client, bucket } = testBucket();
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: `${h.s3Prefix}/${name}`, Body: bytes }));
}

/** The bytes under `name` (see `plant`), or null when there are none. */
export async function planted(h: StoreLocation, name: string): Promise<Buffer | null> {
  if (h.s3Prefix === null) return existsSync(join(filesDir(h), name)) ? await readFile(join(filesDir(h), name)) : null;
  const { client, bucket } = testBucket();
  try {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${h.s3Prefix}/${name}` }));
    return Buffer.from(await out.Body!.transformToByteArray());
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return null;
    throw error;
  }
}

/** A multipart upload of object `name` below the prefix, with one part, that nobody completes or aborts. */
export async function plantUnfinishedUpload(h: StoreLocation, name: string): Promise<void> {
  if (h.s3Prefix === null) throw new Error("multipart uploads are the object store's");
  const { client, bucket } = testBucket();
  const Key = `${h.s3Prefix}/${name}`;
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key }));
  await client.send(new UploadPartCommand({ Bucket: bucket, Key, UploadId, PartNumber: 1, Body: 'a part' }));
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

/** The bytes appended under upload `id` (the generation its row names), or null when there are none. */
export async function uploadBytes(h: Harness, id: string): Promise<Buffer | null> {
  const { rows } = await h.db.query<{ generation: string | null }>('SELECT generation FROM uploads WHERE id = $1', [
    id,
  ]);
  const blob = await h.services.blobs.openUpload({ key: id, generation: rows[0]?.generation ?? null });
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

/** See `storeRelay`. */
export interface StoreRelay {
  /** The endpoint to give a service instead of the store's. */
  endpoint: string;
  /** Ends every connection the relay carries, as a store or a network that drops them would. */
  cut(): void;
  /** From now on the store seems to stop answering: bytes either way are swallowed, connections stay open. */
  stall(): void;
  /** Ends a stall: the connections that went silent are cut, new ones work again. */
  restore(): void;
  close(): Promise<void>;
}

/** A TCP relay in this process to the test object store, through which a service's requests to it go. */
export async function storeRelay(): Promise<StoreRelay> {
  const store = inject('s3');
  if (!store) throw new Error('no object store was provided (run npm test with TRELLIS_TEST_BLOBS including s3)');
  const target = new URL(store.endpoint);
  const open = new Set<Socket>();
  let silent = false;
  const server = createServer((incoming) => {
    const outgoing = connect(Number(target.port), target.hostname);
    for (const [from, to] of [
      [incoming, outgoing],
      [outgoing, incoming],
    ] as const) {
      open.add(from);
      from.on('data', (chunk) => {
        if (silent) return;
        if (!to.write(chunk)) {
          from.pause();
          to.once('drain', () => from.resume());
        }
      });
      from.on('end', () => to.end());
      from.on('error', () => to.destroy());
      from.on('close', () => {
        open.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const cut = () => {
    for (const socket of open) socket.destroy();
  };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    cut,
    stall() {
      silent = true;
    },
    restore() {
      silent = false;
      cut();
    },
    async close() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
