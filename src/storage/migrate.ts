// Applies the schema's migrations (storage/schema) once each, in one transaction per start-up, under an advisory
// lock so that two instances starting at once on one PostgreSQL do not race.
import type { Db } from './db.js';
import { migrations as allMigrations, type Migration } from './schema/index.js';

const LOCK_KEY = 7_417_101; // arbitrary, fixed: "trellis migrations"

/**
 * The database records a migration under a version that this Trellis knows by another name: it was made by a
 * version whose schema history this one does not continue (an earlier one, before the schema became one baseline),
 * and cannot be upgraded in place. Its data moves through a backup.
 */
export class IncompatibleSchemaError extends Error {
  constructor(
    readonly version: number,
    readonly found: string,
    readonly expected: string,
  ) {
    super(
      `the database was made by another Trellis version (its schema_migrations has version ${version} "${found}", this version's is "${expected}") and cannot be upgraded in place: ` +
        'with the version that made it run `trellis backup:create <dir>`, then with this version run `trellis backup:load <dir>` ' +
        'into a fresh DATA_DIR (or an empty PostgreSQL database)',
    );
    this.name = 'IncompatibleSchemaError';
  }
}

export async function migrate(db: Db, migrations: Migration[] = allMigrations): Promise<number[]> {
  // Without the bound of a request's statements: a migration may rewrite a large table.
  return db.transaction(
    async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
      await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await tx.query<{ version: number; name: string }>(
        'SELECT version, name FROM schema_migrations ORDER BY version',
      );
      for (const row of rows) {
        const known = migrations.find((m) => m.version === row.version);
        if (known && known.name !== row.name) throw new IncompatibleSchemaError(row.version, row.name, known.name);
      }
      const done = new Set(rows.map((r) => r.version));
      const applied: number[] = [];
      for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
        if (done.has(migration.version)) continue;
        for (const statement of splitStatements(migration.sql)) await tx.query(statement);
        await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
        applied.push(migration.version);
      }
      return applied;
    },
    { statementTimeoutMs: 0 },
  );
}

/**
 * Splits a migration into statements (the extended protocol runs one at a time): at every ";" outside quotes,
 * dollar-quoted bodies ($fn$ ... $fn$) and comments.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  let i = 0;
  while (i < sql.length) {
    const rest = sql.slice(i);
    const dollar = /^\$[A-Za-z_]*\$/.exec(rest);
    let token: string;
    if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end; // drop the comment
      continue;
    } else if (dollar) {
      const end = sql.indexOf(dollar[0], i + dollar[0].length);
      if (end === -1) throw new Error(`unterminated ${dollar[0]} quote in migration`);
      token = sql.slice(i, end + dollar[0].length);
    } else if (rest[0] === "'") {
      const end = /^'(?:[^']|'')*'/.exec(rest);
      if (!end) throw new Error('unterminated string literal in migration');
      token = end[0];
    } else if (rest[0] === ';') {
      if (current.trim()) statements.push(current.trim());
      current = '';
      i += 1;
      continue;
    } else {
      token = rest[0]!;
    }
    current += token;
    i += token.length;
  }
  if (current.trim()) statements.push(current.trim());
  return statements;
}
