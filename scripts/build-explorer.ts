// Builds Trellis Explorer (explorer/ -> explorer/dist) with Vite, when the build is missing or older than its
// sources; `--force` builds anyway. Run by `npm run build`, by `npm start` and by the browser tests, so a fresh
// clone serves a working /explorer without a separate step.

import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Log } from './debian-packages.js';
import { isMain } from './process-tools.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const explorer = join(root, 'explorer');
const built = join(explorer, 'dist', 'index.html');

/** The newest modification time among the files that make the build (sources, this script, the lock file). */
function newestSource(): number {
  let newest = Math.max(
    statSync(fileURLToPath(import.meta.url)).mtimeMs,
    statSync(join(root, 'package-lock.json')).mtimeMs,
  );
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'dist' || entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  walk(explorer);
  return newest;
}

function builtAt(): number | null {
  try {
    return statSync(built).mtimeMs;
  } catch {
    return null;
  }
}

/** Builds unless the build is newer than every source; true when it built. */
export async function buildExplorer({
  force = false,
  log = (m) => process.stderr.write(`[explorer] ${m}\n`),
}: {
  force?: boolean;
  log?: Log;
} = {}): Promise<boolean> {
  const at = builtAt();
  if (!force && at !== null && at >= newestSource()) return false;
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
