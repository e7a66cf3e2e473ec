// The embedded backend: PGlite (PostgreSQL compiled to WASM, in-process), persisted in DATA_DIR/db.
import { readdir, stat, statfs } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { auto_explain } from '@electric-sql/pglite/contrib/auto_explain';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';
import { EMBEDDED_CACHE_MIB, MiB } from '../config/schema.js';
import { ACCESS_EPOCH_CHANNEL, SessionAccessEpoch } from './access-decisions.js';
import { type Db, poolDb, SESSION_SETTINGS, type StatementBudget } from './db.js';
import { DurableNodeFS, embeddedStartParams, syncTree } from './pglite-durable.js';
import { PgliteSocket, type PgliteWire } from './pglite-socket.js';
import {
  EMBEDDED_BUDGET_SETTINGS,
  type EmbeddedBudget,
  type EmbeddedDatabaseAborted,
  keepPostgresLog,
  localWire,
  PostgresLog,
} from './pglite-wire.js';

// auto_explain times the statements of a budgeted transaction (pglite-wire.ts, EmbeddedBudget).
const pgliteExtensions = { pg_trgm, auto_explain };

/**
 * Opens (creating when absent) a PGlite database in `dataDir`, or in memory when `dataDir` is undefined, with a page
 * cache (shared_buffers) of `cacheMiB` (PGlite's default, 128 MiB, when undefined). In `dataDir` and `durable`, a
 * commit returns once its WAL is on stable storage (pglite-durable.ts); a database in memory has no disk to sync.
 * `image`, a data directory dumped by `dumpDataDir`, is a new database's content instead of a fresh initdb.
 */
export async function createPglite(
  dataDir?: string,
  cacheMiB?: number,
  { durable = true, image }: { durable?: boolean; image?: Blob } = {},
): Promise<PGlite> {
  const onDisk = dataDir !== undefined && durable;
  const startParams = embeddedStartParams(PGlite.defaultStartParams, onDisk);
  if (cacheMiB !== undefined) startParams.push('-c', `shared_buffers=${cacheMiB}MB`);
  const log = new PostgresLog();
  const fs = onDisk ? { fs: new DurableNodeFS(dataDir) } : {};
  const loaded = image === undefined ? {} : { loadDataDir: image };
  const instance = new PGlite({
    dataDir,
    ...fs,
    extensions: pgliteExtensions,
    onStderr: log.write,
    startParams,
    ...loaded,
  });
  try {
    await instance.waitReady;
  } catch (error) {
    // PostgreSQL left a timer of its start running, which would keep the process alive for minutes.
    try {
      (instance as unknown as { mod?: { _clear_setitimer?: () => void } }).mod?._clear_setitimer?.();
    } catch {
      // The module may be past calling; the timer then only delays the exit.
    }
    // PGlite says only that it failed; PostgreSQL's own last line says why (a full disk, a damaged data directory).
    if (dataDir !== undefined && log.lastProblem !== null)
      throw new EmbeddedStartFailed(dataDir, log.lastProblem, error);
    throw error;
  }
  keepPostgresLog(instance, log);
  if (onDisk) await syncTree(dataDir);
  return instance;
}

/**
 * PostgreSQL's WAL segment in PGlite (initdb's default): a new one is written in full when the last fills, so a disk
 * with less than this free stops the embedded database at its next segment (PostgreSQL PANICs).
 */
const WAL_SEGMENT_BYTES = 16 * MiB;

/** A failure that stopped the embedded database, told for the operator: why, and the process's exit code. */
export interface EmbeddedFailureReport {
  message: string;
  /** EX_IOERR (74) when the disk is full, else EX_SOFTWARE (70). */
  exitCode: number;
}

/**
 * Why the embedded database in `dataDir` aborted or did not start: when its filesystem is full, how much to free
 * (a WAL segment to start again, and `minFreeBytes`, storage.minFreeSpaceInBytes, for writes to be taken).
 */
