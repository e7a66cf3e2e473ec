// database.poolSize: the PostgreSQL pool never opens more connections than configured, and 'auto' follows the
// machine (four per core, 4 to 10).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { validateSettings } from '../../src/config/load.js';
import { openDatabase } from '../../src/storage/open.js';
import { defaultPoolSize } from '../../src/storage/postgres.js';
import { backendsUnderTest } from '../helpers/harness.js';

describe('database pool size', () => {
  it("sizes 'auto' to the machine", () => {
    expect([1, 2, 3, 4, 5, 64].map((cores) => defaultPoolSize(cores))).toEqual([4, 8, 10, 10, 10, 10]);
  });

  it.runIf(backendsUnderTest().includes('postgres'))(
    'runs at most poolSize statements at once on PostgreSQL',
    async () => {
      const admin = new pg.Client({ connectionString: inject('pgUrl') as string });
      await admin.connect();
      const name = `trellis_pool_${randomBytes(6).toString('hex')}`;
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(inject('pgUrl') as string);
      url.pathname = `/${name}`;
      const db = await openDatabase(
        { databaseUrl: url.toString(), dataDir: '/nonexistent' },
        validateSettings({ database: { poolSize: 2 } }).database,
      );
      try {
        // Six statements that each hold their connection for 150 ms: through 2 connections, in three rounds.
        const started = performance.now();
        const pids = await Promise.all(
          Array.from(
            { length: 6 },
            async () =>
              (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.15)')).rows[0]!.pid,
          ),
        );
        expect(new Set(pids).size).toBe(2);
        expect(performance.now() - started).toBeGreaterThanOrEqual(440);
      } finally {
        await db.close();
        await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
        await admin.end();
      }
    },
  );
});
