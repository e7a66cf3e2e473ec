// `node scripts/build.js [--force]`: builds what is out of date (scripts/freshness.js), or everything with --force:
// dist/ from src/ (tsc), explorer/dist from explorer/ (scripts/build-explorer.ts), and the template of a new
// embedded database (src/storage/pglite-template.ts). Run by `npm ci` and `npm install` (prepare) and by
// `npm run build`; `npm start` (scripts/start.js) runs the first two before it serves, which costs a read of the
// sources when nothing changed.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { digestOf, markBuilt, ROOT, staleDigest, TARGETS } from './freshness.js';

/** @param {string} message */
const say = (message) => process.stderr.write(`[build] ${message}\n`);

/**
 * Runs node with `args` in the checkout; throws when it fails.
 * @param {string[]} args
 */
function node(args) {
  const run = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`node ${args.join(' ')} failed (${run.signal ?? `exit code ${run.status}`})`);
}

/**
 * Brings dist/ and explorer/dist up to date and, with `template`, makes the embedded database's template when
 * there is none. Throws when a build fails (tsc reports type errors as a failure).
 * @param {{ force?: boolean, template?: boolean }} [options]
 */
export async function build({ force = false, template = true } = {}) {
  const server = force ? digestOf(TARGETS.server) : staleDigest(TARGETS.server);
  if (server !== null) {
    say('compiling src/ to dist/ (tsc -p tsconfig.build.json)');
    node([join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json']);
    markBuilt(TARGETS.server, server);
  }
  // It checks and records its own freshness the same way; started only when there is something to build, because
  // the TypeScript loader it runs under takes longer than the check.
  if (force || staleDigest(TARGETS.explorer) !== null)
    node(['--import', 'tsx', join(ROOT, 'scripts/build-explorer.ts'), ...(force ? ['--force'] : [])]);
  if (template) {
    // Compiled above; a computed specifier, so that the type check does not follow it into dist/.
    const compiled = pathToFileURL(join(ROOT, 'dist/storage/pglite-template.js')).href;
    const { makeTemplate } = /** @type {{ makeTemplate(): Promise<boolean> }} */ (await import(compiled));
    if (await makeTemplate()) say('made the template of a new embedded database');
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    await build({ force: process.argv.includes('--force') });
  } catch (error) {
    say(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
