// The PostgreSQL server backend (DATABASE_URL).
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { type Db, poolDb, SESSION_SETTINGS } from './db.js';
import { defaultReadLanes, ReadLanes } from './read-lanes.js';

/**
 * Connections for `database.poolSize: auto`: four per core of this machine, at least 4 and at most 10 (pg's own
 * default). The pool serves everything but short reads (read-lanes.ts): writes, pages, searches. A write waits for
 * its commit to reach the disk, and more connections let PostgreSQL flush several commits at once
 * (docs/decisions/004-pool-size-auto.md). Transactions stay short (no body streams inside one), so a small pool
 * does not queue requests behind uploads.
 */
export function defaultPoolSize(cores = availableParallelism()): number {
  return Math.min(10, Math.max(4, 4 * cores));
}

/**
 * The options of a pool (Trellis' and the benchmark's baselines'): `size` connections, each starting with
 * SESSION_SETTINGS, never closed for being idle. pg-pool's default closes a connection idle for 10 s, which arms and
 * clears a timer at every check-in, and a connection opened again has to prepare every statement again; a pool of
 * at most 10 connections is small enough to keep open.
 */
export const poolOptions = (url: string, size: number): pg.PoolConfig => ({
  connectionString: url,
  max: size,
  idleTimeoutMillis: 0,
  options: sessionOptions(),
});

/** The connection option that applies SESSION_SETTINGS to every session of a pool, from its start. */
const sessionOptions = (): string =>
  Object.entries(SESSION_SETTINGS)
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');

/** The database on a PostgreSQL server: a pool of `poolSize` connections, and `readLanes` pipelined ones for short reads. */
export async function openPostgres(
  url: string,
  poolSize = defaultPoolSize(),
  readLanes = defaultReadLanes(availableParallelism()),
): Promise<Db> {
  const pool = new pg.Pool(poolOptions(url, poolSize));
  // An idle client that errors (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const client = await pool.connect();
  client.release();
  return poolDb('postgres', pool, { lanes: new ReadLanes(poolOptions(url, 1), readLanes) });
}
