// The PostgreSQL server backend (DATABASE_URL).
import pg from 'pg';
import { PLAN_CACHE_MODE, poolDb, type Db } from './db.js';

export async function openPostgres(url: string, poolSize = 10): Promise<Db> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, options: `-c plan_cache_mode=${PLAN_CACHE_MODE}` });
  // An idle client that errors (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const client = await pool.connect();
  client.release();
  return poolDb('postgres', pool);
}
