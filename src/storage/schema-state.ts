// Whether the database answers and holds the schema this version of Trellis expects: the readiness probe's question
// (src/health/readiness.ts). One small read of schema_migrations, which migrate.ts keeps.
import type { Queryable } from './db.js';
import { migrations as allMigrations, type Migration } from './schema/index.js';

/** Throws, saying why, unless the database holds exactly the migrations this version knows. */
export async function checkSchemaCurrent(db: Queryable, migrations: Migration[] = allMigrations): Promise<void> {
  const { rows } = await db.query<{ version: number; name: string }>(
    'SELECT version, name FROM schema_migrations',
    [],
    'health_schema_versions',
  );
  const applied = new Map(rows.map((row) => [row.version, row.name]));
  const missing = migrations.filter((m) => applied.get(m.version) !== m.name);
  if (missing.length > 0)
    throw new Error(`its schema lacks migration ${missing[0]!.version} "${missing[0]!.name}" of this version`);
  const known = new Set(migrations.map((m) => m.version));
  const newer = rows.find((row) => !known.has(row.version));
  // A newer Trellis migrated the database (a rolling upgrade): this version may no longer read it right.
  if (newer) throw new Error(`its schema has migration ${newer.version} "${newer.name}", newer than this version`);
}
