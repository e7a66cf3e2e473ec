// Throw-away PostgreSQL clusters for tests and benchmarks.
//
//   import { startCluster, withCluster } from './scripts/pg-cluster.mjs';
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
// Plain ESM, node builtins only. Finds initdb/pg_ctl ($TRELLIS_PG_BINDIR, then
// PATH, then the highest /usr/lib/postgresql/*/bin). When they are missing and
// we are root, installs Debian's `postgresql` package with apt-get; otherwise
// throws. Each cluster lives in a fresh mkdtemp directory (data dir, unix
// socket dir and server log), listens on 127.0.0.1 on a free port, trusts every
// local connection and runs without durability (fsync=off etc.). When running
// as root, initdb/postgres run as the `postgres` system user (or `nobody`).
// Clusters are also stopped and removed on process exit, SIGINT, SIGTERM and
// SIGHUP. Progress messages go to stderr (or to the `log` callback).

import { spawn, spawnSync } from 'node:child_process';
import {
  accessSync,
  existsSync,
  constants as fsConstants,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canInstallPackages, installDebianPackages, isRoot } from './debian-packages.mjs';

const DEFAULT_SERVER_SETTINGS = {
  listen_addresses: '127.0.0.1',
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '200',
};

const defaultLog = (msg) => process.stderr.write(`[pg-cluster] ${msg}\n`);

/** Clusters that still have to be torn down; used by the exit/signal handlers. */
const live = new Set();
let handlersInstalled = false;

// ---------------------------------------------------------------------------
// Binaries
// ---------------------------------------------------------------------------

