// The free space of the folders the instance writes to (the port in domain/capacity.ts), by statfs.
import { stat, statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Filesystem, SpaceGauge } from '../domain/capacity.js';

export interface WatchedFolder {
  path: string;
  /** Upload bodies are stored here (the disk file store). */
  holdsFiles: boolean;
}

/**
 * Measures each folder's filesystem once: folders on one device (the database and the file store both in DATA_DIR,
 * the usual case) are one filesystem, so the bytes streamed into the file store count against the database's room
 * too. A folder that does not exist yet is measured where it will be made (its nearest existing parent).
 */
export class StatfsGauge implements SpaceGauge {
  constructor(private readonly folders: readonly WatchedFolder[]) {}

  async measure(): Promise<Filesystem[]> {
    const byDevice = new Map<number, Filesystem>();
    for (const folder of this.folders) {
      const { path, device, availableBytes } = await measureFolder(folder.path);
      const seen = byDevice.get(device);
      byDevice.set(device, {
        path: seen?.path ?? path,
        availableBytes,
        holdsFiles: (seen?.holdsFiles ?? false) || folder.holdsFiles,
      });
    }
    return [...byDevice.values()];
  }
}

async function measureFolder(folder: string): Promise<{ path: string; device: number; availableBytes: number }> {
  for (let path = folder; ; path = dirname(path)) {
    try {
      const [space, info] = await Promise.all([statfs(path), stat(path)]);
      return { path: folder, device: info.dev, availableBytes: space.bavail * space.bsize };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(path) === path) throw error;
    }
  }
}
