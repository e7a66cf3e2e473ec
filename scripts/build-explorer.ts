// Builds Trellis Explorer (explorer/ -> explorer/dist) with Vite, when the build is missing or was made from other
// sources (scripts/freshness.js); `--force` builds anyway. Run by scripts/build.js (`npm ci`, `npm run build`,
// `npm start`) and by the browser tests, so a fresh clone serves a working /explorer without a separate step.

import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Log } from './debian-packages.js';
import { digestOf, markBuilt, ROOT, staleDigest, TARGETS } from './freshness.js';
import { isMain } from './process-tools.js';

const explorer = join(ROOT, 'explorer');

/** Builds unless the build was made from the sources as they are; true when it built. */
export async function buildExplorer({
  force = false,
  log = (m) => process.stderr.write(`[explorer] ${m}\n`),
}: {
  force?: boolean;
  log?: Log;
} = {}): Promise<boolean> {
  const digest = force ? digestOf(TARGETS.explorer) : staleDigest(TARGETS.explorer);
  if (digest === null) return false;
  const { build } = await import('vite');
  const started = Date.now();
  await build({
    root: explorer,
    base: '/explorer/',
    configFile: false,
    logLevel: 'warn',
    build: {
      outDir: join(explorer, 'dist'),
      emptyOutDir: true,
      // The diagram library is its own chunk, loaded only by the views that draw a diagram, and it is large.
      chunkSizeWarningLimit: 2048,
      // Not emitted: whatever is under dist is served publicly, and the sources are in the repository.
      sourcemap: false,
    },
  });
  precompress(join(explorer, 'dist'));
  markBuilt(TARGETS.explorer, digest);
  log(`built explorer/dist in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return true;
}

const COMPRESSIBLE = /\.(html|js|css|svg|json|txt)$/;

/**
 * Writes `<file>.br` and `<file>.gz` beside every text asset, at the highest levels: done once at build time, so
 * the service sends compressed bytes (@fastify/static's preCompressed) without compressing on each request.
 */
function precompress(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !COMPRESSIBLE.test(entry.name)) continue;
    const path = join(entry.parentPath, entry.name);
    const bytes = readFileSync(path);
    writeFileSync(
      `${path}.br`,
      brotliCompressSync(bytes, {
        params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
      }),
    );
    writeFileSync(`${path}.gz`, gzipSync(bytes, { level: 9 }));
  }
}

if (isMain(import.meta.url)) {
  const rebuilt = await buildExplorer({ force: process.argv.includes('--force') });
  if (!rebuilt) process.stderr.write('[explorer] explorer/dist is up to date\n');
}
