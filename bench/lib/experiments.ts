// --sql and --generic-plans: changes to a generated database before the servers start, to measure a change before
// making it a migration.
import { readFileSync } from 'node:fs';
import type { Db } from '../../src/storage/db.js';
import type { Bench } from './context.js';

export async function applyExperiments(bench: Bench, db: Db) {
  for (const file of bench.options.sql) {
    bench.log(`experiment: applying ${file}`);
    await db.query(readFileSync(file, 'utf8'));
  }
  if (bench.options.genericPlans) {
    bench.log('experiment: plan_cache_mode = force_generic_plan for every new session');
    // postgresql.auto.conf: read by every new PostgreSQL session after the reload, and by PGlite when it opens
    // (PGlite ignores per-database settings).
    await db.query('ALTER SYSTEM SET plan_cache_mode = force_generic_plan');
    await db.query('SELECT pg_reload_conf()');
  }
}
