// The sweep of the blob store against the database (at startup and periodically), on the disk store and on the
// object store: leftovers of crashes are cleaned up (temporary blobs, bytes no upload or element refers to, unfinished
// multipart uploads), replacements a crash interrupted are settled by what the database committed, and everything
// referenced survives. The crashes are made with the store's own operations, stopped where a dying instance stops
// (a replacement that is never settled, a temporary blob that is never discarded).
import { Readable } from 'node:stream';
import { beforeAll, expect, it } from 'vitest';
import type { Replacement } from '../../src/blob/blob-store.js';
import { newId } from '../../src/values.js';
import {
  currentNames,
  elementBytes,
  plant,
  planted,
  plantUnfinishedUpload,
  storedNames,
  temporaryBlobs,
  uploadBytes,
} from '../helpers/blobs.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { waitFor } from '../uploads/helpers.js';
import { sha256 } from './fixtures.js';

const tagOf = (text: string) => sha256(Buffer.from(text)).toString('hex');
const source = (text: string) => Readable.from([Buffer.from(text)]);
const nothing = { temporary: 0, orphans: 0, restored: 0, dropped: 0 };

describeBackends(
  'element files: sweep',
  (h) => {
    let token: string;
    let userId: string;
    beforeAll(async () => {
      ({ token, id: userId } = await userWithToken(h(), 'sweep@files.dev'));
    });
    const onS3 = () => h().s3Prefix !== null;

    async function withFile(text: string): Promise<string> {
      const id = await createElement(h(), token, { type: 'Doc' });
      const res = await h().request('POST', `/${id}/file`, {
        token,
        raw: new TextEncoder().encode(text),
        headers: { 'upload-complete': '?1' },
      });
      expect(res.status).toBe(201);
      return id;
    }

    /** The store's part of replacing the bytes of `id` (`next` null: removing them), not settled: a crash. */
    async function replaced(id: string, previous: string, next: string | null): Promise<Replacement> {
      const { blobs } = h().services;
      const temp = next === null ? null : await blobs.write(source(next), { maxBytes: 1000 });
      const replacement = await blobs.replace(id, temp, {
        previous: tagOf(previous),
        next: next ? tagOf(next) : 'none',
      });
      if (temp) await blobs.discard(temp); // the temporary blob is the first test's own case
      return replacement;
    }

    /** The database's part: the element's row now describes `text` (null: no file). */
    async function commit(id: string, text: string | null): Promise<void> {
      if (text === null) await h().db.query('UPDATE elements SET file = NULL WHERE id = $1', [id]);
      else
        await h().db.query(
          `UPDATE elements SET file = jsonb_set(jsonb_set(file, '{hash,sha256}', to_jsonb($2::text)),
             '{contentLength}', to_jsonb($3::int)) WHERE id = $1`,
          [id, tagOf(text), Buffer.byteLength(text)],
        );
    }

    it('removes temporary and unreferenced bytes, settles interrupted replacements, keeps what is referenced', async () => {
      const { blobs } = h().services;
      // A direct upload whose instance died before it was placed.
      await blobs.write(source('partial upload'), { maxBytes: 100 });
      // The bytes of an upload whose row is gone, and the file of an element that is gone (a crash between deleting
      // the row and its bytes).
      const orphanUpload = newId();
      await blobs.append({ key: orphanUpload, generation: null }, 0, source('nobody wants me'), { maxBytes: 100 });
      const orphanFile = newId();
      const orphanTemp = await blobs.write(source('element gone'), { maxBytes: 100 });
      await (await blobs.replace(orphanFile, orphanTemp, { previous: 'none', next: tagOf('element gone') })).finish();
      await blobs.discard(orphanTemp);

      // An upload's bytes are referenced by its row.
      const target = await createElement(h(), token, { type: 'Doc' });
      const uploadId = newId();
      const now = new Date();
      await h().db.query(
        'INSERT INTO uploads (id, element_id, user_id, created, expires) VALUES ($1, $2, $3, $4, $4)',
        [uploadId, target, userId, now],
      );
      await blobs.append({ key: uploadId, generation: null }, 0, source('first chunk'), { maxBytes: 100 });
      // A multipart upload an instance died in the middle of, even one under a live upload's name.
      if (onS3()) await plantUnfinishedUpload(h(), `${uploadId}/c-000000000000011`);

      // Replacements and removals whose instance died before its transaction ended, committed or not.
      const notCommitted = await withFile('old bytes A');
      await replaced(notCommitted, 'old bytes A', 'new bytes A, never committed');
      const committed = await withFile('old bytes B');
      await replaced(committed, 'old bytes B', 'new bytes B');
      await commit(committed, 'new bytes B');
      const removed = await withFile('gone');
      await replaced(removed, 'gone', null);
      await commit(removed, null);
      const removalNotCommitted = await withFile('still here');
      await replaced(removalNotCommitted, 'still here', null);

      // Something the service did not write: left alone.
      await plant(h(), 'ab/README', 'not ours');
      const untouched = await withFile('plain file');

      const report = await h().services.files.sweep(0);
      // On disk a replacement sets the previous bytes aside, to be put back or dropped; in the bucket each version
      // has a name of its own, and the ones the row does not name are dropped (an element that is gone names none).
      expect(report).toEqual(
        onS3()
          ? { temporary: 2, orphans: 1, restored: 0, dropped: 4 }
          : { temporary: 1, orphans: 2, restored: 2, dropped: 2 },
      );

      expect(await temporaryBlobs(h())).toEqual([]);
      for (const gone of [orphanUpload, orphanFile, removed]) expect(await storedNames(h(), gone)).toEqual([]);
      expect((await uploadBytes(h(), uploadId))?.toString()).toBe('first chunk');
      const kept: Array<[string, string]> = [
        [notCommitted, 'old bytes A'],
        [committed, 'new bytes B'],
        [removalNotCommitted, 'still here'],
        [untouched, 'plain file'],
      ];
      for (const [id, text] of kept) {
        expect(await storedNames(h(), id)).toEqual(await currentNames(h(), id));
        expect((await elementBytes(h(), id))?.toString()).toBe(text);
      }
      expect((await planted(h(), 'ab/README'))?.toString()).toBe('not ours');
      // Downloads agree with the metadata afterwards.
      const got = await h().request('GET', `/${notCommitted}/file`, { token });
      expect(got.text).toBe('old bytes A');
    });

    it('leaves recent leftovers alone when a grace period applies (instances sharing the store)', async () => {
      const { blobs } = h().services;
      await blobs.write(source('someone is uploading'), { maxBytes: 100 });
      const orphan = newId();
      await blobs.append({ key: orphan, generation: null }, 0, source('just stored by another instance'), {
        maxBytes: 100,
      });
      if (onS3()) await plantUnfinishedUpload(h(), `${orphan}/c-000000000000031`);
      expect(await h().services.files.sweep(3600_000)).toEqual(nothing);
      expect(await temporaryBlobs(h())).toHaveLength(onS3() ? 2 : 1);
      expect((await uploadBytes(h(), orphan))?.toString()).toBe('just stored by another instance');
      await h().services.files.sweep(0);
      expect(await temporaryBlobs(h())).toEqual([]);
      expect(await storedNames(h(), orphan)).toEqual([]);
    });

    it("serves a crash's replacement's committed bytes at once, and waits for one in progress under the row lock", async () => {
      // A crash between the replacement and the commit, a moment ago. On disk the uncommitted bytes are under the
      // element's name until the aside is settled, so no grace applies to asides; in the bucket the row names the
      // committed version, and the other one waits for the grace like any leftover.
      const crashed = await withFile('committed bytes');
      await replaced(crashed, 'committed bytes', 'uncommitted bytes!');
      expect(await h().services.files.sweep(3600_000)).toEqual(onS3() ? nothing : { ...nothing, restored: 1 });
      const got = await h().request('GET', `/${crashed}/file`, { token });
      expect(got.status).toBe(200);
      expect(got.text).toBe('committed bytes');
      expect(got.headers.get('repr-digest')).toBe(
        `sha-256=:${sha256(Buffer.from('committed bytes')).toString('base64')}:`,
      );
      await h().services.files.sweep(0);
      expect(await storedNames(h(), crashed)).toEqual(await currentNames(h(), crashed));

      // A replacement in progress holds the element's row lock from before it touches the store until its commit:
      // the sweep waits for it and then sees the committed state, so it never removes (or, on disk, puts back)
      // bytes of a live replacement.
      const live = await withFile('before');
      const inProgress: { replacement?: Replacement } = {};
      let swept: Promise<unknown> | null = null;
      let sweepDone = false;
      await h().db.transaction(async (tx) => {
        await tx.query('SELECT 1 FROM elements WHERE id = $1 FOR UPDATE', [live]);
        inProgress.replacement = await replaced(live, 'before', 'after!');
        swept = h()
          .services.files.sweep(0)
          .then((r) => {
            sweepDone = true;
            return r;
          });
        if (h().backend === 'postgres')
          await waitFor(
            'the sweep to wait for the row lock',
            async () =>
              (
                await h().db.query<{ n: number }>(
                  `SELECT count(*)::int AS n FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'`,
                )
              ).rows[0]!.n > 0,
          );
        // PGlite is one session, which this transaction holds: the sweep cannot even read the rows before it ends.
        else await new Promise((resolve) => setTimeout(resolve, 300));
        expect(sweepDone).toBe(false);
        await tx.query(
          `UPDATE elements SET file = jsonb_set(file, '{hash,sha256}', to_jsonb($2::text)) WHERE id = $1`,
          [live, tagOf('after!')],
        );
      });
      // On disk the sweep drops the aside. In the bucket the sweep saw the old version named by the row on
      // PostgreSQL, found the new one named once it had the lock, and left the old one to the replacement's finish;
      // on PGlite it saw the committed row from the start, and dropped the old version itself.
      expect(await swept).toEqual({ ...nothing, dropped: onS3() && h().backend === 'postgres' ? 0 : 1 });
      await inProgress.replacement!.finish();
      expect(await storedNames(h(), live)).toEqual(await currentNames(h(), live));
      expect((await h().request('GET', `/${live}/file`, { token })).text).toBe('after!');
    });
  },
  { blobs: true },
);
