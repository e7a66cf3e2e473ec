// The PostgreSQL server backend (DATABASE_URL).
import pg from 'pg';
import { poolDb, SESSION_SETTINGS, type Db } from './db.js';

export async function openPostgres(url: string, poolSize = 10): Promise<Db> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, options: Object.entries(SESSION_SETTINGS).map(([k, v]) => `-c ${k}=${v}`).join(' ') });
  // An idle client that errors (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const client = await pool.connect();
  client.release();
  return poolDb('postgres', pool);
}
