// Chooses the backend from the runtime configuration and brings its schema up to date.
import { join } from 'node:path';
import type { Runtime, Settings } from '../config/schema.js';
import type { Db } from './db.js';
import { migrate } from './migrate.js';
import { openPglite } from './pglite.js';
import type { EmbeddedDatabaseAborted } from './pglite-wire.js';
import { defaultPoolSize, openPostgres } from './postgres.js';

/** The embedded database's folder in DATA_DIR. */
export const embeddedDatabaseDir = (dataDir: string) => join(dataDir, 'db');

/** `onEmbeddedAbort`: hears that the embedded database aborted, after which every statement fails (pglite.ts). */
export async function openDatabase(
  runtime: Pick<Runtime, 'databaseUrl' | 'dataDir'>,
  { poolSize, embeddedCacheSizeInMiB }: Settings['database'],
  onEmbeddedAbort?: (error: EmbeddedDatabaseAborted) => void,
): Promise<Db> {
  const db = runtime.databaseUrl
    ? await openPostgres(runtime.databaseUrl, poolSize === 'auto' ? defaultPoolSize() : poolSize)
    : await openPglite(embeddedDatabaseDir(runtime.dataDir), embeddedCacheSizeInMiB, onEmbeddedAbort);
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
