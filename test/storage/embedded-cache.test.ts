// database.embeddedCacheSizeInMiB: the embedded database's page cache (PGlite's shared_buffers), set as configured,
// and 'auto' sized to the database found at start within the machine's memory. The sizing rule and the counting of
// the database's files are tested in test/unit/storage/pglite.test.ts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateSettings } from '../../src/config/load.js';
import { MiB } from '../../src/config/schema.js';
import { openDatabase } from '../../src/storage/open.js';
import { databaseBytes } from '../../src/storage/pglite.js';

describe('embedded database cache', () => {
  const dirs: string[] = [];
  const dataDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-cache-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  const sharedBuffers = async (dir: string, embeddedCacheSizeInMiB: number | 'auto') => {
    const { database } = validateSettings({ database: { embeddedCacheSizeInMiB } });
    const db = await openDatabase({ databaseUrl: null, dataDir: dir }, database);
    try {
      return (await db.query<{ shared_buffers: string }>('SHOW shared_buffers')).rows[0]!.shared_buffers;
    } finally {
      await db.close();
    }
  };

  it('gives PGlite the configured cache, and 128 MiB for a new database under auto', async () => {
    const dir = await dataDir();
    expect(await databaseBytes(join(dir, 'db'))).toBe(0);
    expect(await sharedBuffers(dir, 'auto')).toBe('128MB');
    // The database now exists (its catalogue and Trellis' schema): auto counts its relation files.
    const bytes = await databaseBytes(join(dir, 'db'));
    expect(bytes).toBeGreaterThan(1 * MiB);
    expect(bytes).toBeLessThan(200 * MiB);
    expect(await sharedBuffers(dir, 48)).toBe('48MB');
  }, 60_000);
});
