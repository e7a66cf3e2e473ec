// The file scenarios' transfers: run by bench/lib/transfer.ts in a child process while the server's RSS is sampled,
// the best of several taken, and turned into rows.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { type Bench, MiB, ROOT } from './context.js';
import { capture } from './load.js';
import { failedRow } from './measure.js';
import { sampleRss } from './procs.js';
import type { Row } from './report.js';
import type { Step as TransferStep } from './transfer.js';

export interface TransferResult {
  steps: { status: number; bytes: number; sent: number; seconds: number; body: string; location: string | null }[];
  seconds: number;
  rssGrowthMiB: number | null;
}

/** Streaming uploads/downloads, one after the other, in a child process, sampling the server's RSS meanwhile. */
export async function transfer(serverPid: number, ...steps: TransferStep[]): Promise<TransferResult> {
  const sampler = sampleRss(serverPid);
  const child = join(ROOT, 'bench/lib/transfer.ts');
  const { code, stdout, stderr } = await capture(process.execPath, [
    '--import',
    'tsx',
    child,
    JSON.stringify({ steps }),
  ]);
  const rss = sampler.stop();
  const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
  if (code !== 0 || !line) throw new Error(`transfer client failed (exit ${code}): ${stderr.trim()}`);
  const result = JSON.parse(line.slice('BENCHJSON '.length)) as Omit<TransferResult, 'rssGrowthMiB'>;
  return { ...result, rssGrowthMiB: rss ? (rss.max - rss.before) / MiB : null };
}

/**
 * The fastest of `n` runs of each transfer (the machine is shared and noisy; the slower runs measure the
 * neighbours), with the largest RSS growth seen in any of them. The transfers take turns (a baseline, then what is
 * compared with it, `n` times), so that both see the same stretch of the machine: run one after the other, a baseline
 * measured 159 MiB/s and the next one 246 MiB/s on 2026-11-23. Each run starts with nothing dirty in the page cache.
 * A failed run is returned as it is.
 */
export async function bestOfEach(n: number, ...runs: (() => Promise<TransferResult>)[]): Promise<TransferResult[]> {
  const best: (TransferResult | null)[] = runs.map(() => null);
  const failed: (TransferResult | null)[] = runs.map(() => null);
  const rss: (number | null)[] = runs.map(() => null);
  for (let i = 0; i < n; i++)
    for (const [k, run] of runs.entries()) {
      if (failed[k]) continue;
      const t = await run();
      // Untimed: write back what the run left dirty (B3 without fsync leaves a whole file in the page cache), so that
      // the next run does not pay for it: taking turns, every Trellis upload ran while B3's file was written back.
      spawnSync('sync');
      if (t.steps.some((step) => step.status >= 400)) {
        failed[k] = t;
        continue;
      }
      if (t.rssGrowthMiB !== null) rss[k] = Math.max(rss[k] ?? 0, t.rssGrowthMiB);
      if (!best[k] || t.seconds < best[k]!.seconds) best[k] = t;
    }
  return runs.map((_, k) => failed[k] ?? { ...best[k]!, rssGrowthMiB: rss[k] ?? null });
}

/** `expect`: the statuses each step may answer (the last entry applies to every later step too). */
export function transferRow(
  bench: Bench,
  scenario: string,
  backend: string,
  t: TransferResult,
  expect: number[][],
): Row {
  const expectBytes = bench.settings.fileBytes;
  const moved = t.steps.reduce((sum, s) => sum + s.bytes + s.sent, 0);
  const wrong = t.steps.findIndex((s, i) => !(expect[Math.min(i, expect.length - 1)] ?? []).includes(s.status));
  const mibps = expectBytes / MiB / t.seconds;
  const statuses = t.steps.map((s) => s.status).join(',');
  bench.log(
    `${scenario} on ${backend}: status ${statuses}, ${mibps.toFixed(0)} MiB/s, RSS growth ${t.rssGrowthMiB?.toFixed(1)} MiB`,
  );
  if (wrong >= 0 || moved < expectBytes) {
    const step = t.steps[wrong] ?? t.steps[t.steps.length - 1]!;
    return failedRow(
      bench,
      scenario,
      backend,
      `step ${wrong + 1} answered ${step.status}, ${moved} bytes moved: ${step.body.slice(0, 200)}`,
    );
  }
  return { scenario, backend, status: 'measured', mibps, rssGrowthMiB: t.rssGrowthMiB ?? undefined, met: null };
}

/** The file targets hold both a throughput ratio and an RSS ceiling. */
export function withRss(row: Row) {
  row.target = `${row.target}, RSS <= 64 MiB`;
  if (row.status === 'measured' && row.rssGrowthMiB !== undefined && row.rssGrowthMiB > 64) row.met = false;
}
