// Reading a backup folder: the element and file paths below it (any sub-folder structure), and its summary.
import type { Dirent } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BackupError, parseJsonObject, SUMMARY_FILE } from './format.js';

/** Appends the files below `root/rel` to `out` (relative paths, sorted by name, dot files skipped). */
export async function walk(root: string, rel: string, out: string[]): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(join(root, rel), { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(rel, entry.name);
    if (entry.isDirectory()) await walk(root, path, out);
    else if (entry.name.startsWith('.'))
      continue; // .gitignore, editor files
    else out.push(path);
  }
}

/** The .json files below `root/dir`; anything else there is reported and skipped. */
export async function listElementFiles(root: string, dir: string, warn: (line: string) => void): Promise<string[]> {
  const all: string[] = [];
  await walk(root, dir, all);
  return all.filter((path) => {
    if (path.endsWith('.json')) return true;
    warn(`${path}: ignored (not a .json file)`);
    return false;
  });
}

export async function readSummary(dir: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(join(dir, SUMMARY_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new BackupError(SUMMARY_FILE, 'missing: this is not a backup folder');
    throw error;
  }
  return parseJsonObject(SUMMARY_FILE, text);
}

/** A count the summary states must match what the folder holds (a truncated copy would not). */
export function checkCount(summary: Record<string, unknown>, key: string, actual: number) {
  const stated = summary[key];
  if (stated === undefined) return;
  if (stated !== actual)
    throw new BackupError(
      SUMMARY_FILE,
      `'${key}' is ${JSON.stringify(stated)} but the backup holds ${actual} (incomplete copy?)`,
    );
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
