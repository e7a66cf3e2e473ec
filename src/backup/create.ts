// backup:create: writes the whole database as a backup folder (format.ts).
//
// Consistent: everything is read inside ONE repeatable-read, read-only transaction, i.e. from one snapshot, however
// long the backup takes and whatever is written meanwhile. Streaming: elements are read in pages by keyset
// pagination over the primary key (WHERE id > last ORDER BY id LIMIT n), and each page is written out before the
// page after next is read, so memory does not grow with the database. Atomic: the folder is assembled under a
// temporary name beside the target and renamed into place at the end; a failed backup leaves no half folder.

import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../blob/blob-store.js';
import { blobTag } from '../domain/files/files.js';
import type { FileMeta } from '../domain/files/types.js';
import type { Db, Queryable } from '../storage/db.js';
import { beginSnapshot, countElements, type DumpRow, dumpPage } from '../storage/queries/backup.js';
import { isoTime } from '../values.js';
import {
  BACKUP_FORMAT_VERSION,
  BACKUP_VERSION,
  type BackupElement,
  type BackupSummary,
  elementPath,
  filePath,
  SUMMARY_FILE,
  serializeElement,
  summaryTime,
} from './format.js';
import { type Progress, silentProgress } from './progress.js';

export interface CreateContext {
  db: Db;
  blobs: Pick<BlobStore, 'open'>;
  now: Date;
}

export interface CreateOptions {
  progress?: Progress;
  /** Elements per page read from the database. */
  pageSize?: number;
}

export interface CreateReport {
  nodes: number;
  relations: number;
  files: number;
  warnings: string[];
  seconds: number;
}

/** The target cannot be written (exists and is not empty, or is not a directory). */
export class BackupTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupTargetError';
  }
}

/** The backup form of one stored element: what the service keeps outside `data` goes back into it. */
function toBackupElement(row: DumpRow): BackupElement {
  const data: Record<string, unknown> = { ...row.data, ...row.internal };
  data.created = isoTime(row.created);
  data.updated = isoTime(row.updated);
  if (row.password_hash !== null) data._passwordHash = row.password_hash;
  if (row.token_hash !== null) {
    data.hash = row.token_hash;
    // The tokens row decides; an EXPIRED token of a loaded backup is stored as REVOKED and keeps showing EXPIRED.
    data.state = row.token_state === 'ACTIVE' ? 'ACTIVE' : row.data.state === 'EXPIRED' ? 'EXPIRED' : 'REVOKED';
    if (row.token_expires !== null) data.expirationDate = isoTime(row.token_expires);
  }
  if (row.file !== null) {
    data.file = row.file;
    data.hasFile = true;
  }
  return row.start_id === null
    ? { type: row.type, id: row.id, data }
    : { type: row.type, id: row.id, start: row.start_id, end: row.end_id!, data };
}

