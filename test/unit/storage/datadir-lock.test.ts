import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireDataDirLock, DataDirBusyError, lockHolder, lockPath } from '../../../src/storage/datadir-lock.js';

describe('DATA_DIR lock', () => {
  it('is exclusive while its holder lives, and a stale lock of a dead process is taken over', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-lock-'));
    // a live foreign holder (pid 1 always exists) blocks
    writeFileSync(lockPath(dir), '1\n');
    expect(lockHolder(dir)).toBe(1);
    expect(() => acquireDataDirLock(dir)).toThrow(DataDirBusyError);
    // a dead holder is stale
    writeFileSync(lockPath(dir), '999999999\n');
    expect(lockHolder(dir)).toBeNull();
    const release = acquireDataDirLock(dir);
    expect(existsSync(lockPath(dir))).toBe(true);
    release();
    expect(existsSync(lockPath(dir))).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});
