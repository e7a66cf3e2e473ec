// Freezing a test's own server with SIGSTOP, as an operator's worst day does (a VM paused, a process stopped, a
// swap storm): the kernel still accepts connections and buffers what is sent, but nothing answers until SIGCONT.
// Only servers a test started itself (scripts/pg-cluster.ts, scripts/ceph-cluster.ts) are frozen, by process id.
import { readdirSync, readFileSync } from 'node:fs';

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, the fields after the last ')' do not.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null; // gone meanwhile
  }
}

const processIds = () =>
  readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);

/**
 * Freezes the PostgreSQL server of the cluster in `dataDir`: its postmaster first (so that it starts no process
 * meanwhile), then every process it started.
 */
export function freezePostgres(dataDir: string): () => void {
  const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  const thawPostmaster = freeze([postmaster]);
  const thawChildren = freeze(processIds().filter((pid) => parentOf(pid) === postmaster));
  return () => {
    thawChildren();
    thawPostmaster();
  };
}

/** The radosgw process of the Ceph cluster in `dir` (its command line names the cluster's configuration). */
export function radosgwProcess(dir: string): number {
  for (const pid of processIds()) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (args[0]?.endsWith('radosgw') && args.some((arg) => arg.startsWith(`${dir}/`))) return pid;
  }
  throw new Error(`no radosgw of ${dir} is running`);
}

/** Stops `pids` (SIGSTOP) until the returned function continues them (SIGCONT); calling it again does nothing. */
export function freeze(pids: number[]): () => void {
  for (const pid of pids) process.kill(pid, 'SIGSTOP');
  let frozen = true;
  return () => {
    if (!frozen) return;
    frozen = false;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone meanwhile
      }
    }
  };
}