async function prepareTarget(target: string): Promise<{ existedEmpty: boolean }> {
  let entries: string[];
  try {
    const info = await stat(target);
    if (!info.isDirectory()) throw new BackupTargetError(`${target} exists and is not a directory`);
    entries = await readdir(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { existedEmpty: false };
    throw error;
  }
  if (entries.length > 0) throw new BackupTargetError(`${target} is not empty; choose a new or empty directory`);
  return { existedEmpty: true };
}

export async function createBackup(
  ctx: CreateContext,
  dir: string,
  options: CreateOptions = {},
): Promise<CreateReport> {
  const began = performance.now();
  const progress = options.progress ?? silentProgress;
  const target = resolve(dir);
  const { existedEmpty } = await prepareTarget(target);
  const work = join(dirname(target), `.${basename(target)}.partial-${randomBytes(6).toString('hex')}`);
  const writer = new BackupWriter(ctx, work, progress);

  // A backup holds password and token hashes: only the account that made it may read it (the directory 0700, every
  // file 0600, as the blob store's files are).
  await mkdir(work, { recursive: true, mode: 0o700 });
  try {
    await ctx.db.transaction((tx) => writer.dump(tx, options.pageSize ?? 1000));
    const summary: BackupSummary = {
      backupCreated: summaryTime(ctx.now),
      nodeCount: writer.nodes,
      relationCount: writer.relations,
      fileCount: writer.files,
      hostname: hostname(),
      version: BACKUP_VERSION,
      backupVersion: BACKUP_FORMAT_VERSION,
    };
    await writeFile(join(work, SUMMARY_FILE), `${JSON.stringify(summary, null, 2)}\n`, { mode: 0o600 });
    if (existedEmpty) await rmdir(target);
    await rename(work, target);
  } catch (error) {
    await rm(work, { recursive: true, force: true });
    throw error;
  }
  progress.done();
  const { nodes, relations, files, warnings } = writer;
  return { nodes, relations, files, warnings, seconds: (performance.now() - began) / 1000 };
}

/** Writes the elements of one snapshot, and their file bytes, into the folder `work`. */
class BackupWriter {
  nodes = 0;
  relations = 0;
  files = 0;
  readonly warnings: string[] = [];
  private readonly madeDirs = new Set<string>();

  constructor(
    private readonly ctx: CreateContext,
    private readonly work: string,
    private readonly progress: Progress,
  ) {}

  /** Every element of the database, page by page, in the snapshot transaction `tx`. */
  async dump(tx: Queryable, pageSize: number): Promise<void> {
    await beginSnapshot(tx);
    const counts = await countElements(tx);
    this.progress.start('backing up', counts.nodes + counts.relations);
    await mkdir(join(this.work, 'node'));
    await mkdir(join(this.work, 'relation'));
    let page = await dumpPage(tx, null, pageSize);
    while (page.length > 0) {
      // The query for the next page goes out before this page is written: the server reads while we write.
      const next = dumpPage(tx, page[page.length - 1]!.id, pageSize);
      next.catch(() => {}); // awaited below; this only keeps a failure from being reported as unhandled first
      for (const row of this.writePage(page)) await this.copyBlob(row);
      page = await next;
    }
  }

  private warn(line: string): void {
    this.warnings.push(line);
    this.progress.note(`warning: ${line}`);
  }

  private ensureDir(path: string): void {
    const d = dirname(path);
    if (this.madeDirs.has(d)) return;
    mkdirSync(d, { recursive: true });
    this.madeDirs.add(d);
  }

  // Element files are small: written synchronously, which is several times faster than through fs.promises (as
  // for reading in load.ts). File bytes can be large and are copied asynchronously.
  private writePage(rows: DumpRow[]): Array<DumpRow & { file: FileMeta }> {
    const withFiles: Array<DumpRow & { file: FileMeta }> = [];
    for (const row of rows) {
      const path = join(this.work, elementPath(row.start_id !== null, row.id));
      this.ensureDir(path);
      writeFileSync(path, serializeElement(toBackupElement(row)), { mode: 0o600 });
      if (row.start_id === null) this.nodes++;
      else this.relations++;
      if (row.file !== null) withFiles.push(row as DumpRow & { file: FileMeta });
    }
    this.progress.tick(rows.length);
    return withFiles;
  }

  private async copyBlob(row: DumpRow & { file: FileMeta }): Promise<void> {
    const out = join(this.work, filePath(row.id));
    this.ensureDir(out);
    const blob = await this.ctx.blobs.open(row.id, undefined, blobTag(row.file));
    if (!blob) {
      this.warn(
        `element ${row.id} has file metadata but the blob store holds no bytes for it; its file is missing from the backup`,
      );
      return;
    }
    await pipeline(blob.stream, createWriteStream(out, { flags: 'wx', mode: 0o600 }));
    this.files++;
    // Blob bytes live outside the database snapshot: a file replaced while the backup ran shows as a new length.
    const size = (await stat(out)).size;
    if (size !== row.file.contentLength)
      this.warn(
        `the file of element ${row.id} changed while the backup ran (${size} bytes, metadata says ${row.file.contentLength})`,
      );
  }
}
