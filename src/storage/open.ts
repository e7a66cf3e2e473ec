// Chooses the backend from the runtime configuration and brings its schema up to date.
import { join } from 'node:path';
import type { Runtime, Settings } from '../config/schema.js';
import type { Db } from './db.js';
import { migrate } from './migrate.js';
import { openPglite } from './pglite.js';
import { defaultPoolSize, openPostgres } from './postgres.js';

export async function openDatabase(
  runtime: Pick<Runtime, 'databaseUrl' | 'dataDir'>,
  { poolSize, embeddedCacheSizeInMiB }: Settings['database'],
): Promise<Db> {
  const db = runtime.databaseUrl
    ? await openPostgres(runtime.databaseUrl, poolSize === 'auto' ? defaultPoolSize() : poolSize)
    : await openPglite(join(runtime.dataDir, 'db'), embeddedCacheSizeInMiB);
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