function isExecutable(file) {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function binDirIfComplete(dir) {
  if (!dir) return null;
  if (isExecutable(join(dir, 'initdb')) && isExecutable(join(dir, 'pg_ctl'))) {
    // /usr/local/bin/initdb may be a symlink to /usr/lib/postgresql/NN/bin/initdb:
    // use the real directory so postgres/pg_isready next to it are found too.
    try {
      return dirname(realpathSync(join(dir, 'initdb')));
    } catch {
      return dir;
    }
  }
  return null;
}

function versionKey(name) {
  return name.split('.').map((p) => Number.parseInt(p, 10) || 0);
}

function compareVersions(a, b) {
  const ka = versionKey(a);
  const kb = versionKey(b);
  for (let i = 0; i < Math.max(ka.length, kb.length); i++) {
    const d = (ka[i] ?? 0) - (kb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Directory holding initdb and pg_ctl, or null. */
export function findPgBinDir() {
  const fromEnv = binDirIfComplete(process.env.TRELLIS_PG_BINDIR);
  if (fromEnv) return fromEnv;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const found = binDirIfComplete(dir);
    if (found) return found;
  }
  const root = '/usr/lib/postgresql';
  let versions = [];
  try {
    versions = readdirSync(root).filter((v) => /^\d+(\.\d+)*$/.test(v));
  } catch {
    /* not installed */
  }
  versions.sort(compareVersions).reverse();
  for (const v of versions) {
    const found = binDirIfComplete(join(root, v, 'bin'));
    if (found) return found;
  }
  return null;
}

let binDirPromise = null;

/**
 * Locate (and, as root on Debian, install) the PostgreSQL server binaries.
 * Resolves to the directory containing initdb, pg_ctl and postgres.
 */
export function ensurePgBinaries({ log = defaultLog, install = true } = {}) {
  binDirPromise ??= (async () => {
    let dir = findPgBinDir();
    if (dir) return dir;
    if (!canInstallPackages() || !install) {
      throw new Error(
        'PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH, in $TRELLIS_PG_BINDIR or in /usr/lib/postgresql/*/bin. ' +
          'Install them (Debian/Ubuntu: sudo apt-get install -y postgresql) or run as root to let this script install them.',
      );
    }
    await installDebianPackages(['postgresql'], log, { recommends: true });
    dir = findPgBinDir();
    if (!dir)
      throw new Error(
        'apt-get install postgresql succeeded but initdb/pg_ctl are still not found in /usr/lib/postgresql/*/bin',
      );
    return dir;
  })();
  binDirPromise.catch(() => {
    binDirPromise = null; // allow a retry
  });
  return binDirPromise;
}

/** "15.14" from `postgres -V` ("postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)"). */
function serverVersion(binDir) {
  const r = spawnSync(join(binDir, 'postgres'), ['-V'], { encoding: 'utf8' });
  const m = /(\d+(?:\.\d+)*)/.exec(r.stdout ?? '');
  return m ? m[1] : 'unknown';
}

// ---------------------------------------------------------------------------
// Running as a non-root user
// ---------------------------------------------------------------------------

function lookupUser(name) {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  const uid = Number.parseInt(r.stdout.trim(), 10);
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  const gid = Number.parseInt(g.stdout.trim(), 10);
  return Number.isFinite(uid) && Number.isFinite(gid) ? { name, uid, gid } : null;
}

function pickRunAsUser() {
  for (const name of [process.env.TRELLIS_PG_OS_USER, 'postgres', 'nobody']) {
    if (!name) continue;
    const u = lookupUser(name);
    if (u && u.uid !== 0) return u;
  }
  throw new Error('running as root, but no non-root user (postgres, nobody) exists to run initdb/postgres as');
}

function which(cmd) {
  for (const dir of ['/usr/sbin', '/sbin', '/usr/bin', '/bin', ...(process.env.PATH ?? '').split(delimiter)]) {
    if (dir && isExecutable(join(dir, cmd))) return join(dir, cmd);
  }
  return null;
}

/** [cmd, args] that runs `file args...` as `user` (or directly when user is null). */
function asUser(user, file, args) {
  if (!user) return [file, args];
  const runuser = which('runuser');
  if (runuser) return [runuser, ['-u', user.name, '--', file, ...args]];
  const su = which('su');
  if (!su) throw new Error('running as root but neither runuser nor su is available to drop privileges');
  const quote = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`;
  return [su, ['-s', '/bin/sh', user.name, '-c', [file, ...args].map(quote).join(' ')]];
}

/** Run and capture output; resolves { code, stdout, stderr }. */
function capture(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), signal, stdout, stderr }));
  });
}

// ---------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------

/** A TCP port that is free on 127.0.0.1 right now (bind port 0, read, close). */
export function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function tcpAccepts(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tail(file, lines = 40) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no server log)';
  }
}

// ---------------------------------------------------------------------------
// Cleanup on exit / signals
// ---------------------------------------------------------------------------

function stopSync(c) {
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
function killPostmaster(c) {
  let pid;
  try {
    pid = Number.parseInt(readFileSync(join(c.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0], 10);
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

function stopAllSync() {
  for (const c of [...live]) stopSync(c);
}

function onSignal(signal) {
  stopAllSync();
  // If nobody else handles this signal, restore the default behaviour (terminate).
  if (process.listenerCount(signal) <= 1) {
    process.removeListener(signal, onSignal);
    process.kill(process.pid, signal);
  }
}

function installHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', stopAllSync);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, onSignal);
}

// ---------------------------------------------------------------------------
// Clusters
// ---------------------------------------------------------------------------

/**
 * Start a throw-away PostgreSQL cluster.
 *
 * @param {object} [options]
 * @param {(msg: string) => void} [options.log]  progress messages (default: stderr); pass () => {} for silence
 * @param {Record<string, string|number>} [options.settings]  extra/overriding server settings (-c name=value)
 * @param {string} [options.user]  database superuser name (default "postgres")
 * @param {string} [options.database]  database in the url (default "postgres")
 * @param {boolean} [options.install]  allow apt-get install as root (default true)
 * @param {string} [options.keepDir]  keep the cluster in this directory: reuse the data there when it holds a
 *   cluster (the settings apply anew at each start), shut it down cleanly on stop and leave it in place
 * @returns {Promise<{ url: string, host: string, port: number, user: string, database: string,
 *   version: string, binDir: string, dir: string, dataDir: string, socketDir: string,
 *   logFile: string, startMs: number, stop: () => Promise<void> }>}
 */
export async function startCluster({
  log = defaultLog,
  settings = {},
  user = 'postgres',
  database = 'postgres',
  install = true,
  keepDir,
} = {}) {
  const t0 = Date.now();
  const binDir = await ensurePgBinaries({ log, install });
  const tBin = Date.now();
  const version = serverVersion(binDir);
  const osUser = isRoot() ? pickRunAsUser() : null;

  // When root, the cluster must live somewhere the postgres user can reach: /tmp
  // rather than e.g. a $TMPDIR under /root.
  const base = osUser ? '/tmp' : tmpdir();
  const keep = Boolean(keepDir);
  if (keep) await mkdir(keepDir, { recursive: true });
  const dir = keep ? realpathSync(keepDir) : await mkdtemp(join(base, 'trellis-pg-'));
  const dataDir = join(dir, 'data');
  const socketDir = join(dir, 'sock');
  const logFile = join(dir, 'server.log');
  const reuse = keep && existsSync(join(dataDir, 'PG_VERSION'));
  const c = { dir, dataDir, binDir, user: osUser, stopped: false, keep };
  live.add(c);
  installHandlers();

  try {
    await mkdir(socketDir, { mode: 0o700, recursive: true });
    if (osUser) {
      await chown(dir, osUser.uid, osUser.gid);
      await chown(socketDir, osUser.uid, osUser.gid);
      await chmod(dir, 0o700);
    }

    // initdb
    if (reuse) log(`reusing the kept cluster in ${dir}`);
    const initArgs = ['-D', dataDir, '-U', user, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'];
    if (Number.parseInt(version, 10) >= 14) initArgs.push('--no-instructions');
    if (!reuse) {
      const [cmd, args] = asUser(osUser, join(binDir, 'initdb'), initArgs);
      const r = await capture(cmd, args, { cwd: dir, env: { ...process.env, LC_ALL: 'C', LANG: 'C' } });
      if (r.code !== 0) {
        throw new Error(
          `initdb failed (exit code ${r.code}${osUser ? `, running as ${osUser.name}` : ''}):\n` +
            `${r.stderr.trim() || '(no stderr)'}${r.stdout.trim() ? `\n--- stdout ---\n${r.stdout.trim()}` : ''}`,
        );
      }
    }
    const tInit = Date.now();

    // pg_ctl start, retrying with another port if ours was taken in the meantime.
    const all = { ...DEFAULT_SERVER_SETTINGS, ...settings };
    let port;
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      const opts = [`-p ${port}`, `-k '${socketDir}'`, ...Object.entries(all).map(([k, v]) => `-c ${k}=${v}`)].join(
        ' ',
      );
      const [cmd, args] = asUser(osUser, join(binDir, 'pg_ctl'), [
        '-D',
        dataDir,
        '-o',
        opts,
        '-l',
        logFile,
        '-w',
        '-t',
        '60',
        'start',
      ]);
      const r = await capture(cmd, args, { cwd: dir });
      if (r.code === 0) break;
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

    // pg_ctl -w already waited for the server; make sure it accepts TCP on 127.0.0.1 too.
    const host = '127.0.0.1';
    const isready = join(binDir, 'pg_isready');
    const deadline = Date.now() + 30000;
    for (;;) {
      let ok;
      if (isExecutable(isready)) {
        const r = await capture(isready, ['-q', '-h', host, '-p', String(port), '-U', user, '-d', database], {
          cwd: dir,
        });
        ok = r.code === 0;
      } else {
        ok = await tcpAccepts(host, port);
      }
      if (ok) break;
      if (Date.now() > deadline)
        throw new Error(
          `PostgreSQL started but does not accept connections on ${host}:${port}\n--- server log ---\n${tail(logFile)}`,
        );
      await sleep(100);
    }

    const startMs = Date.now() - t0;
    log(
      `PostgreSQL ${version} running at ${host}:${port} (${dir}; initdb ${tInit - tBin}ms, total ${startMs}ms${osUser ? `, as ${osUser.name}` : ''})`,
    );

    const url = `postgres://${encodeURIComponent(user)}@${host}:${port}/${encodeURIComponent(database)}`;
    let stopping = null;
    return {
      url,
      host,
      port,
      user,
      database,
      version,
      binDir,
      dir,
      dataDir,
      socketDir,
      logFile,
      startMs,
      stop() {
        stopping ??= (async () => {
          if (c.stopped) return;
          // Stay in `live` until done, so an exit in the middle still cleans up.
          const [cmd, args] = asUser(osUser, join(binDir, 'pg_ctl'), [
            'stop',
            '-D',
            dataDir,
            '-m',
            keep ? 'fast' : 'immediate',
            '-w',
            '-t',
            keep ? '120' : '30',
          ]);
          const r = await capture(cmd, args, { cwd: dir }).catch((e) => ({ code: 1, stderr: String(e), stdout: '' }));
          if (r.code !== 0) {
            log(`pg_ctl stop failed (exit code ${r.code}): ${(r.stderr + r.stdout).trim()}; killing the postmaster`);
            killPostmaster(c);
          }
          if (!keep) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
          c.stopped = true;
          live.delete(c);
        })();
        return stopping;
      },
    };
  } catch (err) {
    stopSync(c);
    throw err;
  }
}

/**
 * Start a cluster, call fn(cluster), always stop it. Resolves to fn's result.
 * @template T
 * @param {(cluster: Awaited<ReturnType<typeof startCluster>>) => Promise<T> | T} fn
 * @param {Parameters<typeof startCluster>[0]} [options]
 * @returns {Promise<T>}
 */
export async function withCluster(fn, options) {
  const cluster = await startCluster(options);
  try {
    return await fn(cluster);
  } finally {
    await cluster.stop();
  }
}

// `node scripts/pg-cluster.mjs` starts a cluster, prints its url and keeps it
// running until Ctrl-C (handy for manual testing and benchmarks).
function isMain() {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  const cluster = await startCluster();
  process.stdout.write(`${cluster.url}\n`);
  process.stderr.write('[pg-cluster] press Ctrl-C to stop and remove the cluster\n');
  await new Promise(() => {
    setInterval(() => {}, 1 << 30);
  });
}
