// The embedded database's autovacuum (src/storage/maintenance.ts): autovacuum's decisions from PostgreSQL's own
// per-table statistics, so that rows rewritten again and again do not grow the table. The function runs on both
// backends (autovacuum is switched off for `elements` here, so that the server's own cannot get there first); the
// job runs only on PGlite.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { startJobs } from '../../src/jobs.js';
import type { Db } from '../../src/storage/db.js';
import { ANALYZE_STATISTICS_TARGET, checkpointIfDue, maintainEmbedded } from '../../src/storage/maintenance.js';
import { openPglite } from '../../src/storage/pglite.js';
import { backendsUnderTest, describeBackends, freshDatabase } from '../helpers/harness.js';

const ROWS = 1200;

async function addNodes(db: Db, n: number): Promise<void> {
  await db.query(
    `INSERT INTO elements (id, type, data, created, updated)
     SELECT gen_random_uuid(), 'Note', jsonb_build_object('title', 'note ' || g, 'n', g), now(), now() FROM generate_series(1, $1::int) g`,
    [n],
  );
}

const rewriteAll = (db: Db) =>
  db.query(`UPDATE elements SET data = data || jsonb_build_object('n', (data->>'n')::int + 1) WHERE type = 'Note'`);

async function elementsStats(db: Db) {
  await db.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await db.query<{ dead: number; vacuumed: boolean; analyzed: boolean; size: number; tuples: number }>(
    `SELECT s.n_dead_tup::int AS dead, s.last_vacuum IS NOT NULL AS vacuumed, s.last_analyze IS NOT NULL AS analyzed,
            pg_relation_size('elements')::int AS size, c.reltuples::int AS tuples
     FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'elements'`,
  );
  return rows[0]!;
}

for (const backend of backendsUnderTest()) {
  describe(`embedded database maintenance [${backend}]`, () => {
    it("vacuums and analyses a table when autovacuum's thresholds say so, and only then", async () => {
      const { db, dispose } = await freshDatabase(backend);
      try {
        await db.query('ALTER TABLE elements SET (autovacuum_enabled = false)');
        await addNodes(db, ROWS);
        // 1,200 inserted rows: past the insert threshold (1,000) and the analyze threshold (50) of a new table.
        const first = await maintainEmbedded(db);
        expect(first.vacuumed).toContain('public.elements');
        expect(first.analyzed).toContain('public.elements');
        expect(first.database).toBe(false);
        const after = await elementsStats(db);
        expect(after).toMatchObject({ vacuumed: true, analyzed: true, dead: 0 });
        expect(after.tuples).toBeGreaterThanOrEqual(ROWS);
        // Analysed at the job's statistics target (a histogram of target + 1 bounds over 1,200 distinct ids, where
        // PostgreSQL's default would keep 101), and only for that ANALYZE: the session's target is the default again.
        const {
          rows: [ids],
        } = await db.query<{ bounds: number }>(
          `SELECT array_length(histogram_bounds::text::uuid[], 1) AS bounds FROM pg_stats WHERE tablename = 'elements' AND attname = 'id'`,
        );
        expect(ids!.bounds).toBe(ANALYZE_STATISTICS_TARGET + 1);
        expect(
          (await db.query<{ t: string }>(`SELECT current_setting('default_statistics_target') AS t`)).rows[0]!.t,
        ).toBe('100');
        // Nothing changed since: nothing to do for elements.
        const second = await maintainEmbedded(db);
        expect([...second.vacuumed, ...second.analyzed]).not.toContain('public.elements');
        // 200 rewritten rows stay under 50 + 20% of 1,200 dead rows (290), but pass the analyze threshold (50 + 10%: 170).
        await db.query(
          `UPDATE elements SET updated = now() WHERE id IN (SELECT id FROM elements WHERE type = 'Note' LIMIT 200)`,
        );
        const third = await maintainEmbedded(db);
        expect(third.vacuumed).not.toContain('public.elements');
        expect(third.analyzed).toContain('public.elements');
        await rewriteAll(db);
        const fourth = await maintainEmbedded(db);
        expect(fourth.vacuumed).toContain('public.elements');
        expect((await elementsStats(db)).dead).toBe(0);
      } finally {
        await dispose();
      }
    });

    it('keeps a table whose rows are rewritten over and over at its size, where it grows without', async () => {
      const grown = async (maintain: boolean) => {
        const { db, dispose } = await freshDatabase(backend);
        try {
          await db.query('ALTER TABLE elements SET (autovacuum_enabled = false)');
          await addNodes(db, ROWS);
          await maintainEmbedded(db);
          const start = (await elementsStats(db)).size;
          for (let round = 0; round < 6; round++) {
            await rewriteAll(db);
            if (maintain) await maintainEmbedded(db);
          }
          return (await elementsStats(db)).size / start;
        } finally {
          await dispose();
        }
      };
      // Each rewrite leaves one dead version of every row: six of them more than double the table without a VACUUM;
      // with one after every rewrite, the space is reused.
      // Measured: 6.8 x without, 2.0 x with (two versions of every row: the one being replaced and the new one).
      const without = await grown(false);
      const withMaintenance = await grown(true);
      expect(without).toBeGreaterThan(3);
      expect(withMaintenance).toBeLessThan(2.5);
    });
  });
}

