// Throw-away PostgreSQL clusters for tests and benchmarks.
//
//   import { startCluster, withCluster } from './scripts/pg-cluster.ts';
//   const cluster = await startCluster();          // { url, stop(), ... }
//   ...
//   await cluster.stop();                          // pg_ctl stop -m immediate + rm -rf
//
//   await withCluster(async (cluster) => { ... }); // start, run, always stop
//
//   await startCluster({ keepDir: '/var/tmp/x' }); // a kept cluster: started on the data
//                                                  // already there (initdb only the first
//                                                  // time), stopped cleanly, never removed
//
// Node builtins only. Finds initdb/pg_ctl ($TRELLIS_PG_BINDIR, then PATH, then the highest
// /usr/lib/postgresql/*/bin). When they are missing and we are root, installs Debian's `postgresql` package with
// apt-get; otherwise throws (pg-binaries.ts). Each cluster lives in a fresh mkdtemp directory (data dir, unix socket
// dir and server log), listens on 127.0.0.1 on a free port, trusts every local connection and runs without
// durability (fsync=off etc.). When running as root, initdb/postgres run as the `postgres` system user (or
// `nobody`). Clusters are also stopped and removed on process exit, SIGINT, SIGTERM and SIGHUP. Progress messages
// go to stderr (or to the `log` callback).

import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRoot, type Log } from './debian-packages.js';
import { asUser, ensurePgBinaries, type OsUser, pickRunAsUser, serverVersion } from './pg-binaries.js';
import {
  capture,
  freePort,
  isExecutable,
  isMain,
  sleep,
  tail as tailOf,
  tcpAccepts,
  waitForever,
} from './process-tools.js';

const DEFAULT_SERVER_SETTINGS: Record<string, string | number> = {
  listen_addresses: '127.0.0.1',
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '200',
};

const defaultLog: Log = (msg) => process.stderr.write(`[pg-cluster] ${msg}\n`);
const tail = (file: string, lines = 40) => tailOf(file, lines, '(no server log)');

export interface ClusterOptions {
  /** Progress messages (default: stderr); pass () => {} for silence. */
  log?: Log;
  /** Extra or overriding server settings (-c name=value). */
  settings?: Record<string, string | number>;
  /** Database superuser name (default "postgres"). */
  user?: string;
  /** Database in the url (default "postgres"). */
  database?: string;
  /** Allow apt-get install as root (default true). */
  install?: boolean;
  /**
   * Keep the cluster in this directory: reuse the data there when it holds a cluster (the settings apply anew at
   * each start), shut it down cleanly on stop and leave it in place.
   */
  keepDir?: string;
}

export interface PgCluster {
  url: string;
  host: string;
  port: number;
  user: string;
  database: string;
  version: string;
  binDir: string;
  dir: string;
  /** The cluster's data directory (its postmaster.pid names the server's process). */
  dataDir: string;
  socketDir: string;
  logFile: string;
  startMs: number;
  stop(): Promise<void>;
}

/** A cluster as the exit and signal handlers see it. */
interface Live {
  dir: string;
  dataDir: string;
  binDir: string;
  user: OsUser | null;
  stopped: boolean;
  keep: boolean;
}

/** Clusters that still have to be torn down; used by the exit/signal handlers. */
const live = new Set<Live>();
let handlersInstalled = false;

// ---------------------------------------------------------------------------
// Cleanup on exit / signals
// ---------------------------------------------------------------------------

