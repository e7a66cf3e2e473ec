// backup:load makes the blobs it copied durable before it commits (src/backup/blob-copy.ts syncPlaced): every placed
// file and directory is synced, and one that cannot be (it vanished) fails, which rolls the load back. Real files.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Placed, syncPlaced } from '../../src/backup/blob-copy.js';

describe('syncPlaced', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'trellis-sync-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const place = (count: number): Placed[] =>
    Array.from({ length: count }, (_, i) => {
      const dir = join(root, (i % 7).toString(16).padStart(2, '0'));
      mkdirSync(dir, { recursive: true });
      const final = join(dir, `blob-${i}`);
      writeFileSync(final, `bytes ${i}`);
      return { final };
    });

  it('syncs every placed file (more than run at once) and resolves; nothing placed is fine too', async () => {
    await expect(syncPlaced(place(100))).resolves.toBeUndefined();
    await expect(syncPlaced([])).resolves.toBeUndefined();
  });

  it('fails when a placed file is gone, so that the load does not commit rows whose bytes are missing', async () => {
    const placed = place(40);
    rmSync(placed[33]!.final);
    await expect(syncPlaced(placed)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