describeBackends('embedded database maintenance job', (h) => {
  it('runs on PGlite as a background job of the instance', async () => {
    if (h().backend !== 'pglite') return; // PostgreSQL servers run their own autovacuum
    await addNodes(h().db, ROWS);
    const jobs = startJobs(h().services, h().config, pino({ level: 'silent' }));
    try {
      // The first round runs at start.
      const deadline = Date.now() + 10_000;
      while (!(await elementsStats(h().db)).vacuumed && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect((await elementsStats(h().db)).vacuumed).toBe(true);
    } finally {
      await jobs.stop();
    }
  });
});

describe.skipIf(!backendsUnderTest().includes('pglite'))('embedded database checkpoints', () => {
  const MiB = 1024 * 1024;
  /** Segments in pg_wal after 6 rounds of 32 MiB of WAL, with or without checkpointIfDue after each. */
  const walSegments = async (checkpoints: boolean) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'trellis-wal-'));
    const db = await openPglite(join(dataDir, 'db'), 16);
    try {
      await db.query('CREATE TABLE wal_probe (v text)');
      // Stored as it is, not compressed: a row of 1 MiB writes about 1 MiB of WAL.
      await db.query('ALTER TABLE wal_probe ALTER v SET STORAGE EXTERNAL');
      if (checkpoints) {
        expect(await checkpointIfDue(db)).toBe(false); // WAL written, but neither 5 minutes nor 512 MiB of it
        expect(await checkpointIfDue(db, { seconds: 0 })).toBe(true);
        expect(await checkpointIfDue(db, { seconds: 0 })).toBe(false); // nothing written since
      }
      for (let round = 0; round < 6; round++) {
        await db.query(`INSERT INTO wal_probe SELECT repeat('x', ${MiB}) FROM generate_series(1, 32)`);
        await db.query('TRUNCATE wal_probe');
        if (checkpoints) expect(await checkpointIfDue(db, { walBytes: 16 * MiB })).toBe(true);
      }
      return (await readdir(join(dataDir, 'db', 'pg_wal'))).filter((name) => /^[0-9A-F]{24}$/.test(name)).length;
    } finally {
      await db.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  };

  it("checkpoints on PostgreSQL's schedule, so that the WAL is recycled instead of keeping every byte written", async () => {
    // Without a checkpoint all 192 MiB stay on disk until the process stops (in segments of 16 MiB); with one after
    // every 32 MiB the same few segments are written again.
    expect(await walSegments(false)).toBeGreaterThanOrEqual(12);
    expect(await walSegments(true)).toBeLessThanOrEqual(6);
  });
});
