import { expect, it } from 'vitest';
import { migrate } from '../../src/storage/migrate.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';
import { describe } from 'vitest';

for (const backend of backendsUnderTest()) {
  describe(`migrations [${backend}]`, () => {
    it('apply once, in order, and are idempotent; concurrent runs apply them once', async () => {
      // freshDatabase has already migrated: running again applies nothing.
      const { db, dispose } = await freshDatabase(backend);
      try {
        expect(await migrate(db)).toEqual([]);
        const { rows } = await db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((r) => r.version)).toEqual(migrations.map((m) => m.version));
        // Roll everything back to nothing and apply twice at once: the advisory lock serialises them.
        await db.query('DROP SCHEMA public CASCADE');
        await db.query('CREATE SCHEMA public');
        const [a, b] = await Promise.all([migrate(db), migrate(db)]);
        expect([...a, ...b].sort((x, y) => x - y)).toEqual(migrations.map((m) => m.version));
        expect(await migrate(db)).toEqual([]);
        const tables = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('elements','users','tokens','uploads')`);
        expect(tables.rows[0]!.n).toBe(4);
      } finally {
        await dispose();
      }
    });
  });
}
