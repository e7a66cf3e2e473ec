// Helpers of the backup tests: the reference dataset as data, small hand-made backups, and what is stored.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';
import { createBackup } from '../../src/backup/create.js';
import { type LoadOptions, loadBackup } from '../../src/backup/load.js';
import type { CommandIO } from '../../src/cli/io.js';
import type { Queryable } from '../../src/storage/db.js';
import type { Harness } from '../helpers/harness.js';

/**
 * The reference dataset: TRELLIS_REFERENCE_DATASET when set, else the one vendored in
 * test/fixtures/reference-dataset.tar.gz (release 0.0.28, MIT), unpacked once per test process.
 */
// Every folder made here, removed when the test file that imported this module is done, so that none pile up in
// /tmp.
const created: string[] = [];
const writers: ChildProcess[] = [];
afterAll(async () => {
  for (const writer of writers.splice(0)) writer.kill('SIGKILL');
  await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

function referenceDataset(): string {
  if (process.env.TRELLIS_REFERENCE_DATASET) return process.env.TRELLIS_REFERENCE_DATASET;
  const target = mkdtempSync(join(tmpdir(), 'trellis-reference-'));
  created.push(target);
  execFileSync('tar', [
    '-xzf',
    fileURLToPath(new URL('../fixtures/reference-dataset.tar.gz', import.meta.url)),
    '-C',
    target,
  ]);
  return join(target, 'reference-dataset');
}

export const REFERENCE = referenceDataset();
export const ANONYMOUS_USER_UUID = '2d376349-c5e2-42c8-8ce0-d6f525256cf7';

export interface FixtureElement {
  path: string;
  type: string;
  id: string;
  start?: string;
  end?: string;
  data: Record<string, any>;
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.json') ? [join(dir, e.name)] : [],
  );
}

let cached: FixtureElement[] | null = null;

/** Every element of the reference dataset, with its path relative to the dataset. */
export function referenceElements(): FixtureElement[] {
  cached ??= [...walk(join(REFERENCE, 'node')), ...walk(join(REFERENCE, 'relation'))].map((file) => ({
    path: relative(REFERENCE, file),
    ...JSON.parse(readFileSync(file, 'utf8')),
  }));
  return cached;
}

/** The element of the reference dataset at this path (relative to node/ or relation/, without .json). */
export function ref(path: string): FixtureElement {
  const found = referenceElements().find((e) => e.path === `${path}.json`);
  if (!found) throw new Error(`no reference element ${path}`);
  return found;
}

export async function counts(q: Queryable) {
  const { rows } = await q.query<{ elements: number; users: number; tokens: number }>(
    'SELECT (SELECT count(*) FROM elements) AS elements, (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM tokens) AS tokens',
  );
  return rows[0]!;
}

function loadContext(h: Harness) {
  return {
    db: h.db,
    blobs: h.services.blobs,
    identifierKey: h.config.settings.register.uniqueIdentifier,
    limits: h.config.settings.element,
    now: h.clock.now(),
  };
}

export const loadInto = (h: Harness, dir: string, options: LoadOptions = {}) =>
  loadBackup(loadContext(h), dir, options);
export const createFrom = (h: Harness, dir: string) =>
  createBackup({ db: h.db, blobs: h.services.blobs, now: h.clock.now() }, dir);

export async function tempDir(prefix = 'trellis-backup-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

/** Writes a small backup folder: `files` maps relative paths to JSON values (or raw strings). */
export async function writeBackup(files: Record<string, unknown>, summary?: Record<string, unknown>): Promise<string> {
  const dir = await tempDir();
  const nodes = Object.keys(files).filter((p) => p.startsWith('node/')).length;
  const relations = Object.keys(files).filter((p) => p.startsWith('relation/')).length;
  const all: Record<string, unknown> = {
    'summary.json': summary ?? { nodeCount: nodes, relationCount: relations, fileCount: 0, version: 'dev' },
    ...files,
  };
  for (const [path, value] of Object.entries(all)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(
      join(dir, path),
      typeof value === 'string' || Buffer.isBuffer(value) ? value : JSON.stringify(value, null, 2),
    );
  }
  return dir;
}

/** A CommandIO that records what a command prints. */
export function captureIO(interactive = false): CommandIO & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    interactive,
    cwd: process.cwd(),
    confirm: async () => false,
  };
}

/** Every file below `dir` (relative path -> bytes), for comparing two backups. */
export function readTree(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const visit = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) visit(p);
      else out.set(relative(dir, p), readFileSync(p));
    }
  };
  visit(dir);
  return out;
}

/** The end of the refusal of what is not a regular file inside a backup folder. */
export const NOT_REGULAR = 'a backup is read only from regular files and folders inside it';
/** How soon a load refuses a named pipe; a writer to the pipe comes only much later (namedPipe). */
export const REFUSED_WITHIN_MS = 5_000;

/**
 * Makes a named pipe at `path`. A reader that opens it waits for a writer; one that did so blocked its whole process.
 * A writer therefore comes after `writerDelaySeconds`, so that such a reader ends, late, rather than hang the test
 * run (and fails its time bound); it is killed when the test file is done.
 */
export function namedPipe(path: string, writerDelaySeconds = 10) {
  execFileSync('mkfifo', [path]);
  writers.push(spawn('sh', ['-c', `sleep ${writerDelaySeconds}; echo '{}' > "$1"`, 'sh', path], { stdio: 'ignore' }));
}
