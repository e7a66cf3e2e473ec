// A statement can fail in the driver before the server sees it: serialising a parameter that throws (a JSON value
// nested deeply enough overflows the stack). `pg` has then already noted a named statement as prepared on the
// connection, so every later use of that name there failed with `prepared statement "..." does not exist`. Objects
// are now serialised before the driver sees them (src/storage/db.ts), so such a failure sends nothing.
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
      const unserialisable = { toJSON: () => { throw new RangeError('Maximum call stack size exceeded'); } };
      const probe = (value: unknown) => db.transaction((tx) => tx.query<{ v: unknown }>('SELECT $1::jsonb AS v', [value], 'driver_error_probe'));
      await expect(probe(unserialisable)).rejects.toThrow(RangeError);
      // Every connection of the pool (PostgreSQL: 5 in the tests) gets to run the statement again.
      const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => probe({ i })));
      expect(runs.map((r) => r.rows[0]!.v)).toEqual(Array.from({ length: 12 }, (_, i) => ({ i })));
      // The failed transaction left nothing open: the session settings and a plain write still work.
      await db.transaction((tx) => tx.query(`CREATE TABLE driver_error_probe (n int)`));
      await expect(probe(unserialisable)).rejects.toThrow(RangeError);
      expect((await db.query<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`)).rows).toEqual([{ mode: 'force_generic_plan' }]);
      expect((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM driver_error_probe`)).rows).toEqual([{ n: 0 }]);
    });
  });
}
