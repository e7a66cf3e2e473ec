// Short reads (Db.read, src/storage/read-lanes.ts): on a PostgreSQL server they share pipelined connections, on
// PGlite and inside a transaction they are plain statements. Either way every read gets its own answer, a read the
// database refuses fails alone, and a pipelined connection that breaks is replaced.
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { poolOptions } from '../../src/storage/postgres.js';
import { defaultReadLanes, ReadLanes, SHORT_READ_TIMEOUT_MS } from '../../src/storage/read-lanes.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('read lanes', () => {
  it('one pipelined connection per two cores, at least one', () => {
    expect([1, 2, 3, 4, 8, 64].map(defaultReadLanes)).toEqual([1, 1, 1, 2, 4, 32]);
  });

  it.runIf(backendsUnderTest().includes('postgres'))(
    'cancel a read that runs past their timeout; the reads behind it are answered',
    async () => {
      const lanes = new ReadLanes(poolOptions(inject('pgUrl') as string, 1), 1, 300);
      try {
        const lane = lanes.connection();
        const started = performance.now();
        const [slow, behind] = await Promise.allSettled([
          lane.query('SELECT pg_sleep(5)'),
          lane.query(`SELECT current_setting('statement_timeout') AS t`),
        ]);
        expect(slow).toMatchObject({ status: 'rejected', reason: { code: '57014' } });
        expect(behind).toMatchObject({ status: 'fulfilled', value: { rows: [{ t: '300ms' }] } });
        expect(performance.now() - started).toBeLessThan(2_000);
        // The same connection goes on, with the session settings of every connection of ours.
        expect(lanes.connection()).toBe(lane);
        expect((await lane.query(`SELECT current_setting('plan_cache_mode') AS mode`)).rows).toEqual([
          { mode: 'force_generic_plan' },
        ]);
      } finally {
        await lanes.close();
      }
      expect(() => lanes.connection()).toThrow(/closed/);
    },
  );
});

for (const backend of backendsUnderTest()) {
  describe(`short reads [${backend}]`, () => {
    let db: Db;
    let dispose: () => Promise<void>;
    beforeAll(async () => {
      ({ db, dispose } = await freshDatabase(backend));
    });
    afterAll(() => dispose());

    it('answer each read with its own rows; one the database refuses fails alone and its statement stays usable', async () => {
      const reads = Array.from({ length: 40 }, (_, i) =>
        i === 17
          ? db.read<{ v: string }>('SELECT $1::uuid::text AS v', ['not a uuid'], 'lane_cast')
          : db.read<{ v: number }>('SELECT $1::int AS v', [i], 'lane_int'),
      );
      const settled = await Promise.allSettled(reads);
      expect(settled[17]).toMatchObject({ status: 'rejected', reason: { code: '22P02' } });
      expect(
        settled.flatMap((s, i) =>
          i === 17 ? [] : [(s as PromiseFulfilledResult<{ rows: { v: unknown }[] }>).value.rows[0]!.v],
        ),
      ).toEqual(Array.from({ length: 40 }, (_, i) => i).filter((i) => i !== 17));
      const id = '6f1c5e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b';
      expect((await db.read<{ v: string }>('SELECT $1::uuid::text AS v', [id], 'lane_cast')).rows).toEqual([{ v: id }]);
      // The session settings of every connection of ours apply (storage/db.ts SESSION_SETTINGS).
      expect((await db.read<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`)).rows).toEqual([
        { mode: 'force_generic_plan' },
      ]);
    });

    it("inside a transaction, a short read is the transaction's own statement", async () => {
      const count = await db.transaction(async (tx) => {
        await tx.query('CREATE TEMPORARY TABLE lane_probe (n int) ON COMMIT DROP');
        await tx.query('INSERT INTO lane_probe VALUES (1), (2)');
        return (await tx.read<{ n: number }>('SELECT count(*)::int AS n FROM lane_probe')).rows[0]!.n;
      });
      expect(count).toBe(2);
    });

    it.runIf(backend === 'postgres')(
      'share pipelined connections, and a connection that breaks is replaced',
      async () => {
        const lanes = defaultReadLanes(availableParallelism());
        const pidsOf = async (n: number) =>
          new Set(
            (
              await Promise.all(
                Array.from({ length: n }, () => db.read<{ pid: number }>('SELECT pg_backend_pid() AS pid')),
              )
            ).map((r) => r.rows[0]!.pid),
          );
        const before = await pidsOf(4 * lanes);
        expect(before.size).toBe(lanes);
        // Short reads have a statement timeout; the pool's statements (writes, searches, restores) have none.
        const timeout = `${SHORT_READ_TIMEOUT_MS / 1000}s`;
        expect((await db.read<{ t: string }>(`SELECT current_setting('statement_timeout') AS t`)).rows).toEqual([
          { t: timeout },
        ]);
        expect((await db.query<{ t: string }>(`SELECT current_setting('statement_timeout') AS t`)).rows).toEqual([
          { t: '0' },
        ]);
        // Five reads of 100 ms each per lane, asked for at once, take their turns on their connections.
        const started = performance.now();
        await Promise.all(Array.from({ length: 5 * lanes }, () => db.read('SELECT pg_sleep(0.1)')));
        expect(performance.now() - started).toBeGreaterThanOrEqual(480);

        const admin = new pg.Client({ connectionString: inject('pgUrl') as string });
        await admin.connect();
        try {
          await admin.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) pid', [[...before]]);
        } finally {
          await admin.end();
        }
        // Reads asked for before the client has seen its connection go fail with an error (none hangs); then every lane
        // is a new connection.
        let after = new Set<number>();
        for (let attempt = 0; attempt < 50; attempt++) {
          try {
            after = await pidsOf(4 * lanes);
            if ([...after].every((pid) => !before.has(pid))) break;
          } catch (error) {
            expect(error).toBeInstanceOf(Error);
          }
          await sleep(20);
        }
        expect(after.size).toBe(lanes);
        expect([...after].some((pid) => before.has(pid))).toBe(false);
      },
    );
  });
}
