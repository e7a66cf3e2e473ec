// Vitest global setup of the unit tier: the PGlite images its suites load instead of creating a database each.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { makePgliteImages } from '../helpers/pglite-images.js';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'trellis-unit-images-'));
  project.provide('pgliteImages', await makePgliteImages(dir));
  return () => rm(dir, { recursive: true, force: true });
}
