// database.embeddedCacheSizeInMiB: the embedded database's page cache (PGlite's shared_buffers), set as configured,
// and 'auto' sized to the database found at start within the machine's memory.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateSettings } from '../../src/config/load.js';
import { GiB, MiB } from '../../src/config/schema.js';
import { openDatabase } from '../../src/storage/open.js';
import { databaseBytes, embeddedCacheMiB } from '../../src/storage/pglite.js';

describe('embedded database cache', () => {
  it("sizes 'auto' to the database, in steps of 64 MiB, between 128 MiB and the smaller of 1 GiB and an eighth of memory", () => {
    expect(embeddedCacheMiB(0, 24 * GiB)).toBe(128);
    expect(embeddedCacheMiB(50 * MiB, 24 * GiB)).toBe(128);
    // 413 MiB (the benchmark's 100k nodes) and a quarter more: 516.25 MiB, rounded up to 576.
    expect(embeddedCacheMiB(413 * MiB, 24 * GiB)).toBe(576);
    expect(embeddedCacheMiB(512 * MiB, 24 * GiB)).toBe(640);
    expect(embeddedCacheMiB(4 * GiB, 24 * GiB)).toBe(1024);
    // An eighth of 2 GiB is 256 MiB; an eighth of 512 MiB is below the floor, which wins.
    expect(embeddedCacheMiB(413 * MiB, 2 * GiB)).toBe(256);
    expect(embeddedCacheMiB(413 * MiB, 512 * MiB)).toBe(128);
  });

  const dirs: string[] = [];
  const dataDir = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-cache-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('counts the relation files under base/, and not an entry that is gone by the time it is looked at', async () => {
    const dir = await dataDir();
    await mkdir(join(dir, 'base', '5'), { recursive: true });
    await writeFile(join(dir, 'base', '5', '1259'), Buffer.alloc(8192));
    await writeFile(join(dir, 'base', '5', '1259_fsm'), Buffer.alloc(1000));
    await writeFile(join(dir, 'postmaster.opts'), 'not a relation file');
    // A dangling link stats as ENOENT, as a file dropped between the listing and its stat would.
    await symlink(join(dir, 'base', '5', 'dropped'), join(dir, 'base', '5', '16384'));
    expect(await databaseBytes(dir)).toBe(9192);
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
