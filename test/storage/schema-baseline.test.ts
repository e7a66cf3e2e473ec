// One-time proof that the baseline schema (src/storage/schema) is the schema the numbered migration chain built:
// one database from each, on each backend, and their catalogues compared object by object.
import { describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { migrations as chain } from '../../src/storage/migrations/index.js';
import { migrations as baseline } from '../../src/storage/schema/index.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

/** Objects of the public schema that an extension does not own. */
const OWN = (oid: string, catalog: string) =>
  `NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = '${catalog}'::regclass AND d.objid = ${oid} AND d.deptype = 'e')`;

const CATALOGUE: Record<string, string> = {
  extensions: `SELECT e.extname, e.extversion, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace`,
  functions: `
    SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result,
           p.prokind, pg_get_functiondef(p.oid) AS definition
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'public' AND p.prokind IN ('f', 'p') AND ${OWN('p.oid', 'pg_proc')}`,
  relations: `
    SELECT c.relname, c.relkind, c.reloptions, c.relpersistence,
           CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS viewdef
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND ${OWN('c.oid', 'pg_class')}`,
  columns: `
    SELECT c.relname, row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) AS position, a.attname,
           format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull, a.attgenerated, a.attidentity,
           pg_get_expr(d.adbin, d.adrelid) AS default_or_expression, co.collname
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    LEFT JOIN pg_collation co ON co.oid = a.attcollation
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped
      AND ${OWN('c.oid', 'pg_class')}`,
  indexes: `
    SELECT i.relname, t.relname AS tablename, pg_get_indexdef(x.indexrelid) AS definition, x.indisprimary, x.indisunique
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = 'public' AND ${OWN('t.oid', 'pg_class')}`,
  triggers: `
    SELECT t.tgname, c.relname, pg_get_triggerdef(t.oid) AS definition, t.tgenabled, t.tgdeferrable, t.tginitdeferred
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND NOT t.tgisinternal`,
  constraints: `
    SELECT co.conname, c.relname, co.contype, pg_get_constraintdef(co.oid) AS definition, co.condeferrable,
           co.condeferred, co.convalidated
    FROM pg_constraint co JOIN pg_namespace n ON n.oid = co.connamespace LEFT JOIN pg_class c ON c.oid = co.conrelid
    WHERE n.nspname = 'public'`,
  types: `
    SELECT t.typname, t.typtype FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
    WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd', 'r', 'm') AND ${OWN('t.oid', 'pg_type')}`,
  rows: `SELECT 'access_epoch' AS relname, to_jsonb(e) AS row FROM access_epoch e`,
};

async function catalogue(db: Db): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [name, sql] of Object.entries(CATALOGUE))
    out[name] = (await db.query(sql)).rows.map((r) => JSON.stringify(r)).sort();
  return out;
}

async function built(backend: Parameters<typeof freshDatabase>[0], migrations: typeof baseline) {
  const fresh = await freshDatabase(backend);
  await fresh.db.query('DROP SCHEMA public CASCADE');
  await fresh.db.query('CREATE SCHEMA public');
  await migrate(fresh.db, migrations);
  return fresh;
}

for (const backend of backendsUnderTest()) {
  describe(`schema baseline [${backend}]`, () => {
    it('has the catalogue of the migration chain', async () => {
      const old = await built(backend, chain);
      const now = await built(backend, baseline);
      try {
        const [a, b] = [await catalogue(old.db), await catalogue(now.db)];
        // schema_migrations holds different rows, not different columns; everything else must be the same.
        for (const name of Object.keys(CATALOGUE)) expect({ [name]: b[name] }).toEqual({ [name]: a[name] });
        expect(a.functions!.length).toBe(36);
        expect(a.triggers!.length).toBe(15);
        expect(a.indexes!.length).toBe(24);
        expect(a.extensions!.some((e) => e.includes('pg_trgm'))).toBe(true);
      } finally {
        await old.dispose();
        await now.dispose();
      }
    }, 120_000);
  });
}