export async function embeddedFailureReport(
  error: EmbeddedDatabaseAborted | EmbeddedStartFailed,
  dataDir: string,
  minFreeBytes: number,
): Promise<EmbeddedFailureReport> {
  const available = await statfs(dataDir).then(
    (space) => space.bavail * space.bsize,
    () => null,
  );
  const said = error.postgresSaid;
  const what = error instanceof EmbeddedStartFailed ? `did not start` : 'stopped';
  const full =
    /No space left on device|Disk quota exceeded/i.test(said ?? '') || (available ?? Infinity) < WAL_SEGMENT_BYTES;
  if (!full)
    return {
      message: `the embedded database in ${dataDir} ${what}${said ? ` (PostgreSQL: ${said})` : ''}; start the service again`,
      exitCode: 70,
    };
  const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
  const needed =
    minFreeBytes > 0
      ? `${mib(WAL_SEGMENT_BYTES + minFreeBytes)} free (one WAL segment, and storage.minFreeSpaceInBytes for writes)`
      : `${mib(WAL_SEGMENT_BYTES)} free (one WAL segment)`;
  return {
    message:
      `the embedded database in ${dataDir} ${what}: its disk is full${said ? ` (PostgreSQL: ${said})` : ''}; ` +
      `${available === null ? '' : `${mib(available)} free there. `}Make at least ${needed} and start the service again`,
    exitCode: 74,
  };
}

/** PostgreSQL refused to start on the embedded database's folder; `postgresSaid` is its last PANIC or FATAL line. */
export class EmbeddedStartFailed extends Error {
  constructor(
    readonly dataDir: string,
    readonly postgresSaid: string,
    cause: unknown,
  ) {
    super(`the embedded database in ${dataDir} did not start: ${postgresSaid}`, { cause });
    this.name = 'EmbeddedStartFailed';
  }
}

/**
 * The page cache for `database.embeddedCacheSizeInMiB: auto`: the database's size and a quarter more for growth, in
 * steps of 64 MiB, at least PostgreSQL's default (128 MiB), at most an eighth of the memory this process may use
 * and EMBEDDED_CACHE_MIB.max.
 *
 * Why: PGlite's cache misses are file reads through Emscripten's file system. The cost is memory, taken at start,
 * hence the eighth of memory as the ceiling (docs/decisions/017-embedded-cache-size.md).
 */
export function embeddedCacheMiB(databaseBytes: number, memoryBytes: number): number {
  const step = 64;
  const wanted = Math.ceil((databaseBytes * 1.25) / MiB / step) * step;
  const ceiling = Math.min(EMBEDDED_CACHE_MIB.max, Math.floor(memoryBytes / 8 / MiB / step) * step);
  return Math.max(EMBEDDED_CACHE_MIB.default, Math.min(wanted, ceiling));
}

/** The memory this process may use: the machine's, or less under a cgroup limit. */
function processMemoryBytes(): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  return constrained > 0 ? Math.min(constrained, totalmem()) : totalmem();
}

