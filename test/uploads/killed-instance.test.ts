// An instance killed (SIGKILL) in the middle of an append, while the request body is still streaming (issue 34: "an
// instance killed mid-append leaves an upload another instance resumes at HEAD's offset"). The offset moves only by
// bytes that are durable and committed, so HEAD afterwards shows at least the bytes acknowledged and at most the bytes
// sent, and the stored bytes up to it are the ones sent (the draft lets a server keep any part of an interrupted
// append it has stored, and report it through the offset). The upload is resumed there and completed, and nothing of
// the dead append is left once the clean-up and the sweep have run.
//   - the object store: the killed instance and a second one share the PostgreSQL database and the bucket;
//   - the disk store, which is one instance's: the killed instance is restarted on its DATA_DIR (embedded PGlite,
//     whose restart releases the dead process's lease at once; on PostgreSQL it runs out by itself).
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blob/fs-blob-store.js';
import { PART_BYTES } from '../../src/blob/s3-blob-store.js';
import type { Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { noise } from '../files/fixtures.js';
import {
  appendInStore,
  collect,
  type StoreLocation,
  storedNames,
  temporaryBlobs,
  uploadBytes,
} from '../helpers/blobs.js';
import { emptyPrefix, newS3Prefix, objectsUnder, unfinishedUploads } from '../helpers/bucket.js';
import {
  backendsUnderTest,
  blobStoresUnderTest,
  createElement,
  type Harness,
  type ServiceClient,
  s3Settings,
  scratchPostgresDatabase,
  serviceClient,
  startHarness,
  userWithToken,
} from '../helpers/harness.js';
import { type Instance, serveInstance } from '../helpers/process.js';
import { append, head, startUpload, waitFor } from './helpers.js';

const MiB = 1024 * 1024;
const settings = { file: { uploadMinChunkSizeInBytes: MiB, uploadMaxChunkSizeInBytes: 64 * MiB } };
const data = noise(40 * MiB, 34);
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
/** The first chunk and one append, both acknowledged before the kill. */
const FIRST = 6 * MiB;
const SECOND = 7 * MiB;
/**
 * The append the kill interrupts: declared this long, and sent in part. The object store shows a chunk on its way
 * in once its first part is stored, so more than a part is sent.
 */
const DECLARED = 20 * MiB;
const SENT = PART_BYTES + 4 * MiB;

interface Killed {
  path: string;
  id: string;
  /** Bytes of the upload acknowledged before the kill. */
  acked: number;
  /** Bytes of the upload sent before the kill. */
  sent: number;
}

/**
 * Starts an upload of `data` on `a`, appends, then kills `a` during the next append, once part of its body is in
 * `store` (`a`'s) while the rest is still to come.
 */
async function killMidAppend(a: Instance, store: StoreLocation, token: string, elementId: string): Promise<Killed> {
  const c = serviceClient(a.url);
  const started = await startUpload(c, token, elementId, { body: data.subarray(0, FIRST) });
  expect(started.res.status).toBe(204);
  const appended = await append(c, token, started.path, FIRST, data.subarray(FIRST, FIRST + SECOND), false);
  expect(appended.status).toBe(204);
  const acked = FIRST + SECOND;
  const req = http.request(`${a.url}${started.path}`, {
    method: 'PATCH',
    agent: false,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/partial-upload',
      'upload-offset': String(acked),
      'upload-complete': '?0',
      'content-length': String(DECLARED),
    },
  });
  const answered = new Promise<number | null>((resolve) => {
    req.on('response', (res) => resolve(res.statusCode ?? null));
    req.on('error', () => resolve(null));
  });
  const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
  req.write(data.subarray(acked, acked + SENT));
  await waitFor('the append to reach the store', () => appendInStore(store, started.id, acked), 60_000);
  a.kill('SIGKILL');
  await a.done;
  req.destroy();
  await closed;
  expect(await answered).toBeNull(); // the append was never answered
  return { path: started.path, id: started.id, acked, sent: acked + SENT };
}

/**
 * What the next instance sees of the killed upload: HEAD's offset between the bytes acknowledged and the bytes sent,
 * and stored bytes that are the ones sent. Returns the offset.
 */
async function resume(b: ServiceClient, token: string, killed: Killed, stored: () => Promise<Buffer | null>) {
  const state = await head(b, token, killed.path);
  expect(state.status).toBe(204);
  const offset = Number(state.headers.get('upload-offset'));
  expect(offset).toBeGreaterThanOrEqual(killed.acked);
  expect(offset).toBeLessThanOrEqual(killed.sent);
  // What is stored is what was sent, up to the offset at least (on disk, bytes past it are leftovers the next
  // append cuts off).
  const bytes = (await stored())!;
  expect(bytes.length).toBeGreaterThanOrEqual(offset);
  expect(bytes.length).toBeLessThanOrEqual(killed.sent);
  expect(bytes.equals(data.subarray(0, bytes.length))).toBe(true);
  return offset;
}

