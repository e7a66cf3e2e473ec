// The background clean-up of uploads (spec "Resumable upload" state table, last rows; issue: "instances
// coordinate through the database so each upload is cleaned once"): expired uploads past the grace period,
// uploads whose target was deleted or whose creator lost UPDATE, each removed once with its bytes, by the job
// every instance runs; orphaned upload bytes by the startup sweep.
import { Readable } from 'node:stream';
import pino from 'pino';
import { beforeEach, expect, it } from 'vitest';
import { Uploads } from '../../src/domain/uploads/uploads.js';
import { startJobs } from '../../src/jobs.js';
import { sqlTransactions } from '../../src/storage/transactions.js';
import { sqlUploadStore } from '../../src/storage/upload-store.js';
import { newId } from '../../src/values.js';
import { noise } from '../files/fixtures.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';
import { blobOf, startUpload, uploadRow, waitFor } from './helpers.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const LIFETIME = 3600;
const GRACE = 600;
const settings = {
  file: { uploadExpiresInSecondsAfterFirstRequest: LIFETIME, expiredUploadCanBeDeletedAfterExpirationInSeconds: GRACE },
};

describeBackends(
  'resumable uploads: clean-up',
  (h) => {
    let alice: User;
    // The tests move the clock by hours: a fresh user and token for each.
    beforeEach(async () => {
      alice = await userWithToken(h(), `alice-${newId()}@cleanup.dev`);
    });

    async function upload(elementId?: string, token = alice.token) {
      const target = elementId ?? (await createElement(h(), token, { type: 'Doc' }));
      const started = await startUpload(h(), token, target, { body: noise(100, 41) });
      expect(started.res.status).toBe(204);
      return { elementId: target, ...started };
    }

    it('removes expired uploads once the grace period has passed, with their bytes, and nothing else', async () => {
      await h().services.uploads.cleanup(); // start from a clean table
      const old = await upload();
      h().clock.advance(LIFETIME + GRACE - 100);
      const younger = await upload();
      h().clock.advance(101); // old: past the grace; younger: still in progress
      const report = await h().services.uploads.cleanup();
      expect(report).toEqual({ expired: 1, cancelled: 0 });
      expect(await uploadRow(h(), old.id)).toBeNull();
      expect(await blobOf(h(), old.id)).toBeNull();
      expect(await uploadRow(h(), younger.id)).not.toBeNull();
      expect(await blobOf(h(), younger.id)).not.toBeNull();

      // Expired but within the grace period: refused (410) yet kept until the grace has passed.
      h().clock.advance(LIFETIME - 50);
      expect((await h().request('HEAD', younger.path, { token: alice.token })).status).toBe(410);
      expect(await h().services.uploads.cleanup()).toEqual({ expired: 0, cancelled: 0 });
      h().clock.advance(GRACE);
      expect(await h().services.uploads.cleanup()).toEqual({ expired: 1, cancelled: 0 });
      expect(await blobOf(h(), younger.id)).toBeNull();
    });

    it('two instances cleaning at once remove each upload exactly once', async () => {
      await h().services.uploads.cleanup();
      const ids: string[] = [];
      for (let i = 0; i < 24; i++) ids.push((await upload()).id);
      h().clock.advance(LIFETIME + GRACE + 1);
      const { db, settings: s, clock, blobs, elements, files } = { ...h().services, settings: h().config.settings };
      const other = new Uploads(sqlTransactions(db), sqlUploadStore, s, clock, blobs, elements, files); // a second instance on the same database
      const reports = await Promise.all([
        h().services.uploads.cleanup(),
        other.cleanup(),
        h().services.uploads.cleanup(),
      ]);
      expect(reports.reduce((sum, r) => sum + r.expired, 0)).toBe(24);
      for (const id of ids) {
        expect(await uploadRow(h(), id)).toBeNull();
        expect(await blobOf(h(), id)).toBeNull();
      }
    });

    it('cancels uploads whose creator lost UPDATE or whose target was deleted, without any request', async () => {
      await h().services.uploads.cleanup();
      const owned = await createElement(h(), alice.token, { type: 'Doc' });
      const bob = await userWithToken(h(), `bob-${newId()}@cleanup.dev`);
      const grant = await h().request('POST', '/', {
        token: alice.token,
        body: { type: 'HAS_UPDATE_ACCESS', start: bob.id, end: owned },
      });
      const bobs = await upload(owned, bob.token);
      const alices = await upload(owned);
      const doomed = await upload();
      expect((await h().request('DELETE', grant.headers.get('location')!, { token: alice.token })).status).toBe(204);
      expect((await h().request('DELETE', `/${doomed.elementId}`, { token: alice.token })).status).toBe(204);
      expect((await uploadRow(h(), doomed.id))!.element_id).toBeNull(); // the row marks the cancellation
      expect(await h().services.uploads.cleanup()).toEqual({ expired: 0, cancelled: 2 });
      for (const gone of [bobs, doomed]) {
        expect(await uploadRow(h(), gone.id)).toBeNull();
        expect(await blobOf(h(), gone.id)).toBeNull();
      }
      expect(await uploadRow(h(), alices.id)).not.toBeNull();
      expect((await h().request('HEAD', alices.path, { token: alice.token })).status).toBe(204);
    });

    it('the startup sweep removes upload bytes without a row and keeps those of live uploads', async () => {
      const live = await upload();
      const orphan = newId();
      const bytes = Readable.from([Buffer.from('chunk of an upload whose row is gone')]);
      await h().services.blobs.append({ key: orphan, generation: null }, 0, bytes, { maxBytes: 100 });
      await h().services.files.sweep(0);
      expect(await blobOf(h(), orphan)).toBeNull();
      expect(await blobOf(h(), live.id)).not.toBeNull();
    });

    it('runs as a background job of every instance', async () => {
      const old = await upload();
      h().clock.advance(LIFETIME + GRACE + 1);
      const jobs = startJobs(h().services, h().config, pino({ level: 'silent' }));
      try {
        await waitFor('the clean-up job', async () => (await uploadRow(h(), old.id)) === null);
      } finally {
        await jobs.stop();
      }
      expect(await blobOf(h(), old.id)).toBeNull();
    });
  },
  { settings, blobs: true },
);
