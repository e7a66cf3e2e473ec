// Durable commits on the embedded database (database.embeddedDurable). PGlite starts PostgreSQL with fsync off (-F),
// and even with it on, PostgreSQL's fsync never reached the disk: Emscripten's NODEFS, the file system that maps the
// data directory onto host files, has no fsync operation (the call succeeds and does nothing) and its fdatasync is a
// no-op. A durable database turns fsync on, gives NODEFS a real fsync, and has PostgreSQL sync its WAL with fsync
// (docs/decisions/033-embedded-durable-commits.md).
import { fsyncSync } from 'node:fs';
import { open, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { NodeFS } from '@electric-sql/pglite/nodefs';

type EmscriptenOptions = Parameters<NodeFS['init']>[1];

/** What a durable NodeFS needs of Emscripten's NODEFS: its file operations, and how it maps host errors. */
interface Nodefs {
  stream_ops: { fsync?: (stream: { nfd: number }) => number };
  tryFSOperation<T>(operation: () => T): T;
}

/**
 * The data directory on host files, where PostgreSQL's fsync is the host's fsync(2) of the same file. With it
 * PostgreSQL's own rules apply unchanged: a commit returns once its WAL is on stable storage, a checkpoint syncs the
 * data files, pg_control and the folders before it lets go of older WAL, and a failed fsync is reported as one
 * (PostgreSQL then stops rather than carry on with lost writes, data_sync_retry).
 */
export class DurableNodeFS extends NodeFS {
  override async init(...[pg, options]: Parameters<NodeFS['init']>): Promise<{ emscriptenOpts: EmscriptenOptions }> {
    const { emscriptenOpts } = await super.init(pg, options);
    const giveFsync = (mod: { NODEFS: unknown }) => {
      const nodefs = mod.NODEFS as Nodefs;
      // tryFSOperation turns a host error (EIO, ENOSPC) into the errno PostgreSQL sees from fsync.
      nodefs.stream_ops.fsync = (stream) => {
        nodefs.tryFSOperation(() => fsyncSync(stream.nfd));
        return 0;
      };
    };
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), giveFsync] } };
  }
}

/**
 * PostgreSQL's start parameters for the embedded database: PGlite's own, without fsync off when `durable`. The WAL
 * is synced with fsync(): the fdatasync() PostgreSQL would otherwise use is Emscripten's no-op, and fsync is the one
 * call that reaches the host (DurableNodeFS).
 */
export function embeddedStartParams(defaults: readonly string[], durable: boolean): string[] {
  return durable
    ? [...defaults.filter((parameter) => parameter !== '-F'), '-c', 'wal_sync_method=fsync']
    : [...defaults];
}

/**
 * Syncs every file and folder under `dir` to stable storage, as initdb does at its end, before the database takes
 * writes: PGlite writes a new database (its initdb's output) without a sync, a run with embeddedDurable false left
 * its writes unsynced, and PostgreSQL syncs only what it writes itself from then on. Files already on disk take
 * little. Several fsyncs at once share the file system's journal commits.
 */
export async function syncTree(dir: string): Promise<void> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  // The folder that holds `dir` too: its entry for `dir` (a new database's, or a template's copy renamed into place).
  const below = entries.filter((e) => e.isFile() || e.isDirectory()).map((e) => join(e.parentPath, e.name));
  const paths = [dirname(dir), dir, ...below];
  const next = paths.values();
  const worker = async () => {
    for (const path of next) {
      const handle = await open(path, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  };
  await Promise.all(Array.from({ length: SYNCS_AT_ONCE }, worker));
}

/** Bounds the files open at once for syncTree (each worker holds one). */
const SYNCS_AT_ONCE = 16;