/** Bytes of the relation files of the PGlite database in `dataDir` (its `base` folder); 0 for a new database. */
export async function databaseBytes(dataDir: string): Promise<number> {
  const base = join(dataDir, 'base');
  let entries: string[];
  try {
    entries = await readdir(base, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
  let total = 0;
  for (const entry of entries) {
    // A file may go between the listing and its stat (a dropped relation): it no longer counts.
    const info = await stat(join(base, entry)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (info?.isFile()) total += info.size;
  }
  return total;
}

/** The page cache for a `database.embeddedCacheSizeInMiB` setting and the database in `dataDir`. */
export async function resolveEmbeddedCacheMiB(dataDir: string, setting: number | 'auto'): Promise<number> {
  return setting === 'auto' ? embeddedCacheMiB(await databaseBytes(dataDir), processMemoryBytes()) : setting;
}

/** Session settings: PGlite is one session, so setting them once covers every statement of every connection. */
export async function prepareSession(instance: PGlite): Promise<void> {
  await instance.exec(`LOAD 'auto_explain'`);
  for (const [key, value] of Object.entries(SESSION_SETTINGS)) await instance.exec(`SET ${key} = '${value}'`);
}

/**
 * A `pg` pool that speaks the wire protocol to PGlite through `wire` (pglite-socket.ts). One connection: PGlite is
 * one session, which runs one statement at a time, so transactions serialise. It is never closed for being idle:
 * a new connection would have to prepare every statement again (pglite-wire.ts, SESSION_RESET). `onConnect` runs on
 * each new connection before anything else does.
 */
export function pglitePool(wire: PgliteWire, onConnect?: (client: pg.ClientBase) => Promise<void>): pg.Pool {
  const pool = new pg.Pool({
    user: 'postgres',
    database: 'postgres',
    max: 1,
    idleTimeoutMillis: 0,
    stream: () => new PgliteSocket(wire),
    ...(onConnect ? { onConnect } : {}),
  });
  // An idle client that errors must not crash the process (as for PostgreSQL); the pool replaces it.
  pool.on('error', () => {});
  return pool;
}

/**
 * Follows the access epoch on a new connection (SessionAccessEpoch): unknown until a statement reads it, then kept
 * by the notifications in the connection's replies. The pool awaits this before it hands the connection out.
 */
export async function followAccessEpoch(client: pg.ClientBase, epoch: SessionAccessEpoch): Promise<void> {
  const connection = epoch.restart();
  client.on('notification', ({ channel, payload }) => {
    if (channel === ACCESS_EPOCH_CHANNEL && payload !== undefined) epoch.observe(payload);
  });
  await client.query(`LISTEN ${ACCESS_EPOCH_CHANNEL}`);
  epoch.listen(connection);
}

/**
 * Db.listen on PGlite: the one session LISTENs, and a commit's notifications arrive in the replies to that session's
 * own statements (every write of the process runs on it). A new connection LISTENs again and wakes every listener.
 */
class SessionChannels {
  private readonly listeners = new Map<string, Set<() => void>>();

  async follow(client: pg.ClientBase): Promise<void> {
    client.on('notification', ({ channel }) => {
      for (const listener of this.listeners.get(channel) ?? []) listener();
    });
    for (const channel of this.listeners.keys()) await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    for (const set of this.listeners.values()) for (const listener of set) listener();
  }

  async listen(channel: string, onNotify: () => void, run: (sql: string) => Promise<unknown>) {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      await run(`LISTEN "${channel.replaceAll('"', '""')}"`);
    }
    set.add(onNotify);
    return async () => {
      set.delete(onNotify);
    };
  }
}

/**
 * A Db on a PGlite instance, which must be its only one: the Db follows the access epoch through the notifications
 * in its own replies (SessionAccessEpoch). `owned` instances are closed with the Db. `onAbort` hears once that the
 * instance aborted (pglite-wire.ts, EmbeddedHealth): every statement fails from then on.
 */
export async function pgliteDb(
  instance: PGlite,
  owned = true,
  onAbort?: (error: EmbeddedDatabaseAborted) => void,
): Promise<Db> {
  const wire = localWire(instance);
  if (onAbort) wire.health.onAbort(onAbort);
  await prepareSession(instance);
  const sessionEpoch = new SessionAccessEpoch();
  const channels = new SessionChannels();
  const pool = pglitePool(wire, async (client) => {
    await followAccessEpoch(client, sessionEpoch);
    await channels.follow(client);
  });
  const db = poolDb('pglite', pool, {
    listen: (channel, onNotify) => channels.listen(channel, onNotify, (sql) => db.query(sql)),
    onClose: async () => {
      // Closing would run PostgreSQL's shutdown inside the module that aborted: nothing more is called there.
      if (owned && wire.health.aborted === null) await instance.close();
    },
    budget: embeddedBudget(wire.budget),
  });
  return { ...db, sessionEpoch };
}

/** The statement budget on PGlite: statement_timeout would be ignored (pglite-wire.ts, EmbeddedBudget). */
const embeddedBudget = (budget: EmbeddedBudget): StatementBudget => ({
  begin: () => `BEGIN; ${EMBEDDED_BUDGET_SETTINGS}`,
  arm: (ms) => budget.arm(ms),
  disarm: () => budget.disarm(),
});

/** Opens (creating when absent) the embedded database in `dataDir`; `durable`: database.embeddedDurable. */
export async function openPglite(
  dataDir: string,
  cache: number | 'auto' = 'auto',
  onAbort?: (error: EmbeddedDatabaseAborted) => void,
  durable = true,
): Promise<Db> {
  const instance = await createPglite(dataDir, await resolveEmbeddedCacheMiB(dataDir, cache), { durable });
  return await pgliteDb(instance, true, onAbort);
}
