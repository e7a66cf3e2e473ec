// New in-memory PGlite databases for the suites, loaded from the run's images (pglite-images.ts) when the global
// setup made them, else created as the service creates them.
import { readFile } from 'node:fs/promises';
import type { PGlite } from '@electric-sql/pglite';
import { inject } from 'vitest';
import { migrate } from '../../src/storage/migrate.js';
import { createPglite, pgliteDb } from '../../src/storage/pglite.js';
import type { PgliteImages } from './pglite-images.js';

const loaded = new Map<keyof PgliteImages, Promise<Blob>>();

function image(kind: keyof PgliteImages): Promise<Blob> | null {
  const images = inject('pgliteImages') as PgliteImages | null | undefined;
  if (!images) return null;
  let blob = loaded.get(kind);
  if (!blob) {
    blob = readFile(images[kind]).then((bytes) => new Blob([bytes]));
    loaded.set(kind, blob);
  }
  return blob;
}

/** A new in-memory PGlite: `migrated` with the schema, else as initdb leaves it. */
export async function newPglite(kind: keyof PgliteImages): Promise<PGlite> {
  const blob = image(kind);
  if (blob) return createPglite(undefined, undefined, { image: await blob });
  const instance = await createPglite();
  if (kind === 'migrated') await migrate(await pgliteDb(instance, false));
  return instance;
}
