// Builds Trellis Explorer (explorer/ -> explorer/dist) with Vite, when the build is missing or older than its
// sources; `--force` builds anyway. Run by `npm run build`, by `npm start` and by the browser tests, so a fresh
// clone serves a working /explorer without a separate step.

import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
      // The bundle is served by Trellis itself (no CDN), and cytoscape alone is large: one chunk is fine.
      chunkSizeWarningLimit: 2048,
      sourcemap: true,
    },
  });
  log(`built explorer/dist in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return true;
}

if (isMain(import.meta.url)) {
  const rebuilt = await buildExplorer({ force: process.argv.includes('--force') });
  if (!rebuilt) process.stderr.write('[explorer] explorer/dist is up to date\n');
}