/** Sends the rest from `offset` on, completing the upload, and checks the file's SHA-256. */
async function complete(b: ServiceClient, token: string, killed: Killed, offset: number, elementId: string) {
  const digest = `sha-256=:${createHash('sha256').update(data).digest('base64')}:`;
  const done = await append(b, token, killed.path, offset, data.subarray(offset), true, { 'repr-digest': digest });
  expect(done.status).toBe(201);
  const file = await fetch(`${b.url}/${elementId}/file`, { headers: { authorization: `Bearer ${token}` } });
  expect(file.status).toBe(200);
  expect(sha(Buffer.from(await file.arrayBuffer()))).toBe(sha(data));
}

const onPostgresAndS3 = backendsUnderTest().includes('postgres') && blobStoresUnderTest().includes('s3');

describe.skipIf(!onPostgresAndS3)('an instance killed mid-append [postgres, s3]', () => {
  let dataDir = '';
  const s3Prefix = newS3Prefix();
  let db: Db | null = null;
  let drop: () => Promise<void> = async () => {};
  let a: Instance | null = null;
  let b: (Harness & { stop(): Promise<void> }) | null = null;

  beforeAll(async () => {
    const scratch = await scratchPostgresDatabase();
    drop = scratch.drop;
    db = await openPostgres(scratch.url, 4);
    await migrate(db);
    const s3 = s3Settings(settings, s3Prefix);
    dataDir = await mkdtemp(join(tmpdir(), 'trellis-killed-'));
    a = await serveInstance(dataDir, s3.settings, {
      DATABASE_URL: scratch.url,
      AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    });
  }, 180_000);

  afterAll(async () => {
    if (a && a.exitCode === null && a.signalCode === null) a.kill('SIGKILL');
    await a?.done;
    await b?.stop();
    await db?.close();
    await drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    await emptyPrefix(`${s3Prefix}/`);
  });

  it("another instance resumes at HEAD's offset, completes, and the sweep removes the dead append's leftovers", async () => {
    const first = serviceClient(a!.url);
    const { token } = await userWithToken(first, 'killed@s3.dev');
    const elementId = await createElement(first, token, { type: 'Doc' });
    const killed = await killMidAppend(a!, { dataDir, s3Prefix }, token, elementId);

    b = await startHarness('postgres', { settings, blobStore: 's3', s3Prefix, db: db! });
    const offset = await resume(b, token, killed, () => uploadBytes(b!, killed.id));
    b.clock.advance(61); // the dead instance's lease runs out
    await complete(b, token, killed, offset, elementId);

    // The dead append's multipart upload went with its generation, which the takeover dropped.
    expect(await unfinishedUploads(`${s3Prefix}/${killed.id}/`)).toEqual([]);
    expect(await b.services.uploads.cleanup()).toEqual({ expired: 0, cancelled: 0 });
    await b.services.files.sweep(0);
    expect(await unfinishedUploads(`${s3Prefix}/`)).toEqual([]);
    expect((await objectsUnder(`${s3Prefix}/`)).map((o) => o.name)).toEqual([
      `${s3Prefix}/${elementId}/f-${sha(data)}`,
    ]);
  }, 180_000);
});

describe.skipIf(!backendsUnderTest().includes('pglite') || !blobStoresUnderTest().includes('disk'))(
  'an instance killed mid-append [pglite]',
  () => {
    let store: StoreLocation = { dataDir: '', s3Prefix: null };
    let instance: Instance | null = null;

    beforeAll(async () => {
      store = { dataDir: await mkdtemp(join(tmpdir(), 'trellis-killed-')), s3Prefix: null };
      instance = await serveInstance(store.dataDir, settings);
    }, 180_000);

    afterAll(async () => {
      if (instance && instance.exitCode === null && instance.signalCode === null) instance.kill('SIGKILL');
      await instance?.done;
      await rm(store.dataDir, { recursive: true, force: true });
    });

    it("restarted on its DATA_DIR, it resumes at HEAD's offset at once and completes, leaving nothing behind", async () => {
      const first = serviceClient(instance!.url);
      const { token } = await userWithToken(first, 'killed@disk.dev');
      const elementId = await createElement(first, token, { type: 'Doc' });
      const killed = await killMidAppend(instance!, store, token, elementId);

      instance = await serveInstance(store.dataDir, settings);
      const again = serviceClient(instance.url);
      const offset = await resume(again, token, killed, async () => {
        const blob = await new FsBlobStore(join(store.dataDir, 'files')).open(killed.id);
        return blob && (await collect(blob.stream));
      });
      await complete(again, token, killed, offset, elementId); // not a 409 for the dead process's lease

      expect(await storedNames(store, killed.id)).toEqual([]);
      expect(await storedNames(store, elementId)).toEqual([elementId]);
      expect(await temporaryBlobs(store)).toEqual([]);
    }, 300_000);
  },
);
