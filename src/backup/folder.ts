// Reading a backup folder: the element and file paths below it (any sub-folder structure), its summary, and the
// bytes of its files. Only regular files and folders inside the backup folder are ever opened: a symbolic link could
// lead out of it (a secret becoming an element's file), and a named pipe or a device would block the reader, and with
// it a server that runs the load for the CLI, until something writes to it.
import { constants as bufferConstants } from 'node:buffer';
import { closeSync, constants, type Dirent, fstatSync, lstatSync, openSync, readlinkSync, readSync } from 'node:fs';
import { lstat, readdir, realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { BackupError, parseJsonObject, preview, SUMMARY_FILE } from './format.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
const { MAX_STRING_LENGTH } = bufferConstants;
// O_NOFOLLOW refuses a symbolic link as the last part of the path; O_NONBLOCK makes opening a named pipe that
// nobody writes to return at once (a regular file reads the same with it), so that fstat can refuse it.
const OPEN_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** What lstat, fstat and readdir tell of an entry alike. */
type Entry = Pick<
  Dirent,
  'isFile' | 'isDirectory' | 'isSymbolicLink' | 'isFIFO' | 'isSocket' | 'isCharacterDevice' | 'isBlockDevice'
>;

function kindOf(entry: Entry): string {
  if (entry.isSymbolicLink()) return 'a symbolic link';
  if (entry.isFIFO()) return 'a named pipe (FIFO)';
  if (entry.isSocket()) return 'a socket';
  if (entry.isCharacterDevice() || entry.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

const refusal = (path: string, kind: string) =>
  new BackupError(path, `is ${kind}; a backup is read only from regular files and folders inside it`);
const notRegular = (path: string, entry: Entry) =>
  entry.isDirectory() ? new BackupError(path, 'is a folder, not a file') : refusal(path, kindOf(entry));

/**
 * The first `size` bytes of `fd` (fewer if it ends sooner). readFileSync would take the size anew and read a file
 * that grew since it was checked in full; this reads no more than the size that passed the check.
 */
function readUpTo(fd: number, size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size);
  let filled = 0;
  while (filled < size) {
    const read = readSync(fd, bytes, filled, size - filled, null);
    if (read === 0) break;
    filled += read;
  }
  return bytes.subarray(0, filled);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A backup folder as the load reads it. `root` is the folder resolved once (a root that is itself a symbolic link is
 * the operator's own choice and followed); below it nothing is followed.
 */
export class BackupFolder {
  /** Linux names the file behind a descriptor in /proc/self/fd; false once that turned out not to be available. */
  private procFd = true;
  private readonly inside: string;

  private constructor(readonly root: string) {
    this.inside = root.endsWith(sep) ? root : `${root}${sep}`;
  }

  /** The folder `dir` names, resolved once: a load reads the same folder however `dir`'s links change meanwhile. */
  static async at(dir: string): Promise<BackupFolder> {
    return new BackupFolder(await realpath(dir));
  }

  /** Appends the files below `rel` (a folder directly below the root) to `out`: relative paths, sorted by name. */
  async walk(rel: string, out: string[]): Promise<void> {
    let top: Entry;
    try {
      top = await lstat(join(this.root, rel));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    if (top.isFile()) throw new BackupError(rel, 'is a file, not a folder');
    if (!top.isDirectory()) throw notRegular(rel, top);
    await this.walkBelow(rel, out);
  }

  private async walkBelow(rel: string, out: string[]): Promise<void> {
    // readdir reports each entry's own type (lstat's, not the type of what a link points to).
    const entries = await readdir(join(this.root, rel), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = join(rel, entry.name);
      if (entry.isDirectory()) await this.walkBelow(path, out);
      else if (entry.name.startsWith('.'))
        continue; // .gitignore, editor files: never opened
      else if (entry.isFile()) out.push(path);
      else throw notRegular(path, entry);
    }
  }

  /**
   * Opens `rel` for reading if it is a regular file inside the folder, else a BackupError. The listing already
   * refused anything else; this closes the gap between listing and opening, where a file may have been replaced.
   */
  open(rel: string): { fd: number; size: number } {
    const path = join(this.root, rel);
    let fd: number;
    try {
      fd = openSync(path, OPEN_FLAGS);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw refusal(rel, 'a symbolic link');
      throw error;
    }
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile()) throw notRegular(rel, stats);
      this.checkInside(rel, fd);
      return { fd, size: stats.size };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /**
   * The text of the regular file `rel`, which must be valid UTF-8 (no silent U+FFFD for broken bytes). `refuseSize`
   * may refuse the file from its size (the refusal's message, or null): then not a byte of it is read.
   */
  readText(rel: string, refuseSize?: (size: number) => string | null): string {
    const { fd, size } = this.open(rel);
    let bytes: Buffer;
    try {
      // More bytes than a string can hold are refused unread whoever reads them.
      const refused =
        refuseSize?.(size) ?? (size > MAX_STRING_LENGTH ? `is too large to be read as text (${size} bytes)` : null);
      if (refused !== null) throw new BackupError(rel, refused);
      bytes = readUpTo(fd, size);
    } finally {
      closeSync(fd);
    }
    try {
      return utf8.decode(bytes);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_ENCODING_INVALID_ENCODED_DATA')
        throw new BackupError(rel, 'is not valid UTF-8');
      throw error;
    }
  }

  /** The size of `rel`, which must be a regular file (not followed if it is a link). */
  size(rel: string): number {
    const stats = lstatSync(join(this.root, rel));
    if (!stats.isFile()) throw notRegular(rel, stats);
    return stats.size;
  }

  /**
   * O_NOFOLLOW guards only the last part of a path: a folder replaced by a link after it was listed would still be
   * followed. Where the system names the file behind a descriptor, that name must lie inside the root.
   */
  private checkInside(rel: string, fd: number) {
    if (!this.procFd) return;
    let actual: string;
    try {
      actual = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      this.procFd = false;
      return;
    }
    if (!actual.startsWith(this.inside)) throw new BackupError(rel, 'leads out of the backup folder');
  }
}

/** The .json files below `dir`; anything else there is reported and skipped. */
export async function listElementFiles(
  folder: BackupFolder,
  dir: string,
  warn: (line: string) => void,
): Promise<string[]> {
  const all: string[] = [];
  await folder.walk(dir, all);
  return all.filter((path) => {
    if (path.endsWith('.json')) return true;
    warn(`${path}: ignored (not a .json file)`);
    return false;
  });
}

export function readSummary(folder: BackupFolder): Record<string, unknown> {
  let text: string;
  try {
    text = folder.readText(SUMMARY_FILE);
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
      `'${key}' is ${preview(stated)} but the backup holds ${actual} (incomplete copy?)`,
    );
}

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
