import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CommandIO } from '../../src/cli/io.js';
import { main } from '../../src/cli/main.js';
import type { Db } from '../../src/storage/db.js';
import { IncompatibleSchemaError, migrate } from '../../src/storage/migrate.js';
import { openPglite } from '../../src/storage/pglite.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { migrations } from '../../src/storage/schema/index.js';
import { type BackendName, backendsUnderTest, freshDatabase, scratchPostgresDatabase } from '../helpers/harness.js';

/** What schema_migrations held in a database made before the schema became one baseline. */
const OLD_CHAIN = [
  'elements',
  'accounts',
  'uploads',
  'access',
  'access-index',
  'search-index',
  'search-document',
  'drop-type-index',
  'search-field-backslash',
  'search-fuzzy-any-field',
  'relation-writes-need-read',
  'upload-preconditions',
  'search-fuzzy-transpositions',
  'search-access-keys',
  'search-phrases',
  'access-epoch',
  'access-epoch-notify',
  'drop-upload-file-mode',
  'group-members',
  'credential-failures',
  'element-data-limits',
].map((name, i) => ({ version: i + 1, name }));

/** Makes `db` look like a database of the old chain, `upTo` migrations in (the tables themselves do not matter). */
async function oldChainRows(db: Db, upTo = OLD_CHAIN.length): Promise<void> {
  await db.query('DROP SCHEMA public CASCADE');
  await db.query('CREATE SCHEMA public');
  await db.query(`CREATE TABLE schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`);
  for (const { version, name } of OLD_CHAIN.slice(0, upTo))
    await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [version, name]);
}

function captureIO(): CommandIO & { lines: { out: string[]; err: string[] } } {
  const lines = { out: [] as string[], err: [] as string[] };
  return {
    lines,
    out: (l) => lines.out.push(l),
    err: (l) => lines.err.push(l),
    confirm: async () => false,
    interactive: false,
    cwd: process.cwd(),
  };
}

/** An environment whose database holds the old chain's rows, for `main`. */
async function oldChainEnvironment(
  backend: BackendName,
): Promise<{ env: NodeJS.ProcessEnv; dispose(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'trellis-old-chain-'));
  if (backend === 'pglite') {
    const db = await openPglite(join(dataDir, 'db'));
    await oldChainRows(db);
    await db.close();
    return { env: { DATA_DIR: dataDir }, dispose: () => rm(dataDir, { recursive: true, force: true }) };
  }
  const scratch = await scratchPostgresDatabase();
  const db = await openPostgres(scratch.url, 2);
  await oldChainRows(db);
  await db.close();
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: scratch.url },
    async dispose() {
      await scratch.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

for (const backend of backendsUnderTest()) {
  describe(`migrations [${backend}]`, () => {
    it('apply once, in order, and are idempotent; concurrent runs apply them once', async () => {
      // freshDatabase has already migrated: running again applies nothing.
      const { db, dispose } = await freshDatabase(backend);
      try {
        expect(await migrate(db)).toEqual([]);
        const { rows } = await db.query<{ version: number; name: string }>(
          'SELECT version, name FROM schema_migrations ORDER BY version',
        );
        expect(rows).toEqual(migrations.map((m) => ({ version: m.version, name: m.name })));
        expect(rows[0]).toEqual({ version: 1, name: 'baseline' });
        // Roll everything back to nothing and apply twice at once: the advisory lock serialises them.
        await db.query('DROP SCHEMA public CASCADE');
        await db.query('CREATE SCHEMA public');
        const [a, b] = await Promise.all([migrate(db), migrate(db)]);
        expect([...a, ...b].sort((x, y) => x - y)).toEqual(migrations.map((m) => m.version));
        expect(await migrate(db)).toEqual([]);
        const tables = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name IN ('elements','users','tokens','uploads')`,
        );
        expect(tables.rows[0]!.n).toBe(4);
      } finally {
        await dispose();
      }
    });

    it('apply a later migration after the baseline, once', async () => {
      const { db, dispose } = await freshDatabase(backend);
      try {
        const next = Math.max(...migrations.map((m) => m.version)) + 1;
        const later = [
          ...migrations,
          {
            version: next,
            name: 'later',
            sql: 'CREATE TABLE later_probe (id int); INSERT INTO later_probe VALUES (1);',
          },
        ];
        expect(await migrate(db, later)).toEqual([next]);
        expect(await migrate(db, later)).toEqual([]);
        expect((await db.query('SELECT id FROM later_probe')).rows).toEqual([{ id: 1 }]);
      } finally {
        await dispose();
      }
    });

    it('refuse a database of the old migration chain, changing nothing, and say how to move it', async () => {
      const { db, dispose } = await freshDatabase(backend);
      try {
        for (const upTo of [OLD_CHAIN.length, 9]) {
          await oldChainRows(db, upTo);
          const refusal = await migrate(db).catch((error: unknown) => error);
          expect(refusal).toBeInstanceOf(IncompatibleSchemaError);
          expect((refusal as Error).message).toMatch(/backup:create.*backup:load/);
          const { rows } = await db.query<{ version: number; name: string }>(
            'SELECT version, name FROM schema_migrations ORDER BY version',
          );
          expect(rows).toEqual(OLD_CHAIN.slice(0, upTo));
          const tables = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`,
          );
          expect(tables.rows[0]!.n).toBe(1);
        }
      } finally {
        await dispose();
      }
    });

    it('the CLI reports that refusal as one line, without a stack trace', async () => {
      const { env, dispose } = await oldChainEnvironment(backend);
      try {
        const io = captureIO();
        expect(await main(['backup:create', join(env.DATA_DIR!, 'backup')], env, io)).toBe(65);
        expect(io.lines.err).toHaveLength(1);
        const [line] = io.lines.err;
        expect(line).toMatch(
          /^trellis: the database was made by another Trellis version .*"elements".*backup:create.*backup:load/,
        );
        expect(line).not.toContain('\n');
        expect(line).not.toMatch(/\bat .*\.ts:\d+/);
      } finally {
        await dispose();
      }
    }, 60_000);
  });
}
