// An instance frozen (SIGSTOP) in the middle of an append, past its lease, while the client goes on through another
// instance on the same PostgreSQL and the same store (issue 41, item 1): the bucket, and a disk store both instances
// share. The frozen instance is the real CLI in a child process; it is continued (SIGCONT) after the other instance
// took the upload over and committed (between two appends), or after the upload completed. Either way its late bytes
// never reach the file: the completion answers 201 with the bytes the client sent through the other instance, every
// later GET serves exactly those, and nothing of the late append is left once the sweep has run.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { noise, reprDigest } from '../files/fixtures.js';
import { appendInStore, type StoreLocation } from '../helpers/blobs.js';
import { emptyPrefix, newS3Prefix } from '../helpers/bucket.js';
import {
  type BlobStoreName,
  backendsUnderTest,
  blobStoresUnderTest,
  createElement,
  type Harness,
  s3Settings,
  scratchPostgresDatabase,
  serviceClient,
  startHarness,
  userWithToken,
} from '../helpers/harness.js';
import { type Instance, serveInstance } from '../helpers/process.js';
import { append, head, leftovers, startUpload, uploadRow, waitFor } from './helpers.js';

const MiB = 1024 * 1024;
const settings = { file: { uploadMinChunkSizeInBytes: 64 * 1024, uploadMaxChunkSizeInBytes: 32 * MiB } };
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const FIRST = MiB;
const SECOND = 7 * MiB;
/** The frozen append: declared this long, sent in part (more than one part of the object store, so it is stored). */
const DECLARED = 10 * MiB;
const SENT = 6 * MiB;

for (const store of ['disk', 's3'] as BlobStoreName[]) {
  const runs = backendsUnderTest().includes('postgres') && blobStoresUnderTest().includes(store);
  describe.skipIf(!runs)(`an instance frozen mid-append past its lease [postgres, ${store}]`, () => {
    const s3Prefix = store === 's3' ? newS3Prefix() : null;
    let db: Db | null = null;
    let drop: () => Promise<void> = async () => {};
    let a: Instance | null = null;
    let b: (Harness & { stop(): Promise<void> }) | null = null;
    let ownDir = '';
    let token = '';

    beforeAll(async () => {
      const scratch = await scratchPostgresDatabase();
      drop = scratch.drop;
      db = await openPostgres(scratch.url, 4);
      await migrate(db);
      b = await startHarness('postgres', { settings, blobStore: store, ...(s3Prefix ? { s3Prefix } : {}), db });
      if (s3Prefix) {
        const s3 = s3Settings(settings, s3Prefix);
        ownDir = await mkdtemp(join(tmpdir(), 'trellis-frozen-'));
        a = await serveInstance(ownDir, s3.settings, {
          DATABASE_URL: scratch.url,
          AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
          AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
        });
      } else {
        // The disk store several instances share: the other instance's DATA_DIR, so the same files folder.
        a = await serveInstance(b.dataDir, settings, { DATABASE_URL: scratch.url });
      }
      token = (await userWithToken(b, `frozen-${store}@frozen.dev`)).token;
    }, 180_000);

    afterAll(async () => {
      if (a && a.exitCode === null && a.signalCode === null) {
        a.kill('SIGCONT');
        a.kill('SIGKILL');
      }
      await a?.done;
      await b?.stop();
      await db?.close();
      await drop();
      if (ownDir) await rm(ownDir, { recursive: true, force: true });
      if (s3Prefix) await emptyPrefix(`${s3Prefix}/`);
    });

    for (const when of ['between two appends', 'after the completion'] as const) {
      it(`continued ${when}: the file is exactly what the client committed, the late bytes are nowhere`, async () => {
        const data = noise(FIRST + SECOND + 2 * MiB, when.length);
        const stale = noise(SENT, when.length + 1); // a body the client gave up on: not the bytes it committed
        const other = serviceClient(a!.url);
        const elementId = await createElement(b!, token, { type: 'Doc' });
        const started = await startUpload(b!, token, elementId, { body: data.subarray(0, FIRST) });
        expect(started.res.status).toBe(204);

        // An append through the instance to be frozen, once part of its body is in the store.
        const req = http.request(`${a!.url}${started.path}`, {
          method: 'PATCH',
          agent: false,
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/partial-upload',
            'upload-offset': String(FIRST),
            'upload-complete': '?0',
            'content-length': String(DECLARED),
          },
        });
        req.on('error', () => {});
        const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
        req.write(stale);
        const location: StoreLocation = { dataDir: b!.dataDir, s3Prefix: s3Prefix ?? null };
        await waitFor('the append to reach the store', () => appendInStore(location, started.id, FIRST), 60_000);
        a!.kill('SIGSTOP');
        let continued = false;
        const resume = () => {
          if (continued) return;
          continued = true;
          req.destroy(); // the client gave up on the frozen instance
          a!.kill('SIGCONT');
        };
        try {
          b!.clock.advance(61); // the frozen instance's lease runs out while it still holds it
          const second = await append(b!, token, started.path, FIRST, data.subarray(FIRST, FIRST + SECOND), false);
          expect(second.status).toBe(204);
          if (when === 'between two appends') {
            resume();
            await closed;
            // Its HEAD waits until its own late request is over (written and refused): the offset did not move.
            const state = await head(other, token, started.path);
            expect(state.status).toBe(204);
            expect(state.headers.get('upload-offset')).toBe(String(FIRST + SECOND));
          }
          const done = await append(b!, token, started.path, FIRST + SECOND, data.subarray(FIRST + SECOND), true, {
            'repr-digest': reprDigest(data),
          });
          expect(done.status).toBe(201);
        } finally {
          resume();
        }
        await closed;
        if (when === 'after the completion') {
          // The late request ends once it has written what it had and found its lease gone.
          await waitFor('the late request to end', async () => (await uploadRow(b!, started.id)) === null, 30_000);
          await new Promise((resolve) => setTimeout(resolve, 2_000));
        }
        for (const through of [b!.url, a!.url]) {
          const res = await fetch(`${through}/${elementId}/file`, { headers: { authorization: `Bearer ${token}` } });
          expect(res.status).toBe(200);
          expect(sha(Buffer.from(await res.arrayBuffer()))).toBe(sha(data));
        }
        await b!.services.blobs.settled();
        await b!.services.files.sweep(0);
        expect(await leftovers(b!, started.id, elementId)).toEqual([]);
      }, 180_000);
    }
  });
}
