// Whether a build is up to date with its sources, told by a digest of their names and contents that the build
// leaves beside its output: reading the sources takes milliseconds where a compiler takes seconds, and unlike
// modification times a digest is not fooled by a touched file, a restored older copy or a renamed one.
// Plain JavaScript (type-checked from its JSDoc), so that `npm start` decides without a TypeScript loader.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * @typedef {object} Target
 * @property {string} name what it is, for the log
 * @property {string[]} inputs files and folders (relative to `root`) whose contents make the build
 * @property {string} output a file that exists once built (relative to `root`)
 * @property {string} stamp where the digest of the inputs the build was made from is kept (relative to `root`)
 */

/** @type {Record<'server' | 'explorer', Target>} */
export const TARGETS = {
  server: {
    name: 'dist',
    inputs: ['src', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'],
    output: 'dist/cli/main.js',
    stamp: 'dist/.inputs-digest',
  },
  explorer: {
    name: 'explorer/dist',
    inputs: ['explorer', 'scripts/build-explorer.ts', 'package-lock.json'],
    output: 'explorer/dist/index.html',
    // A dot file: the explorer's files are served, dot files never (src/http/explorer.ts).
    stamp: 'explorer/dist/.inputs-digest',
  },
};

/** Folders never read as inputs: build outputs and installed packages. */
const SKIPPED = new Set(['dist', 'node_modules']);

/**
 * The digest of `target`'s inputs under `root`: every file's path and contents, in a fixed order.
 * @param {Target} target
 * @param {string} [root]
 */
export function digestOf(target, root = ROOT) {
  const hash = createHash('sha256');
  /** @param {string} path */
  const add = (path) => {
    if (statSync(path).isDirectory()) {
      for (const entry of readdirSync(path).sort()) if (!SKIPPED.has(entry)) add(join(path, entry));
      return;
    }
    const bytes = readFileSync(path);
    hash.update(`${relative(root, path)}\0${bytes.length}\0`).update(bytes);
  };
  for (const input of target.inputs) if (existsSync(join(root, input))) add(join(root, input));
  return hash.digest('hex');
}

/**
 * The digest to build from when `target` is out of date, or null when its output is there and was built from the
 * inputs as they are.
 * @param {Target} target
 * @param {string} [root]
 */
export function staleDigest(target, root = ROOT) {
  const digest = digestOf(target, root);
  if (!existsSync(join(root, target.output))) return digest;
  try {
    return readFileSync(join(root, target.stamp), 'utf8') === digest ? null : digest;
  } catch {
    return digest;
  }
}

/**
 * Records that `target` was built from the inputs with `digest`, taken before the build started: a source changed
 * during the build then makes the next check build again.
 * @param {Target} target
 * @param {string} digest
 * @param {string} [root]
 */
export function markBuilt(target, digest, root = ROOT) {
  writeFileSync(join(root, target.stamp), digest);
}
