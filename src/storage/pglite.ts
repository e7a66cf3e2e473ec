// The embedded backend: PGlite (PostgreSQL compiled to WASM, in-process), persisted in DATA_DIR/db.
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import pg from 'pg';
import { poolDb, SESSION_SETTINGS, type Db } from './db.js';

export const pgliteExtensions = { pg_trgm };

/** Opens (creating when absent) a PGlite database in `dataDir`, or in memory when `dataDir` is undefined. */
export async function createPglite(dataDir?: string): Promise<PGlite> {
  return PGlite.create({ dataDir, extensions: pgliteExtensions });
}

/** Wraps a PGlite instance. `owned` instances are closed with the Db. */
export async function pgliteDb(instance: PGlite, owned = true): Promise<Db> {
  // Session settings: PGlite is a single session, so setting them once covers every statement.
  for (const [key, value] of Object.entries(SESSION_SETTINGS)) await instance.exec(`SET ${key} = '${value}'`);
  // PGlite runs one statement at a time; its adapter is a pool of one connection, so transactions serialise.
  const pool = new pg.Pool(createPgConfig(instance) as unknown as pg.PoolConfig);
  // An idle client that errors must not crash the process (as for PostgreSQL); the pool replaces it.
  pool.on('error', () => {});
  return poolDb('pglite', pool, async () => {
    if (owned) await instance.close();
  });
}

export async function openPglite(dataDir: string): Promise<Db> {
  return await pgliteDb(await createPglite(dataDir));
}
