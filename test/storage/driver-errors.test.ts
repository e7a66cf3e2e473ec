// A statement can fail in the driver before the server sees it: serialising a parameter that throws (a JSON value
// nested deeply enough overflows the stack). `pg` has then already noted a named statement as prepared on the
// connection, so every later use of that name there failed with `prepared statement "..." does not exist`. Objects
// are now serialised before the driver sees them (src/storage/db.ts), so such a failure sends nothing. And a
// statement the database refuses leaves its connection in the pool (db.ts, poolDb's query).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

for (const backend of backendsUnderTest()) {
  describe(`driver errors [${backend}]`, () => {
    let db: Db;
    let dispose: () => Promise<void>;
    beforeAll(async () => {
      ({ db, dispose } = await freshDatabase(backend));
    });
    afterAll(() => dispose());

    it('a named statement whose parameters fail to serialise leaves no connection behind that lost the statement', async () => {
      const unserialisable = {
        toJSON: () => {
          throw new RangeError('Maximum call stack size exceeded');
        },
      };
      const probe = (value: unknown) =>
        db.transaction((tx) => tx.query<{ v: unknown }>('SELECT $1::jsonb AS v', [value], 'driver_error_probe'));
      await expect(probe(unserialisable)).rejects.toThrow(RangeError);
      // Every connection of the pool (PostgreSQL: 5 in the tests) gets to run the statement again.
      const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => probe({ i })));
      expect(runs.map((r) => r.rows[0]!.v)).toEqual(Array.from({ length: 12 }, (_, i) => ({ i })));
      // The failed transaction left nothing open: the session settings and a plain write still work.
      await db.transaction((tx) => tx.query(`CREATE TABLE driver_error_probe (n int)`));
      await expect(probe(unserialisable)).rejects.toThrow(RangeError);
      expect((await db.query<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`)).rows).toEqual([
        { mode: 'force_generic_plan' },
      ]);
      expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM driver_error_probe`)).rows).toEqual([
        { n: 0 },
      ]);
    });

    it('a statement the database refuses keeps its connection, and its named statements stay usable there', async () => {
      // The pool hands the most recently released connection out first, so sequential statements share one.
      const backend = async () =>
        (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', [], 'driver_error_pid')).rows[0]!.pid;
      const pid = await backend();
      await expect(db.query('SELECT 1 / 0')).rejects.toMatchObject({ code: '22012' });
      expect(await backend()).toBe(pid);
      // Parsed before, failing when bound or executed: the statement stays prepared and is used again.
      const cast = (value: string) => db.query<{ id: string }>('SELECT $1::uuid AS id', [value], 'driver_error_cast');
      expect((await cast('6f1c5e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b')).rows[0]!.id).toBe(
        '6f1c5e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
      );
      await expect(cast('not a uuid')).rejects.toMatchObject({ code: '22P02' });
      expect((await cast('7f1c5e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b')).rows[0]!.id).toBe(
        '7f1c5e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
      );
      // Failing when parsed: nothing is recorded as prepared, and a later statement of that name is prepared anew.
      await expect(db.query('SELECT no_such_column FROM elements', [], 'driver_error_parse')).rejects.toMatchObject({
        code: '42703',
      });
      expect(await backend()).toBe(pid);
    });
  });
}
