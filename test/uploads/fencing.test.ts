// A writer that lost its lease never touches what counts (issue 41, item 1), on both databases and both blob stores:
// a request of another instance (its own in-flight registry, the same database and store) holds the lease and stalls
// past it, this instance takes the upload over and commits, then the late request wakes up and writes. Its bytes land
// in a generation nothing names, its commit is refused, and the file is exactly what the client committed. And a
// completion answers with what the store holds, read back: a digest the stored bytes do not match is refused.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { beforeAll, expect, it } from 'vitest';
import { Problem } from '../../src/errors.js';
import { parseElementId } from '../../src/values.js';
import { noise, reprDigest } from '../files/fixtures.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { anotherInstance, append, leftovers, startUpload, uploadRow, waitFor } from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const KiB = 1024;
const settings = {
  file: { maxFileSizeInBytes: 4 * 1024 * KiB, uploadMinChunkSizeInBytes: KiB, uploadMaxChunkSizeInBytes: 1024 * KiB },
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describeBackends(
  'resumable uploads: a writer that lost its lease',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@fencing.dev');
    });

    async function download(elementId: string) {
      const res = await fetch(`${h().url}/${elementId}/file`, { headers: { authorization: `Bearer ${alice.token}` } });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    }

    it('writes where nothing refers to it: the file is what the client committed through the instance that took over', async () => {
      const data = noise(300 * KiB, 4101);
      const stale = noise(200 * KiB, 4102); // what the stalled request carries: not the bytes the client committed
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      const { path, id } = await startUpload(h(), alice.token, elementId, { body: data.subarray(0, KiB) });

      // The other instance's request: a first part of its body, then nothing until the test lets it go on.
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      async function* stalled() {
        yield stale.subarray(0, 64 * KiB);
        await woken;
        yield stale.subarray(64 * KiB, 128 * KiB);
      }
      const late = anotherInstance(h())
        .append(
          { userId: alice.id, tokenId: null },
          parseElementId(id)!,
          stalled(),
          { complete: false, offset: KiB, length: null, contentLength: 128 * KiB, expected: null },
          { abort: () => {} },
        )
        .then(
          (result) => result,
          (error: unknown) => error,
        );
      await waitFor(
        'the stalled request to hold the lease',
        async () => (await uploadRow(h(), id))?.lease_token !== null,
      );

      h().clock.advance(61); // its lease runs out while it still holds it
      const taken = await append(h(), alice.token, path, KiB, data.subarray(KiB, 100 * KiB), false);
      expect(taken.status).toBe(204);
      expect(taken.headers.get('upload-offset')).toBe(String(100 * KiB));

      wake(); // the late request writes the rest of its body, and tries to commit
      const outcome = await late;
      expect(outcome).toBeInstanceOf(Problem);
      expect((outcome as Problem).status).toBe(409);
      expect((await uploadRow(h(), id))?.offset).toBe(100 * KiB);

      const done = await append(h(), alice.token, path, 100 * KiB, data.subarray(100 * KiB), true, {
        'repr-digest': reprDigest(data),
      });
      expect(done.status).toBe(201);
      const file = await download(elementId);
      expect(file.status).toBe(200);
      expect(sha(file.body)).toBe(sha(data));
      const element = await h().request('GET', `/${elementId}`, { token: alice.token });
      expect(element.json.file).toMatchObject({ contentLength: data.length, hash: { sha256: sha(data) } });
      await h().services.blobs.settled();
      await h().services.files.sweep(0);
      expect(await leftovers(h(), id, elementId)).toEqual([]);
    });

    it('a completion reads the stored bytes back: a digest they do not match is refused, and nothing is placed', async () => {
      const data = noise(200 * KiB, 4103);
      const elementId = await createElement(h(), alice.token, { type: 'Doc' });
      const { path, id } = await startUpload(h(), alice.token, elementId, { body: data.subarray(0, 100 * KiB) });
      // The stored bytes change behind the service's back (a store that lost or altered them), keeping their length.
      const altered = Buffer.from(data.subarray(0, 100 * KiB));
      altered[5000] = altered[5000]! ^ 0xff;
      await h().services.blobs.append({ key: id, generation: null }, 0, Readable.from([altered]), {
        maxBytes: altered.length,
      });

      const refused = await append(h(), alice.token, path, 100 * KiB, data.subarray(100 * KiB), true, {
        'repr-digest': reprDigest(data),
      });
      expect(refused.status).toBe(400);
      expect(refused.json.type).toMatch(/\/error\/400\/bad-content$/);
      expect(refused.headers.get('upload-offset')).toBe('0');
      expect((await download(elementId)).status).toBe(404);
      expect((await uploadRow(h(), id))?.offset).toBe(0);

      // Without a digest from the client, the file is recorded with the digest of what is stored.
      const again = await startUpload(h(), alice.token, elementId, { body: data.subarray(0, 100 * KiB) });
      await h().services.blobs.append({ key: again.id, generation: null }, 0, Readable.from([altered]), {
        maxBytes: altered.length,
      });
      const stored = Buffer.concat([altered, data.subarray(100 * KiB)]);
      const done = await append(h(), alice.token, again.path, 100 * KiB, data.subarray(100 * KiB), true);
      expect(done.status).toBe(201);
      const file = await download(elementId);
      expect(sha(file.body)).toBe(sha(stored));
      const element = await h().request('GET', `/${elementId}`, { token: alice.token });
      expect(element.json.file).toMatchObject({ contentLength: stored.length, hash: { sha256: sha(stored) } });
    });
  },
  { settings, blobs: true },
);