function stopSync(c: Live): void {
  if (c.stopped) return;
  c.stopped = true;
  live.delete(c);
  try {
    const [cmd, args] = asUser(c.user, join(c.binDir, 'pg_ctl'), [
      'stop',
      '-D',
      c.dataDir,
      '-m',
      // A kept cluster runs without fsync: only a clean shutdown leaves its data whole for the next start.
      c.keep ? 'fast' : 'immediate',
      '-w',
      '-t',
      '10',
    ]);
    spawnSync(cmd, args, { stdio: 'ignore', cwd: c.dir, timeout: 15000 });
  } catch {
    /* fall through to the pid kill */
  }
  if (c.keep) return;
  killPostmaster(c);
  try {
    rmSync(c.dir, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    /* best effort */
  }
}

/** Fallback when pg_ctl stop did not work: SIGQUIT (immediate shutdown), then SIGKILL. */
function killPostmaster(c: Live): void {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(join(c.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]!, 10);
  } catch {
    return; // no pid file: not running
  }
  if (!Number.isInteger(pid) || pid <= 0) return;
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    /* gone */
  }
  const wait = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 50 && alive(); i++) Atomics.wait(wait, 0, 0, 100);
  if (alive()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

function stopAllSync(): void {
  for (const c of [...live]) stopSync(c);
}

function onSignal(signal: NodeJS.Signals): void {
  stopAllSync();
  // If nobody else handles this signal, restore the default behaviour (terminate).
  if (process.listenerCount(signal) <= 1) {
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  }
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', stopAllSync);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, onSignal);
}

// ---------------------------------------------------------------------------
// Clusters
// ---------------------------------------------------------------------------

async function initdb(c: Live, user: string, version: string): Promise<void> {
  const initArgs = ['-D', c.dataDir, '-U', user, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'];
  if (Number.parseInt(version, 10) >= 14) initArgs.push('--no-instructions');
  const [cmd, args] = asUser(c.user, join(c.binDir, 'initdb'), initArgs);
  const r = await capture(cmd, args, { cwd: c.dir, env: { ...process.env, LC_ALL: 'C', LANG: 'C' } });
  if (r.code !== 0) {
    throw new Error(
      `initdb failed (exit code ${r.code}${c.user ? `, running as ${c.user.name}` : ''}):\n` +
        `${r.stderr.trim() || '(no stderr)'}${r.stdout.trim() ? `\n--- stdout ---\n${r.stdout.trim()}` : ''}`,
    );
  }
}

/** pg_ctl start, retrying with another port if ours was taken in the meantime; resolves to the port. */
async function startServer(
  c: Live,
  socketDir: string,
  logFile: string,
  settings: Record<string, string | number>,
  log: Log,
): Promise<number> {
  const all = { ...DEFAULT_SERVER_SETTINGS, ...settings };
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const opts = [`-p ${port}`, `-k '${socketDir}'`, ...Object.entries(all).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
    const [cmd, args] = asUser(c.user, join(c.binDir, 'pg_ctl'), [
      '-D',
      c.dataDir,
      '-o',
      opts,
      '-l',
      logFile,
      '-w',
      '-t',
      '60',
      'start',
    ]);
    const r = await capture(cmd, args, { cwd: c.dir });
    if (r.code === 0) return port;
    const serverLog = tail(logFile);
    if (attempt < 3 && /could not (bind|create listen socket)|Address already in use/i.test(serverLog)) {
      log(`port ${port} was taken, retrying with another one`);
      await rm(logFile, { force: true });
      continue;
    }
    throw new Error(
      `pg_ctl start failed (exit code ${r.code}):\n${(r.stderr + r.stdout).trim()}\n--- server log (${logFile}) ---\n${serverLog}`,
    );
  }
}

/** pg_ctl -w already waited for the server; make sure it accepts TCP on `host` too. */
async function waitAccepting(c: Live, host: string, port: number, user: string, database: string, logFile: string) {
  const isready = join(c.binDir, 'pg_isready');
  const deadline = Date.now() + 30000;
  for (;;) {
    let ok: boolean;
    if (isExecutable(isready)) {
      const r = await capture(isready, ['-q', '-h', host, '-p', String(port), '-U', user, '-d', database], {
        cwd: c.dir,
      });
      ok = r.code === 0;
    } else {
      ok = await tcpAccepts(host, port);
    }
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(
        `PostgreSQL started but does not accept connections on ${host}:${port}\n--- server log ---\n${tail(logFile)}`,
      );
    await sleep(100);
  }
}

/** Stops the server (cleanly when kept), killing the postmaster when pg_ctl cannot, and removes a throw-away one. */
async function stopCluster(c: Live, log: Log): Promise<void> {
  if (c.stopped) return;
  // Stay in `live` until done, so an exit in the middle still cleans up.
  const [cmd, args] = asUser(c.user, join(c.binDir, 'pg_ctl'), [
    'stop',
    '-D',
    c.dataDir,
    '-m',
    c.keep ? 'fast' : 'immediate',
    '-w',
    '-t',
    c.keep ? '120' : '30',
  ]);
  const r = await capture(cmd, args, { cwd: c.dir }).catch((e: unknown) => ({
    code: 1,
    stderr: String(e),
    stdout: '',
  }));
  if (r.code !== 0) {
    log(`pg_ctl stop failed (exit code ${r.code}): ${(r.stderr + r.stdout).trim()}; killing the postmaster`);
    killPostmaster(c);
  }
  if (!c.keep) await rm(c.dir, { recursive: true, force: true, maxRetries: 3 });
  c.stopped = true;
  live.delete(c);
}

/** The cluster's directory: the kept one, or a fresh one where the server's user can reach it. */
async function clusterDir(keepDir: string | undefined, osUser: OsUser | null): Promise<string> {
  if (keepDir) {
    await mkdir(keepDir, { recursive: true });
    return realpathSync(keepDir);
  }
  // When root, the cluster must live somewhere the postgres user can reach: /tmp rather than e.g. a $TMPDIR under
  // /root.
  return mkdtemp(join(osUser ? '/tmp' : tmpdir(), 'trellis-pg-'));
}

/** Start a throw-away PostgreSQL cluster (or a kept one, with `keepDir`). */
export async function startCluster(options: ClusterOptions = {}): Promise<PgCluster> {
  const { log = defaultLog, settings = {}, user = 'postgres', database = 'postgres', install = true } = options;
  const t0 = Date.now();
  const binDir = await ensurePgBinaries({ log, install });
  const tBin = Date.now();
  const version = serverVersion(binDir);
  const osUser = isRoot() ? pickRunAsUser() : null;
  const keep = Boolean(options.keepDir);
  const dir = await clusterDir(options.keepDir, osUser);
  const dataDir = join(dir, 'data');
  const socketDir = join(dir, 'sock');
  const logFile = join(dir, 'server.log');
  const reuse = keep && existsSync(join(dataDir, 'PG_VERSION'));
  const c: Live = { dir, dataDir, binDir, user: osUser, stopped: false, keep };
  live.add(c);
  installHandlers();
  try {
    await mkdir(socketDir, { mode: 0o700, recursive: true });
    if (osUser) {
      await chown(dir, osUser.uid, osUser.gid);
      await chown(socketDir, osUser.uid, osUser.gid);
      await chmod(dir, 0o700);
    }
    if (reuse) log(`reusing the kept cluster in ${dir}`);
    else await initdb(c, user, version);
    const tInit = Date.now();
    const port = await startServer(c, socketDir, logFile, settings, log);
    const host = '127.0.0.1';
    await waitAccepting(c, host, port, user, database, logFile);
    const startMs = Date.now() - t0;
    log(
      `PostgreSQL ${version} running at ${host}:${port} (${dir}; initdb ${tInit - tBin}ms, total ${startMs}ms${osUser ? `, as ${osUser.name}` : ''})`,
    );
    const url = `postgres://${encodeURIComponent(user)}@${host}:${port}/${encodeURIComponent(database)}`;
    let stopping: Promise<void> | null = null;
    const stop = () => {
      stopping ??= stopCluster(c, log);
      return stopping;
    };
    return { url, host, port, user, database, version, binDir, dir, dataDir, socketDir, logFile, startMs, stop };
  } catch (err) {
    stopSync(c);
    throw err;
  }
}

/** Start a cluster, call fn(cluster), always stop it. Resolves to fn's result. */
export async function withCluster<T>(fn: (cluster: PgCluster) => Promise<T> | T, options?: ClusterOptions): Promise<T> {
  const cluster = await startCluster(options);
  try {
    return await fn(cluster);
  } finally {
    await cluster.stop();
  }
}

// `node --import tsx scripts/pg-cluster.ts` starts a cluster, prints its url and keeps it running until Ctrl-C
// (handy for manual testing and benchmarks).
if (isMain(import.meta.url)) {
  const cluster = await startCluster();
  process.stdout.write(`${cluster.url}\n`);
  process.stderr.write('[pg-cluster] press Ctrl-C to stop and remove the cluster\n');
  await waitForever();
}
