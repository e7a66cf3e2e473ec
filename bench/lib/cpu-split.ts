// Which process a scenario's CPU went to: the server under load (Trellis or the baselines), PostgreSQL, the load
// generator, everything else. On this 2-core machine a scenario is bound by whichever of them runs out first: a
// server process at about 1 core is its own single thread's limit, PostgreSQL near the cores left is the
// database's. The ratios alone cannot tell the two apart, and what a change can gain depends on it (bench/RESULTS.md).
// Read from /proc (Linux); elsewhere there is no split.
import { readdirSync, readFileSync } from 'node:fs';

/** CPU ticks per process at one moment, and which group each process belongs to. */
type Snapshot = Map<number, { group: string; ticks: number }>;

/** Cores used per group over a measurement (1.0 = one core busy all the time). */
export type CpuSplit = Record<string, number>;

// USER_HZ: the unit of utime/stime in /proc/<pid>/stat; 100 on every Linux this runs on.
const TICKS_PER_SECOND = 100;

function groupOf(pid: number, comm: string): string {
  if (comm === 'postgres' || comm === 'postmaster') return 'postgres';
  if (comm === 'wrk') return 'load';
  if (comm !== 'node' && !comm.startsWith('node')) return 'other';
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  if (cmdline.includes('bin/trellis.js')) return 'trellis';
  if (cmdline.includes('baselines.ts')) return 'baselines';
  if (cmdline.includes('autocannon-child')) return 'load';
  return 'other';
}

function snapshot(): Snapshot | null {
  let pids: number[];
  try {
    pids = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return null;
  }
  const out: Snapshot = new Map();
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // The command name is in parentheses and may contain spaces; the fields after it are space-separated.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(pid, { group: groupOf(pid, comm), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The split over a load of `seconds` that starts now: sampled inside it (from a tenth of a second after its start to
 * a tenth before its end, where there is that much), since the load generator is gone once the load has ended.
 * Null off Linux.
 */
export async function cpuSplitDuring(seconds: number): Promise<CpuSplit | null> {
  const margin = Math.min(0.1, seconds / 10);
  await sleep(margin * 1000);
  const before = snapshot();
  const started = process.hrtime.bigint();
  await sleep((seconds - 2 * margin) * 1000);
  const after = snapshot();
  if (!before || !after) return null;
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  const ticks: Record<string, number> = {};
  for (const [pid, { group, ticks: t }] of after)
    ticks[group] = (ticks[group] ?? 0) + t - (before.get(pid)?.ticks ?? 0);
  return Object.fromEntries(
    Object.entries(ticks)
      .filter(([, t]) => t > 0)
      .map(([group, t]) => [group, Math.round((t / TICKS_PER_SECOND / elapsed) * 100) / 100]),
  );
}

/** "trellis 0.98, postgres 0.47, load 0.19 cores": the groups that used at least 0.05 cores, busiest first. */
export function formatCpuSplit(split: CpuSplit): string {
  const parts = Object.entries(split)
    .filter(([, cores]) => cores >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([group, cores]) => `${group} ${cores.toFixed(2)}`);
  return parts.length === 0 ? '' : `CPU ${parts.join(', ')} cores`;
}
