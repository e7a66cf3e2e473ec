// The PGlite images of a test run: an empty database and a migrated one, made once by the global setup and loaded
// by every suite instead of running initdb (and the migrations) in each (seconds per database on this machine).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {} from 'vitest';
import { migrate } from '../../src/storage/migrate.js';
import { createPglite, pgliteDb } from '../../src/storage/pglite.js';

/** Where the images are, as the global setup provides them. */
export interface PgliteImages {
  empty: string;
  migrated: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteImages: PgliteImages | null;
  }
}

/** Makes both images in `dir`. */
export async function makePgliteImages(dir: string): Promise<PgliteImages> {
  const images = { empty: join(dir, 'pglite-empty.tar'), migrated: join(dir, 'pglite-migrated.tar') };
  const instance = await createPglite();
  try {
    await writeFile(images.empty, Buffer.from(await (await instance.dumpDataDir('none')).arrayBuffer()));
    await migrate(await pgliteDb(instance, false));
    await writeFile(images.migrated, Buffer.from(await (await instance.dumpDataDir('none')).arrayBuffer()));
  } finally {
    await instance.close();
  }
  return images;
}
