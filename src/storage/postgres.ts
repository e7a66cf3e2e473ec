// The PostgreSQL server backend (DATABASE_URL).
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { type Db, type Listen, poolDb, SESSION_SETTINGS } from './db.js';
import { defaultReadLanes, ReadLanes, SHORT_READ_TIMEOUT_MS } from './read-lanes.js';

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
 * How long the service waits for the server, in milliseconds (0: no bound). `connectMs`: for a connection, a free
 * one of the pool or a new one (until the server has accepted the session). `statementMs`: for each statement
 * (storage/db.ts PoolDbOptions), short reads for at most SHORT_READ_TIMEOUT_MS.
 */
export interface ServerBounds {
  connectMs: number;
  statementMs: number;
}

const UNBOUNDED: ServerBounds = { connectMs: 0, statementMs: 0 };

/**
 * The options of a pool (Trellis' and the benchmark's baselines'): `size` connections, each starting with
 * SESSION_SETTINGS (and the bound of its statements), never closed for being idle. pg-pool's default closes a
 * connection idle for 10 s, which arms and clears a timer at every check-in, and a connection opened again has to
 * prepare every statement again; a pool of at most 10 connections is small enough to keep open.
 */
export const poolOptions = (url: string, size: number, bounds: ServerBounds = UNBOUNDED): pg.PoolConfig => ({
  connectionString: url,
  max: size,
  idleTimeoutMillis: 0,
  connectionTimeoutMillis: bounds.connectMs,
  options: sessionOptions(bounds.statementMs),
});

/** The connection option that applies SESSION_SETTINGS (and a statement_timeout) to every session of a pool, from its start. */
const sessionOptions = (statementMs: number): string =>
  Object.entries({ ...SESSION_SETTINGS, ...(statementMs > 0 ? { statement_timeout: String(statementMs) } : {}) })
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');

/**
 * The database on a PostgreSQL server: a pool of `poolSize` connections, and `readLanes` pipelined ones for short
 * reads, waiting for the server as `bounds` say (by default without a bound).
 */
export async function openPostgres(
  url: string,
  poolSize = defaultPoolSize(),
  readLanes = defaultReadLanes(availableParallelism()),
  bounds: ServerBounds = UNBOUNDED,
): Promise<Db> {
  const pool = new pg.Pool(poolOptions(url, poolSize, bounds));
  // An idle client that errors (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const client = await pool.connect();
  client.release();
  const shortReadMs =
    bounds.statementMs > 0 ? Math.min(SHORT_READ_TIMEOUT_MS, bounds.statementMs) : SHORT_READ_TIMEOUT_MS;
  return poolDb('postgres', pool, {
    lanes: new ReadLanes(poolOptions(url, 1, bounds), readLanes, shortReadMs),
    ...(bounds.statementMs > 0 ? { statementTimeoutMs: bounds.statementMs } : {}),
    listen: serverListen(url),
  });
}

/** How long a broken listening session waits before it connects again. */
const RELISTEN_DELAY_MS = 1000;

/**
 * Db.listen on a server: a session of its own per listener, outside the pool (it stays idle between
 * notifications), connected again when it breaks, with a call of `onNotify` once it listens again.
 */
function serverListen(url: string): Listen {
  return async (channel, onNotify) => {
    let stopped = false;
    let current: pg.Client | null = null;
    let retry: NodeJS.Timeout | undefined;
    const connect = async (): Promise<void> => {
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => {});
      client.on('notification', (message) => {
        if (message.channel === channel) onNotify();
      });
      try {
        await client.connect();
        await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
      } catch (error) {
        await client.end().catch(() => {});
        throw error;
      }
      client.on('end', () => {
        if (current === client) current = null;
        if (!stopped) again();
      });
      current = client;
    };
    const again = () => {
      retry = setTimeout(() => {
        if (stopped) return;
        connect().then(onNotify, again);
      }, RELISTEN_DELAY_MS);
      retry.unref();
    };
    await connect();
    return async () => {
      stopped = true;
      clearTimeout(retry);
      await current?.end().catch(() => {});
    };
  };
}
