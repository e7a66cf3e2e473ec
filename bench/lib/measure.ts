// Measuring a scenario under load and turning what was measured into a row of the table: the warm-up and the
// measurement, the sanity check before it, the comparison with a baseline and the latency targets.
import { readFileSync } from 'node:fs';
import type { Backend, Bench } from './context.js';
import { type CpuSplit, cpuSplitDuring, formatCpuSplit } from './cpu-split.js';
import type { Dataset } from './dataset.js';
import { type HttpRequest, type LoadResult, runLoad } from './load.js';
import type { ServerProcess } from './procs.js';
import type { Row } from './report.js';

/** A load's result, how busy the machine was before it, and where the CPU went during it. */
export type Measured = LoadResult & { busy: number | null; cpu: CpuSplit | null };

/** The servers of one backend's phase: the baselines and Trellis side by side, on the same data set. */
export interface Servers {
  backend: Backend;
  baselines: ServerProcess;
  trellis: ServerProcess;
  ds: Dataset;
}

export const auth = (token: string) => ({ authorization: `Bearer ${token}` });
export const jsonHeaders = (token?: string): Record<string, string> => ({
  'content-type': 'application/json',
  ...(token ? auth(token) : {}),
});
export const noteBody = (k: number) =>
  JSON.stringify({ type: 'Note', data: { title: `Bench note ${k}`, text: 'created by the benchmark', rank: k } });

/** Warm up (JIT, prepared statements, caches), then measure. */
export async function measure(
  bench: Bench,
  what: string,
  baseUrl: string,
  requests: HttpRequest[],
  connections = bench.settings.connections,
  /** Called between the warm-up and the measurement. */
  beforeMeasuring?: () => Promise<void> | undefined,
): Promise<Measured> {
  const { settings, tool, work, log } = bench;
  // Other work on the machine skews every number: note how busy it is just before (nothing of ours runs then).
  const busy = await machineBusy(settings.quick ? 250 : 500);
  log(
    `${what}: warming up ${settings.warmupSeconds}s, measuring ${settings.seconds}s${busy !== null && busy > 0.1 ? ` (machine ${Math.round(busy * 100)}% busy beforehand)` : ''}`,
  );
  await runLoad(tool, { baseUrl, requests, connections, seconds: settings.warmupSeconds }, work);
  await beforeMeasuring?.();
  const [r, cpu] = await Promise.all([
    runLoad(tool, { baseUrl, requests, connections, seconds: settings.seconds }, work),
    cpuSplitDuring(settings.seconds),
  ]);
  const errors = r.badStatus + r.socketErrors;
  const split = cpu ? formatCpuSplit(cpu) : '';
  log(
    `${what}: ${Math.round(r.rps)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms${errors ? `, ${errors} ERRORS` : ''}${split ? `; ${split}` : ''}`,
  );
  return { ...r, busy, cpu };
}

/** Fraction of the machine's CPU time spent busy over `ms` (from /proc/stat), or null off Linux. */
async function machineBusy(ms: number): Promise<number | null> {
  const read = () => {
    try {
      const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
      const idle = f[3]! + f[4]!;
      return { idle, total: f.reduce((a, b) => a + b, 0) };
    } catch {
      return null;
    }
  };
  const a = read();
  await new Promise((r) => setTimeout(r, ms));
  const b = read();
  if (!a || !b || b.total === a.total) return null;
  return 1 - (b.idle - a.idle) / (b.total - a.total);
}

export function requestRow(scenario: string, backend: string, r: Measured): Row {
  const errors = r.badStatus + r.socketErrors;
  return {
    machineBusy: r.busy ?? undefined,
    cpu: r.cpu ?? undefined,
    scenario,
    backend,
    status: errors > r.requests * 0.01 ? 'failed' : 'measured',
    rps: r.rps,
    p50: r.p50,
    p99: r.p99,
    requests: r.requests,
    errors,
    met: null,
  };
}

export function compare(row: Row, baseline: Row | undefined, minRatio: number) {
  row.target = `>= ${minRatio} x ${baseline?.scenario.split(' ')[0] ?? 'baseline'}`;
  if (baseline?.status !== 'measured' || row.status !== 'measured') return;
  const base = baseline.rps ?? baseline.mibps!;
  const value = row.rps ?? row.mibps!;
  row.baseline = baseline.scenario.split(' ')[0];
  row.baselineValue = base;
  row.ratio = value / base;
  row.met = row.ratio >= minRatio;
}

/** One request before the load: the scenario must answer what it should, or its numbers would mean nothing. */
export async function check(
  url: string,
  init: RequestInit,
  expect: number,
  verify?: (body: string) => string | null,
): Promise<string | null> {
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    const body = await response.text();
    if (response.status !== expect)
      return `sanity check: ${init.method ?? 'GET'} ${new URL(url).pathname} answered ${response.status} (expected ${expect}): ${body.slice(0, 200)}`;
    return verify ? verify(body) : null;
  } catch (error) {
    return `sanity check failed: ${(error as Error).message}`;
  }
}

export function failedRow(bench: Bench, scenario: string, backend: string, note: string, target?: string): Row {
  bench.log(`${scenario} on ${backend}: ${note}`);
  return { scenario, backend, status: 'failed', note, target, met: null };
}

/** A latency target: p50 (and p99) of the measurement at or below the limits. */
export function latencyTarget(row: Row, p50: number, p99: number | null) {
  row.target = p99 === null ? `p50 <= ${p50} ms` : `p50 <= ${p50} ms, p99 <= ${p99} ms`;
  if (row.status !== 'measured' || row.p50 === undefined) return;
  row.met = row.p50 <= p50 && (p99 === null || (row.p99 ?? Infinity) <= p99);
}

/** Lists a baseline's row, once per backend (the first measurement of it). */
export function listBaseline(bench: Bench, row: Row, backend: string) {
  if (bench.listedBaselines.has(`${row.scenario}|${backend}`)) return;
  bench.listedBaselines.add(`${row.scenario}|${backend}`);
  bench.rows.push(row);
}

export interface Baseline {
  name: string;
  requests: HttpRequest[];
  check: () => Promise<string | null>;
}

/**
 * One scenario against its baseline, measured back to back (the baseline first), so that both see the same
 * machine: on a shared machine the load of the neighbours drifts over minutes, not seconds.
 */
export async function paired(
  bench: Bench,
  s: Servers,
  scenario: string,
  baseline: Baseline,
  target: { requests: HttpRequest[]; check: () => Promise<string | null>; minRatio: number; note?: string },
) {
  const problem = await baseline.check();
  const base = problem
    ? failedRow(bench, baseline.name, s.backend, problem)
    : requestRow(
        baseline.name,
        s.backend,
        await measure(bench, `${baseline.name} (${s.backend})`, s.baselines.baseUrl, baseline.requests),
      );
  listBaseline(bench, base, s.backend);
  const trouble = await target.check();
  const row = trouble
    ? failedRow(bench, scenario, s.backend, trouble)
    : requestRow(
        scenario,
        s.backend,
        await measure(bench, `${scenario} (${s.backend})`, s.trellis.baseUrl, target.requests),
      );
  compare(row, base, target.minRatio);
  if (target.note) row.note = [row.note, target.note].filter(Boolean).join('; ');
  bench.rows.push(row);
}
