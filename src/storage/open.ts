// Chooses the backend from the runtime configuration and brings its schema up to date.
import { join } from 'node:path';
import type { Runtime, Settings } from '../config/schema.js';
import type { Db } from './db.js';
import { migrate } from './migrate.js';
import { openPglite } from './pglite.js';
import { seedFromTemplate } from './pglite-template.js';
import type { EmbeddedDatabaseAborted } from './pglite-wire.js';
import { defaultPoolSize, openPostgres } from './postgres.js';

/** The embedded database's folder in DATA_DIR. */
export const embeddedDatabaseDir = (dataDir: string) => join(dataDir, 'db');

export interface OpenOptions {
  /**
   * 'service' (default): on a PostgreSQL server it waits for a connection and for each statement within the
   * `database.*` timeouts. 'command': waits for connections alike, but lets its statements run as long as they take
   * (a backup's, a restore's). The embedded database has neither bound: its one connection is this process's, and
   * its statements run on this process's thread (searches have their budget, decision 021).
   */
  use?: 'service' | 'command';
  /** Hears that the embedded database aborted, after which every statement fails (pglite.ts). */
  onEmbeddedAbort?: (error: EmbeddedDatabaseAborted) => void;
}

export async function openDatabase(
  runtime: Pick<Runtime, 'databaseUrl' | 'dataDir'>,
  { poolSize, embeddedCacheSizeInMiB, embeddedDurable, ...timeouts }: Settings['database'],
  { use = 'service', onEmbeddedAbort }: OpenOptions = {},
): Promise<Db> {
  const bounds = {
    connectMs: Math.round(timeouts.connectTimeoutInSeconds * 1000),
    statementMs: use === 'service' ? Math.round(timeouts.statementTimeoutInSeconds * 1000) : 0,
  };
  if (!runtime.databaseUrl) await seedFromTemplate(embeddedDatabaseDir(runtime.dataDir));
  const db = runtime.databaseUrl
    ? await openPostgres(runtime.databaseUrl, poolSize === 'auto' ? defaultPoolSize() : poolSize, undefined, bounds)
    : await openPglite(embeddedDatabaseDir(runtime.dataDir), embeddedCacheSizeInMiB, onEmbeddedAbort, embeddedDurable);
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
