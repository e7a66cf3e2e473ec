// Where the PostgreSQL server binaries are (installing Debian's package as root when they are missing), and the
// system user that runs them when we are root (initdb and postgres refuse to run as root).

import { spawnSync } from 'node:child_process';
import { readdirSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { canInstallPackages, installDebianPackages, type Log } from './debian-packages.js';
import { isExecutable, which } from './process-tools.js';

export interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

function binDirIfComplete(dir: string | undefined): string | null {
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

function versionKey(name: string): number[] {
  return name.split('.').map((p) => Number.parseInt(p, 10) || 0);
}

function compareVersions(a: string, b: string): number {
  const ka = versionKey(a);
  const kb = versionKey(b);
  for (let i = 0; i < Math.max(ka.length, kb.length); i++) {
    const d = (ka[i] ?? 0) - (kb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Directory holding initdb and pg_ctl, or null. */
export function findPgBinDir(): string | null {
  const fromEnv = binDirIfComplete(process.env.TRELLIS_PG_BINDIR);
  if (fromEnv) return fromEnv;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const found = binDirIfComplete(dir);
    if (found) return found;
  }
  const root = '/usr/lib/postgresql';
  let versions: string[] = [];
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

let binDirPromise: Promise<string> | null = null;

/**
 * Locate (and, as root on Debian, install) the PostgreSQL server binaries.
 * Resolves to the directory containing initdb, pg_ctl and postgres.
 */
export function ensurePgBinaries({ log, install = true }: { log: Log; install?: boolean }): Promise<string> {
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
export function serverVersion(binDir: string): string {
  const r = spawnSync(join(binDir, 'postgres'), ['-V'], { encoding: 'utf8' });
  const m = /(\d+(?:\.\d+)*)/.exec(r.stdout ?? '');
  return m ? m[1]! : 'unknown';
}

function lookupUser(name: string): OsUser | null {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  const uid = Number.parseInt(r.stdout.trim(), 10);
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  const gid = Number.parseInt(g.stdout.trim(), 10);
  return Number.isFinite(uid) && Number.isFinite(gid) ? { name, uid, gid } : null;
}

/** The non-root user to run initdb and postgres as when we are root. */
export function pickRunAsUser(): OsUser {
  for (const name of [process.env.TRELLIS_PG_OS_USER, 'postgres', 'nobody']) {
    if (!name) continue;
    const u = lookupUser(name);
    if (u && u.uid !== 0) return u;
  }
  throw new Error('running as root, but no non-root user (postgres, nobody) exists to run initdb/postgres as');
}

const SYSTEM_DIRS = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];

/** [cmd, args] that runs `file args...` as `user` (or directly when user is null). */
export function asUser(user: OsUser | null, file: string, args: string[]): [string, string[]] {
  if (!user) return [file, args];
  const dirs = [...SYSTEM_DIRS, ...(process.env.PATH ?? '').split(delimiter)];
  const runuser = which('runuser', dirs);
  if (runuser) return [runuser, ['-u', user.name, '--', file, ...args]];
  const su = which('su', dirs);
  if (!su) throw new Error('running as root but neither runuser nor su is available to drop privileges');
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return [su, ['-s', '/bin/sh', user.name, '-c', [file, ...args].map(quote).join(' ')]];
}
