// `npm run bench [-- --quick] [-- --large]`: the performance benchmark (bench/README.md).
//
// Generates the data set, starts Trellis on a throw-away PostgreSQL server and on embedded PGlite, loads it with
// wrk (or autocannon) from a separate process, and compares every scenario with a baseline measured in the same
// run on the same machine (bench/baselines.ts). Progress goes to stderr; the table to stdout; the numbers to
// bench/results/<date>.json.
//
// Options:
//   --quick              10k-node data set, 2 s per measurement, 128 MiB files, best of 2 transfers instead of 3
//                        (a smoke run of under 3 minutes, also on a slow day of the 2-core machine)
//   --large              also what grows with the graph: searches, Cypher, a 10,000-children page, a user with 5,000
//                        grants and GET /<id>, on a 1M-node data set against the run's own size (PostgreSQL)
//   --large-nodes N      the large data set's size (default 1,000,000)
//   --large-keep DIR     keep --large's PostgreSQL cluster and data sets in DIR and reuse them in later runs
//                        (generated once, measured again and again)
//   --large-cold         --large without its warm-up (pg_prewarm, a whole cycle of each row's requests): what a server
//                        measures right after it started
//   --pg-set NAME=VALUE  a setting of the bench's PostgreSQL server (repeatable); with pg_stat_statements in
//                        shared_preload_libraries, --large reports the statements of each measurement
//   --backends a,b       postgres,pglite (default both)
//   --only REGEX         run only the scenarios whose name matches (baselines they need still run)
//   --seconds N          seconds per measurement (default 10, quick 2)
//   --connections N      concurrent connections (default 32)
//   --file-mib N         size of the file scenarios in MiB (default 1024, quick 128)
//   --tool wrk|autocannon
//   --profile            run Trellis and the baselines with --cpu-prof; the profiles are kept in
//                        bench/results/profiles-<date>/
//   --sql FILE           experiment: run this SQL on the generated database before the servers start (repeatable),
//                        e.g. a CREATE OR REPLACE of an access function, to measure a change before making it a migration
//   --generic-plans      experiment: ALTER SYSTEM SET plan_cache_mode = force_generic_plan (every session of the
//                        servers under test and of the baselines)
//   --no-build           skip `tsc -p tsconfig.build.json`
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, open, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { migrate } from '../src/storage/migrate.js';
import { openPglite } from '../src/storage/pglite.js';
import { openPostgres } from '../src/storage/postgres.js';
import { freePort, type PgCluster, startCluster, startObjectStore } from './lib/cluster.js';
import { type CpuSplit, cpuSplitDuring, formatCpuSplit } from './lib/cpu-split.js';
import {
  type Dataset,
  generateDataset,
  PROBE_CHILDREN,
  PROBE_GRANTS,
  TARGET_CHILDREN,
  TITLE_WORDS,
} from './lib/dataset.js';
import { capture, ensureLoadTool, type HttpRequest, type LoadResult, type LoadTool, runLoad } from './lib/load.js';
import { removeTree, type ServerProcess, sampleRss, startServer } from './lib/procs.js';
import { formatTable, type Row } from './lib/report.js';
import type { Step as TransferStep } from './lib/transfer.js';

type Backend = 'postgres' | 'pglite';
const MiB = 1024 * 1024;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const { values: argv } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    large: { type: 'boolean', default: false },
    backends: { type: 'string', default: 'postgres,pglite' },
    only: { type: 'string' },
    seconds: { type: 'string' },
    connections: { type: 'string' },
    'file-mib': { type: 'string' },
    tool: { type: 'string' },
    profile: { type: 'boolean', default: false },
    sql: { type: 'string', multiple: true },
    'generic-plans': { type: 'boolean', default: false },
    'large-nodes': { type: 'string' },
    'large-keep': { type: 'string' },
    'large-cold': { type: 'boolean', default: false },
    'pg-set': { type: 'string', multiple: true },
    'no-build': { type: 'boolean', default: false },
  },
});

const quick = argv.quick!;
const settings = {
  quick,
  nodes: quick ? 10_000 : 100_000,
  users: 200,
  seconds: Number(argv.seconds ?? (quick ? 2 : 10)),
  warmupSeconds: quick ? 1 : 3,
  connections: Number(argv.connections ?? 32),
  fileBytes: Number(argv['file-mib'] ?? (quick ? 128 : 1024)) * MiB,
  /** Runs of each file transfer, the fastest counts (quick: 2, to stay under 3 minutes). */
  fileTries: quick ? 2 : 3,
  backends: argv.backends!.split(',').map((b) => b.trim()) as Backend[],
};
for (const b of settings.backends) if (b !== 'postgres' && b !== 'pglite') throw new Error(`unknown backend ${b}`);
const only = argv.only ? new RegExp(argv.only, 'i') : null;
const pgSettings: Record<string, string> = Object.fromEntries(
  (argv['pg-set'] ?? []).map((kv) => {
    const at = kv.indexOf('=');
    if (at < 1) throw new Error(`--pg-set ${kv}: expected NAME=VALUE`);
    return [kv.slice(0, at), kv.slice(at + 1)];
  }),
);
const wanted = (...scenarios: string[]) => !only || scenarios.some((s) => only.test(s));

const started = Date.now();
const log = (msg: string) => {
  const s = Math.round((Date.now() - started) / 1000);
  process.stderr.write(
    `[bench ${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}] ${msg}\n`,
  );
};

const rows: Row[] = [];
const datasets: Record<string, Dataset['counts'] & { seconds: number; targets: number }> = {};
let tool: LoadTool = 'wrk';
let work = '';
let cluster: PgCluster | null = null;
const FILE_SCENARIOS = () => [
  `B3 upload ${fileLabel()}`,
  `B3 download ${fileLabel()}`,
  `upload ${fileLabel()} direct`,
  `download ${fileLabel()}`,
  `upload ${fileLabel()} resumable, 100 MiB chunks`,
];
const fileLabel = () =>
  settings.fileBytes % (1024 * MiB) === 0
    ? `${settings.fileBytes / (1024 * MiB)} GiB`
    : `${settings.fileBytes / MiB} MiB`;

// ---------------------------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------------------------

/** Warm up (JIT, prepared statements, caches), then measure. */
async function measure(
  what: string,
  baseUrl: string,
  requests: HttpRequest[],
  connections = settings.connections,
  /** Called between the warm-up and the measurement. */
  beforeMeasuring?: () => Promise<void> | undefined,
): Promise<Measured> {
  // Other work on the machine skews every number: note how busy it is just before (nothing of ours runs then).
  const busy = await machineBusy(quick ? 250 : 500);
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

/** A load's result, how busy the machine was before it, and where the CPU went during it. */
type Measured = LoadResult & { busy: number | null; cpu: CpuSplit | null };

function requestRow(scenario: string, backend: string, r: Measured): Row {
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

function compare(row: Row, baseline: Row | undefined, minRatio: number) {
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
async function check(
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

function failedRow(scenario: string, backend: string, note: string, target?: string): Row {
  log(`${scenario} on ${backend}: ${note}`);
  return { scenario, backend, status: 'failed', note, target, met: null };
}

interface TransferResult {
  steps: { status: number; bytes: number; sent: number; seconds: number; body: string; location: string | null }[];
  seconds: number;
  rssGrowthMiB: number | null;
}

/** Streaming uploads/downloads, one after the other, in a child process, sampling the server's RSS meanwhile. */
async function transfer(serverPid: number, ...steps: TransferStep[]): Promise<TransferResult> {
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
async function bestOfEach(n: number, ...runs: (() => Promise<TransferResult>)[]): Promise<TransferResult[]> {
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
function transferRow(
  scenario: string,
  backend: string,
  t: TransferResult,
  expect: number[][],
  expectBytes: number,
): Row {
  const moved = t.steps.reduce((sum, s) => sum + s.bytes + s.sent, 0);
  const wrong = t.steps.findIndex((s, i) => !(expect[Math.min(i, expect.length - 1)] ?? []).includes(s.status));
  const mibps = expectBytes / MiB / t.seconds;
  const statuses = t.steps.map((s) => s.status).join(',');
  log(
    `${scenario} on ${backend}: status ${statuses}, ${mibps.toFixed(0)} MiB/s, RSS growth ${t.rssGrowthMiB?.toFixed(1)} MiB`,
  );
  if (wrong >= 0 || moved < expectBytes) {
    const step = t.steps[wrong] ?? t.steps[t.steps.length - 1]!;
    return failedRow(
      scenario,
      backend,
      `step ${wrong + 1} answered ${step.status}, ${moved} bytes moved: ${step.body.slice(0, 200)}`,
    );
  }
  return { scenario, backend, status: 'measured', mibps, rssGrowthMiB: t.rssGrowthMiB ?? undefined, met: null };
}

// ---------------------------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------------------------

/** Node's flags for a server process under --profile (its CPU profile goes to profiles/<name>). */
const profileArgs = (name: string) =>
  argv.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(work, 'profiles', name)}`] : [];

async function startBaselines(backend: Backend, dbUrl: string | null, dataDir: string): Promise<ServerProcess> {
  const port = await freePort();
  // Profiled too, so that a scenario's profile can be read against its baseline's.
  const args = [
    ...profileArgs(`${backend}-baselines`),
    '--import',
    'tsx',
    join(ROOT, 'bench/baselines.ts'),
    '--port',
    String(port),
    '--files',
    join(dataDir, 'baseline-files'),
  ];
  args.push(...(dbUrl ? ['--database-url', dbUrl] : ['--pglite', join(dataDir, 'db')]));
  log(`starting the baselines (${backend})`);
  return startServer({
    name: 'baselines',
    command: process.execPath,
    args,
    env: process.env,
    cwd: ROOT,
    port,
    readyPath: '/b0',
    logFile: join(work, `baselines-${backend}.log`),
  });
}

async function startTrellis(
  backend: Backend,
  dbUrl: string | null,
  dataDir: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  for (const key of [
    'DATABASE_URL',
    'TRELLIS_CONFIG',
    'ANONYMOUS_USER_UUID',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
  ])
    delete env[key];
  if (dbUrl) env.DATABASE_URL = dbUrl;
  Object.assign(env, extraEnv);
  log(`starting Trellis (${backend})`);
  return startServer({
    name: 'trellis',
    command: process.execPath,
    args: [...profileArgs(backend), join(ROOT, 'bin/trellis.js'), 'serve'],
    env,
    cwd: ROOT,
    port,
    readyPath: '/instance-configuration',
    logFile: join(work, `trellis-${backend}.log`),
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------------------------

const auth = (token: string) => ({ authorization: `Bearer ${token}` });
const jsonHeaders = (token?: string): Record<string, string> => ({
  'content-type': 'application/json',
  ...(token ? auth(token) : {}),
});
const noteBody = (k: number) =>
  JSON.stringify({ type: 'Note', data: { title: `Bench note ${k}`, text: 'created by the benchmark', rank: k } });

interface Servers {
  backend: Backend;
  baselines: ServerProcess;
  trellis: ServerProcess;
  ds: Dataset;
}

/** The first measurement of each baseline per backend is listed as a row of its own. */
const listedBaselines = new Set<string>();

/**
 * One scenario against its baseline, measured back to back (the baseline first), so that both see the same
 * machine: on a shared machine the load of the neighbours drifts over minutes, not seconds.
 */
async function paired(
  s: Servers,
  scenario: string,
  baseline: { name: string; requests: HttpRequest[]; check: () => Promise<string | null> },
  target: { requests: HttpRequest[]; check: () => Promise<string | null>; minRatio: number; note?: string },
) {
  const problem = await baseline.check();
  const base = problem
    ? failedRow(baseline.name, s.backend, problem)
    : requestRow(
        baseline.name,
        s.backend,
        await measure(`${baseline.name} (${s.backend})`, s.baselines.baseUrl, baseline.requests),
      );
  if (!listedBaselines.has(`${baseline.name}|${s.backend}`)) {
    listedBaselines.add(`${baseline.name}|${s.backend}`);
    rows.push(base);
  }
  const trouble = await target.check();
  const row = trouble
    ? failedRow(scenario, s.backend, trouble)
    : requestRow(scenario, s.backend, await measure(`${scenario} (${s.backend})`, s.trellis.baseUrl, target.requests));
  compare(row, base, target.minRatio);
  if (target.note) row.note = [row.note, target.note].filter(Boolean).join('; ');
  rows.push(row);
}

async function requestScenarios(s: Servers) {
  const { ds, backend } = s;
  const b = s.baselines.baseUrl;
  const url = s.trellis.baseUrl;
  const t0 = ds.targets[0]!;

  if (backend === settings.backends[0] && wanted('B0 fixed JSON')) {
    rows.push(
      requestRow('B0 fixed JSON', backend, await measure('B0 fixed JSON', b, [{ method: 'GET', path: '/b0' }])),
    );
  }
  const b1 = {
    name: 'B1 PK SELECT',
    requests: ds.targets.map((t) => ({ method: 'GET', path: `/b1/${t.id}` })),
    check: () => check(`${b}/b1/${t0.id}`, {}, 200),
  };
  const b2 = {
    name: 'B2 INSERT',
    requests: Array.from({ length: 500 }, (_, k) => ({
      method: 'POST',
      path: '/b2',
      headers: jsonHeaders(),
      body: noteBody(k),
    })),
    check: () => check(`${b}/b2`, { method: 'POST', headers: jsonHeaders(), body: noteBody(0) }, 201),
  };

  // GET /<id>: 4 OWNS hops + 2 group hops from the caller.
  if (wanted('GET /<id>', 'B1 PK SELECT'))
    await paired(s, 'GET /<id>', b1, {
      requests: ds.targets.map((t) => ({ method: 'GET', path: `/${t.id}`, headers: auth(t.token) })),
      check: () =>
        check(`${url}/${t0.id}`, { headers: auth(t0.token) }, 200, (body) =>
          JSON.parse(body).id === t0.id ? null : `unexpected body ${body.slice(0, 200)}`,
        ),
      minRatio: backend === 'postgres' ? 0.9 : 0.8,
    });

  // The children page against the same page as one bare SELECT (what the data volume alone costs).
  const b1p = {
    name: 'B1p children page SELECT',
    requests: ds.targets.map((t) => ({ method: 'GET', path: `/b1p/${t.id}` })),
    check: () =>
      check(`${b}/b1p/${t0.id}`, {}, 200, (body) =>
        (JSON.parse(body) as { nodes: unknown[] }).nodes.length === 25 ? null : 'expected 25 nodes',
      ),
  };
  if (wanted('GET /<id>/children', 'B1p children page SELECT'))
    await paired(s, 'GET /<id>/children', b1p, {
      requests: ds.targets.map((t) => ({ method: 'GET', path: `/${t.id}/children`, headers: auth(t.token) })),
      check: () =>
        check(`${url}/${t0.id}/children`, { headers: auth(t0.token) }, 200, (body) => {
          const page = JSON.parse(body) as { totalNodes: number; nodes: unknown[] };
          return page.nodes.length === 25 && page.totalNodes === TARGET_CHILDREN
            ? null
            : `expected 25 of ${TARGET_CHILDREN} children, got ${page.nodes.length} of ${page.totalNodes}`;
        }),
      minRatio: 0.9,
      note: `page of 25 (of ${TARGET_CHILDREN})`,
    });

  // A create writes three rows (the node, its OWNS and its CREATED): its floor is those rows in one INSERT.
  const b2x3 = {
    name: 'B2x3 INSERT of 3 rows',
    requests: Array.from({ length: 500 }, (_, k) => ({
      method: 'POST',
      path: '/b2x3',
      headers: jsonHeaders(),
      body: noteBody(k),
    })),
    check: () => check(`${b}/b2x3`, { method: 'POST', headers: jsonHeaders(), body: noteBody(0) }, 201),
  };
  if (wanted('POST / node', 'B2x3 INSERT of 3 rows'))
    await paired(s, 'POST / node', b2x3, {
      requests: Array.from({ length: 500 }, (_, k) => ({
        method: 'POST',
        path: '/',
        headers: jsonHeaders(ds.users[k % ds.users.length]!.token),
        body: noteBody(k),
      })),
      check: () => check(`${url}/`, { method: 'POST', headers: jsonHeaders(t0.token), body: noteBody(0) }, 201),
      minRatio: 0.6,
    });

  if (wanted('PATCH /<id>'))
    await paired(s, 'PATCH /<id>', b2, {
      requests: ds.targets.map((t, k) => ({
        method: 'PATCH',
        path: `/${t.id}`,
        headers: jsonHeaders(t.token),
        body: JSON.stringify({ counter: k, touched: 'bench' }),
      })),
      check: () =>
        check(`${url}/${t0.id}`, { method: 'PATCH', headers: jsonHeaders(t0.token), body: '{"counter":0}' }, 204),
      minRatio: 0.4,
    });
}

/**
 * Direct upload (PUT /<id>/file, Upload-Complete: ?1) and download of one large file, and the resumable upload,
 * each right after the matching B3 transfer (plain fs streams). Best of settings.fileTries each.
 */
async function fileScenarios(s: Servers) {
  const { backend, ds } = s;
  const url = s.trellis.baseUrl;
  const b = s.baselines.baseUrl;
  const token = ds.users[0]!.token;
  const payload = join(work, 'payload.bin');
  const [b3UpName, b3DownName, upName, downName, resumableName] = FILE_SCENARIOS() as [
    string,
    string,
    string,
    string,
    string,
  ];
  const target = '>= 0.7 x B3';
  const listB3 = (row: Row) => {
    if (listedBaselines.has(`${row.scenario}|${backend}`)) return;
    listedBaselines.add(`${row.scenario}|${backend}`);
    rows.push(row);
  };
  const created = await fetch(`${url}/`, {
    method: 'POST',
    headers: jsonHeaders(token),
    body: JSON.stringify({ type: 'Attachment', data: { name: 'bench' } }),
  });
  await created.arrayBuffer();
  const location = created.headers.get('location');
  if (created.status !== 201 || !location) {
    rows.push(failedRow(upName, backend, `could not create the element (${created.status})`, target));
    return;
  }
  const fileUrl = `${url}${location}/file`;
  const fileHeaders = { ...auth(token), 'content-type': 'application/octet-stream', 'upload-complete': '?1' };
  // The file endpoints may not exist yet in this tree: a 404/405 on an element we own means "no such endpoint".
  const probe = await fetch(fileUrl, { method: 'PUT', headers: fileHeaders, body: 'probe' });
  const probeBody = await probe.text();
  if (probe.status === 404 || probe.status === 405) {
    for (const name of [upName, downName, resumableName]) {
      log(`${name} on ${backend}: not available (${probe.status})`);
      rows.push({
        scenario: name,
        backend,
        status: 'not available',
        target: `${name === resumableName ? '>= 0.6 x B3' : target}, RSS <= 64 MiB`,
        met: null,
        note: `PUT /<id>/file answered ${probe.status}`,
      });
    }
    return;
  }
  if (probe.status !== 201 && probe.status !== 204) {
    rows.push(
      failedRow(upName, backend, `probe PUT /<id>/file answered ${probe.status}: ${probeBody.slice(0, 200)}`, target),
    );
    return;
  }

  const b3Upload = () =>
    transfer(s.baselines.pid, {
      method: 'PUT',
      url: `${b}/b3/file`,
      headers: { 'content-type': 'application/octet-stream' },
      file: payload,
    });
  const tries = settings.fileTries;

  const [b3Up, direct] = await bestOfEach(tries, b3Upload, () =>
    transfer(s.trellis.pid, { method: 'PUT', url: fileUrl, headers: fileHeaders, file: payload }),
  );
  let base = transferRow(b3UpName, backend, b3Up!, [[201]], settings.fileBytes);
  listB3(base);
  const up = transferRow(upName, backend, direct!, [[201, 204]], settings.fileBytes);
  compare(up, base, 0.7);
  withRss(up);
  rows.push(up);
  // Trellis makes the file durable (fsync) before it answers; plain B3 leaves it in the page cache. The same
  // baseline with an fsync shows how much of the difference that is.
  const [synced] = await bestOfEach(tries, () =>
    transfer(s.baselines.pid, {
      method: 'PUT',
      url: `${b}/b3/file?fsync=1`,
      headers: { 'content-type': 'application/octet-stream' },
      file: payload,
    }),
  );
  const durable = transferRow(`${b3UpName} + fsync`, backend, synced!, [[201]], settings.fileBytes);
  listB3(durable);
  const againstDurable = (row: Row) => {
    if (durable.status === 'measured' && row.status === 'measured')
      row.note = [row.note, `${(row.mibps! / durable.mibps!).toFixed(2)} x B3 + fsync`].filter(Boolean).join('; ');
  };
  againstDurable(up);

  const [b3Down, download] = await bestOfEach(
    tries,
    () => transfer(s.baselines.pid, { method: 'GET', url: `${b}/b3/file`, headers: {} }),
    () => transfer(s.trellis.pid, { method: 'GET', url: fileUrl, headers: auth(token) }),
  );
  base = transferRow(b3DownName, backend, b3Down!, [[200]], settings.fileBytes);
  listB3(base);
  const down = transferRow(downName, backend, download!, [[200]], settings.fileBytes);
  compare(down, base, 0.7);
  withRss(down);
  rows.push(down);

  if (wanted(resumableName)) {
    const upload = resumableUpload(s, token);
    const [b3Again, t] = await bestOfEach(tries, b3Upload, upload.run);
    base = transferRow(b3UpName, backend, b3Again!, [[201]], settings.fileBytes);
    const row = upload.row(t!, resumableName);
    if (row) {
      compare(row, base, 0.6);
      againstDurable(row);
      withRss(row);
      rows.push(row);
    }
  }
}

/**
 * Resumable upload of the same file: POST /<id>/file with `Upload-Complete: ?0` and an empty body starts it
 * (204, `Location: /upload/<id>`), then PATCH /upload/<id> appends 100 MiB chunks at `Upload-Offset`, the last one
 * with `Upload-Complete: ?1` (201). Throughput counts every request of the sequence.
 */
function resumableUpload(s: Servers, token: string) {
  const { backend } = s;
  const url = s.trellis.baseUrl;
  const CHUNK = 100 * MiB;
  const chunks = Math.ceil(settings.fileBytes / CHUNK);
  let failed: string | null = null;
  // Each run uploads into a new element.
  const run = async (): Promise<TransferResult> => {
    const created = await fetch(`${url}/`, {
      method: 'POST',
      headers: jsonHeaders(token),
      body: JSON.stringify({ type: 'Attachment', data: { name: 'resumable' } }),
    });
    await created.arrayBuffer();
    const location = created.headers.get('location');
    if (created.status !== 201 || !location) {
      failed = `could not create the element (${created.status})`;
      return { steps: [], seconds: Infinity, rssGrowthMiB: null };
    }
    const steps: TransferStep[] = [
      { method: 'POST', url: `${url}${location}/file`, headers: { ...auth(token), 'upload-complete': '?0' } },
    ];
    for (let offset = 0; offset < settings.fileBytes; offset += CHUNK) {
      const end = Math.min(settings.fileBytes, offset + CHUNK);
      steps.push({
        method: 'PATCH',
        url: `${url}{location}`,
        headers: {
          ...auth(token),
          'content-type': 'application/partial-upload',
          'upload-offset': String(offset),
          'upload-complete': end === settings.fileBytes ? '?1' : '?0',
        },
        file: join(work, 'payload.bin'),
        start: offset,
        end,
      });
    }
    return transfer(s.trellis.pid, ...steps);
  };
  const row = (t: TransferResult, name: string): Row | null => {
    if (failed !== null) return failedRow(name, backend, failed, '>= 0.6 x B3');
    const first = t.steps[0]!;
    if (
      first.status === 404 ||
      first.status === 405 ||
      (first.status === 204 && !first.location?.startsWith('/upload/'))
    ) {
      log(`${name} on ${backend}: not available (${first.status})`);
      rows.push({
        scenario: name,
        backend,
        status: 'not available',
        target: '>= 0.6 x B3, RSS <= 64 MiB',
        met: null,
        note: `POST /<id>/file with Upload-Complete: ?0 answered ${first.status}`,
      });
      return null;
    }
    return transferRow(
      name,
      backend,
      t,
      [[204], ...Array.from({ length: chunks - 1 }, () => [204]), [201]],
      settings.fileBytes,
    );
  };
  return { run, row };
}

/** The file targets hold both a throughput ratio and an RSS ceiling. */
function withRss(row: Row) {
  row.target = `${row.target}, RSS <= 64 MiB`;
  if (row.status === 'measured' && row.rssGrowthMiB !== undefined && row.rssGrowthMiB > 64) row.met = false;
}

const SEARCH_TEXT = 'POST /search text match, 8 clients';
/** A `match` on one of the title words, each in about 2% of the tree nodes. */
const textMatchBody = (k: number) =>
  JSON.stringify({
    steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { title: TITLE_WORDS[k % TITLE_WORDS.length] } } }],
  });
/** The Cypher paths of 1 to 3 OWNS hops below a folder. */
const cypherPathBody = (id: string) =>
  JSON.stringify({
    steps: [
      {
        type: 'cypher-path-subset',
        query: 'MATCH path=(n:Folder)-[:OWNS*1..3]->(m) WHERE n.id = $id RETURN path',
        parameters: { id },
      },
    ],
  });
const searchRequest = (token: string, body: string): HttpRequest => ({
  method: 'POST',
  path: '/search',
  headers: jsonHeaders(token),
  body,
});
const SEARCH_CYPHER = 'POST /search cypher depth-3 path';

/** A latency target: p50 (and p99) of the measurement at or below the limits. */
function latencyTarget(row: Row, p50: number, p99: number | null) {
  row.target = p99 === null ? `p50 <= ${p50} ms` : `p50 <= ${p50} ms, p99 <= ${p99} ms`;
  if (row.status !== 'measured' || row.p50 === undefined) return;
  row.met = row.p50 <= p50 && (p99 === null || (row.p99 ?? Infinity) <= p99);
}

/**
 * Search scenarios (POST /search) on the whole data set:
 * - 8 concurrent clients, a `match` on the `title` text property (each title word is in about 2% of the tree
 *   nodes), as the users who reach the GET targets (the access filter does real work: most matches belong to
 *   other groups' trees);
 * - one client, a `cypher-path-subset` depth-3 variable-length path from one node (a level-2 folder: 126 paths),
 *   each with implicit hydration of the results, as a client would run them.
 */
async function searchScenarios(s: Servers) {
  const { ds, backend } = s;
  const url = s.trellis.baseUrl;
  const t0 = ds.targets[0]!;
  const results = (body: string) => (JSON.parse(body) as { results: unknown[] }).results.length;
  if (wanted(SEARCH_TEXT)) {
    const requests = ds.targets.map((t, k) => searchRequest(t.token, textMatchBody(k)));
    const problem = await check(
      `${url}/search`,
      { method: 'POST', headers: jsonHeaders(t0.token), body: textMatchBody(0) },
      200,
    );
    const row = problem
      ? failedRow(SEARCH_TEXT, backend, problem)
      : requestRow(SEARCH_TEXT, backend, await measure(`${SEARCH_TEXT} (${backend})`, url, requests, 8));
    latencyTarget(row, 20, 80);
    row.note = `${ds.counts.nodes.toLocaleString('en-US')} nodes; page of 25 hydrated`;
    rows.push(row);
  }
  if (wanted(SEARCH_CYPHER)) {
    // From a level-2 folder: 2 + 4 + 4 x 30 paths of 1 to 3 OWNS hops, 253 elements to hydrate.
    const expected = 1 + 2 * (2 + 4 + 4 * TARGET_CHILDREN);
    const requests = ds.targets.map((t) => searchRequest(t.token, cypherPathBody(t.grandparent)));
    const problem = await check(
      `${url}/search`,
      { method: 'POST', headers: jsonHeaders(t0.token), body: cypherPathBody(t0.grandparent) },
      200,
      (body) => (results(body) === expected ? null : `expected ${expected} elements, got ${results(body)}`),
    );
    // The issue gives this target without a client count (the text match names 8): latency, one client.
    const row = problem
      ? failedRow(SEARCH_CYPHER, backend, problem)
      : requestRow(SEARCH_CYPHER, backend, await measure(`${SEARCH_CYPHER} (${backend})`, url, requests, 1));
    latencyTarget(row, 20, null);
    row.note = `1 client; from a level-2 folder: ${expected} elements hydrated`;
    rows.push(row);
  }
}

/**
 * The worst element the default limits allow (element.*, SECURITY.md): 999 strings in one array, 8 distinct words
 * each, just under 64 KiB, so that the search document gets the most lexemes a write can bring. One client writes
 * it again and again while another reads an element every 20 ms: the row is the write's latency, its note the
 * cheap read's, which shows how long the write holds up everyone else (the embedded database runs one statement at
 * a time).
 */
const WORST_ELEMENT = 'POST / worst-case element';
async function worstElementScenario(s: Servers) {
  const { ds, backend } = s;
  const url = s.trellis.baseUrl;
  const t0 = ds.targets[0]!;
  const word = (i: number) => `w${i.toString(36).padStart(5, '0')}`;
  const data = {
    words: Array.from({ length: 999 }, (_, i) => Array.from({ length: 8 }, (_, k) => word(i * 8 + k)).join(' ')),
  };
  const body = JSON.stringify({ type: 'Document', data });
  const problem = await check(`${url}/`, { method: 'POST', headers: jsonHeaders(t0.token), body }, 201);
  if (problem) return rows.push(failedRow(WORST_ELEMENT, backend, problem, 'p50 <= 100 ms'));
  const writes: number[] = [];
  const probes: number[] = [];
  const until = Date.now() + Math.min(settings.seconds, 10) * 1000;
  const probe = (async () => {
    while (Date.now() < until) {
      const started = performance.now();
      await fetch(`${url}/${t0.id}`, { headers: auth(t0.token) }).then((r) => r.arrayBuffer());
      probes.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  while (Date.now() < until) {
    const started = performance.now();
    const r = await fetch(`${url}/`, { method: 'POST', headers: jsonHeaders(t0.token), body });
    await r.arrayBuffer();
    if (r.status !== 201) return rows.push(failedRow(WORST_ELEMENT, backend, `answered ${r.status}`, 'p50 <= 100 ms'));
    writes.push(performance.now() - started);
  }
  await probe;
  const pct = (list: number[], q: number) =>
    [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(q * list.length))]!;
  const row: Row = {
    scenario: WORST_ELEMENT,
    backend,
    status: 'measured',
    p50: pct(writes, 0.5),
    p99: pct(writes, 0.99),
    requests: writes.length,
    met: null,
  };
  latencyTarget(row, 100, null);
  row.note = `${Buffer.byteLength(body)} bytes, 999 items, 7,992 words; meanwhile GET /<id> p50 ${pct(probes, 0.5).toFixed(1)} ms, p99 ${pct(probes, 0.99).toFixed(1)} ms`;
  log(`${WORST_ELEMENT} on ${backend}: p50 ${row.p50!.toFixed(1)} ms; ${row.note}`);
  rows.push(row);
}

/**
 * --large: what grows with the graph. The same requests on the data set of the run (settings.nodes) and on one of
 * `--large-nodes` (1M), each in its own database of the PostgreSQL server and with the probes of dataset.ts: the text
 * match (8 clients), the Cypher depth-3 path, the children of a folder with 10,000 children (the first page and one
 * in the middle), GET / and GET /<id> of a user with 5,000 grants, and GET /<id> of the 4+2-hop targets; one client
 * each but the text match (latency, not throughput). Targets: search and Cypher p50 <= 20 ms on the large set, every
 * other p50 there <= 1.5 x its p50 on the smaller one.
 */
const largeLabel = (nodes: number) => (nodes >= 1_000_000 ? `${nodes / 1_000_000}M` : `${Math.round(nodes / 1000)}k`);

interface LargeRequest {
  name: string;
  connections: number;
  requests: (ds: Dataset) => HttpRequest[];
  /** A latency target of its own (p50 ms) instead of the growth target. */
  p50Limit?: number;
}

const LARGE_REQUESTS: LargeRequest[] = [
  {
    name: 'POST /search text match, 8 clients',
    connections: 8,
    p50Limit: 20,
    requests: (ds) => ds.targets.map((t, k) => searchRequest(t.token, textMatchBody(k))),
  },
  {
    name: 'POST /search cypher depth-3 path',
    connections: 1,
    p50Limit: 20,
    requests: (ds) => ds.targets.map((t) => searchRequest(t.token, cypherPathBody(t.grandparent))),
  },
  {
    name: `GET /<id>/children of ${PROBE_CHILDREN.toLocaleString('en-US')}, first page`,
    connections: 1,
    requests: (ds) => [
      { method: 'GET', path: `/${ds.probes!.anchor}/children`, headers: auth(ds.probes!.anchorToken) },
    ],
  },
  {
    name: `GET /<id>/children of ${PROBE_CHILDREN.toLocaleString('en-US')}, page ${PROBE_CHILDREN / 50}`,
    connections: 1,
    requests: (ds) => [
      {
        method: 'GET',
        path: `/${ds.probes!.anchor}/children?page=${PROBE_CHILDREN / 50}`,
        headers: auth(ds.probes!.anchorToken),
      },
    ],
  },
  {
    name: `GET / of a user with ${PROBE_GRANTS.toLocaleString('en-US')} grants`,
    connections: 1,
    requests: (ds) => [{ method: 'GET', path: '/', headers: auth(ds.probes!.granteeToken) }],
  },
  {
    name: `GET /<id> of a user with ${PROBE_GRANTS.toLocaleString('en-US')} grants`,
    connections: 1,
    requests: (ds) =>
      ds.probes!.granted.map((id) => ({ method: 'GET', path: `/${id}`, headers: auth(ds.probes!.granteeToken) })),
  },
  {
    name: 'GET /<id>, 4+2 hops',
    connections: 1,
    requests: (ds) => ds.targets.map((t) => ({ method: 'GET', path: `/${t.id}`, headers: auth(t.token) })),
  },
];

async function largeScenario() {
  const sizes = [settings.nodes, Number(argv['large-nodes'] ?? 1_000_000)];
  const p50 = new Map<string, number>();
  const keepDir = argv['large-keep'];
  // A server of its own, sized as docs/operations.md advises for the large data set, so that the other scenarios keep
  // theirs; kept in keepDir, its data sets are generated once and measured by later runs too, with each run's settings.
  const server = await startCluster(
    (msg) => log(`pg-cluster (--large): ${msg}`),
    { ...LARGE_SERVER_SETTINGS, ...pgSettings },
    keepDir,
  );
  try {
    for (const nodes of sizes) await largeSize(server, nodes, sizes, p50, keepDir);
  } finally {
    await server.stop();
  }
}

/**
 * --large's PostgreSQL: buffers that hold the 1M data set's working set (docs/operations.md, "Memory"). Huge pages
 * are PostgreSQL's default `try`: used where the machine has them reserved.
 */
const LARGE_SERVER_SETTINGS = { shared_buffers: '4GB' };

async function largeSize(
  server: PgCluster,
  nodes: number,
  sizes: number[],
  p50: Map<string, number>,
  keepDir: string | undefined,
) {
  const label = largeLabel(nodes);
  const database = `bench_large_${label.toLowerCase()}`;
  const url = server.url.replace(/\/[^/]*$/, `/${database}`);
  const dataDir = join(work, `data-${database}`);
  await mkdir(dataDir, { recursive: true });
  const kept = keepDir ? join(keepDir, `${database}.json`) : null;
  let ds: Dataset;
  if (kept && existsSync(kept)) {
    ds = JSON.parse(readFileSync(kept, 'utf8')) as Dataset;
    log(`--large: reusing the ${nodes.toLocaleString('en-US')}-node data set in ${database} (${kept})`);
  } else {
    const admin = await openPostgres(server.url, 1);
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.close();
    log(`--large: generating ${nodes.toLocaleString('en-US')} nodes and the probes in ${database}`);
    const db = await openPostgres(url);
    try {
      await migrate(db);
      ds = await generateDataset(db, { nodes, users: settings.users, probes: true }, log);
      await applyExperiments(db);
    } finally {
      await db.close();
    }
    // Written last: a data set whose generation was cut short is generated again.
    if (kept) await writeFile(kept, JSON.stringify(ds));
  }
  datasets[`postgres-${label}`] = { ...ds.counts, seconds: ds.seconds, targets: ds.targets.length };
  const stats = await statementStats(url);
  const warm = !argv['large-cold'];
  if (warm) await prewarm(url);
  const trellis = await startTrellis('postgres', url, dataDir);
  try {
    for (const scenario of LARGE_REQUESTS) {
      const name = `${scenario.name} (${label})`;
      // --only picks among these rows when it names any of them with its size (`--only grows` runs them all).
      const picked = (row: string) => sizes.some((n) => wanted(`${row} (${largeLabel(n)})`));
      if (LARGE_REQUESTS.some((r) => picked(r.name)) && !picked(scenario.name)) continue;
      const requests = scenario.requests(ds);
      const problem = await check(
        `${trellis.baseUrl}${requests[0]!.path}`,
        { method: requests[0]!.method, headers: requests[0]!.headers, body: requests[0]!.body },
        200,
      );
      if (problem) {
        rows.push(failedRow(name, 'postgres', problem));
        continue;
      }
      if (warm) {
        await stats?.reset();
        const sent = await warmCycle(name, trellis.baseUrl, requests, scenario.connections);
        const warming = await stats?.report(sent);
        if (warming) log(`${name}: per request of the warm-up ${warming}`);
      }
      const measured = await measure(name, trellis.baseUrl, requests, scenario.connections, () => stats?.reset());
      const statements = await stats?.report(measured.requests);
      const row = requestRow(name, 'postgres', measured);
      const pgCpu = measured.cpu?.postgres;
      const perRequest = [
        pgCpu !== undefined && measured.rps > 0 ? `PostgreSQL ${Math.round((pgCpu / measured.rps) * 1e6)} us CPU` : '',
        statements ?? '',
      ]
        .filter(Boolean)
        .join('; ');
      if (perRequest) log(`${name}: per request ${perRequest}`);
      const small = p50.get(scenario.name);
      if (small === undefined) {
        p50.set(scenario.name, row.p50!);
        row.note = `${(ds.counts.nodes + ds.counts.relations).toLocaleString('en-US')} elements; ${scenario.connections} client(s)`;
      } else if (scenario.p50Limit !== undefined) {
        latencyTarget(row, scenario.p50Limit, null);
        row.note = `${largeLabel(sizes[0]!)}: p50 ${small.toFixed(2)} ms`;
      } else {
        row.ratio = row.p50! / small;
        row.baseline = `${largeLabel(sizes[0]!)} p50`;
        row.target = `p50 <= 1.5 x ${largeLabel(sizes[0]!)}`;
        row.met = row.status === 'measured' ? row.ratio <= 1.5 : null;
        row.note = `${largeLabel(sizes[0]!)}: p50 ${small.toFixed(2)} ms`;
      }
      rows.push(row);
    }
  } finally {
    await trellis.stop();
    await stats?.close();
  }
  if (!keepDir) {
    const drop = await openPostgres(server.url, 1);
    await drop.query(`DROP DATABASE ${database}`);
    await drop.close();
  }
}

/**
 * --large's warm-up, part 1: the data set's tables and indexes read into shared buffers (pg_prewarm, contrib),
 * smallest first, so that what does not fit is the largest table's tail. A long-running server's buffers hold its
 * working set, and after a restart pg_prewarm's autoprewarm (on by default once the module is in
 * shared_preload_libraries) loads what they held before. Skipped when the buffers hold less than half of the data
 * set: reading it through them would leave only its last relations there.
 */
async function prewarm(url: string) {
  const db = await openPostgres(url, 1);
  try {
    const { rows: available } = await db.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm'`);
    if (available.length === 0) {
      log('--large warm-up: pg_prewarm is not available, the buffers are warmed by the requests alone');
      return;
    }
    const { rows: sizes } = await db.query<{ bytes: string; buffers: string }>(
      `SELECT sum(pg_relation_size(c.oid)) AS bytes,
              (SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers') AS buffers
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname IN ('public', 'pg_toast') AND c.relkind IN ('r', 'i', 't', 'm') AND c.relpersistence = 'p'`,
    );
    if (Number(sizes[0]!.bytes) > 2 * Number(sizes[0]!.buffers)) {
      log(
        `--large warm-up: no pg_prewarm, the data set (${Math.round(Number(sizes[0]!.bytes) / MiB)} MiB) is more than twice the buffers`,
      );
      return;
    }
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_prewarm');
    const t0 = Date.now();
    const { rows } = await db.query<{ blocks: string }>(
      `SELECT pg_prewarm(c.oid) AS blocks
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname IN ('public', 'pg_toast') AND c.relkind IN ('r', 'i', 't', 'm') AND c.relpersistence = 'p'
       ORDER BY pg_relation_size(c.oid), c.oid`,
    );
    const { rows: buffers } = await db.query<{ setting: string }>(
      `SELECT current_setting('shared_buffers') AS setting`,
    );
    const blocks = rows.reduce((sum, r) => sum + Number(r.blocks), 0);
    log(
      `--large warm-up: pg_prewarm read ${blocks.toLocaleString('en-US')} blocks (${Math.round((blocks * 8) / 1024)} MiB) into shared_buffers of ${buffers[0]?.setting} in ${((Date.now() - t0) / 1000).toFixed(1)}s`,
    );
  } finally {
    await db.close();
  }
}

/** The longest a warm-up cycle runs: the 1M text match's whole cycle would take minutes. */
const WARM_CYCLE_MS = 60_000;

/**
 * --large's warm-up, part 2: every request of a row sent once, `connections` at a time (through the server's pool as the load
 * does), a whole cycle of its targets, or as much of it as WARM_CYCLE_MS allows.
 */
async function warmCycle(what: string, baseUrl: string, requests: HttpRequest[], connections: number): Promise<number> {
  const t0 = Date.now();
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < requests.length && Date.now() - t0 < WARM_CYCLE_MS) {
        const r = requests[next++]!;
        const response = await fetch(`${baseUrl}${r.path}`, { method: r.method, headers: r.headers, body: r.body });
        await response.arrayBuffer();
        if (!response.ok) failed++;
      }
    }),
  );
  log(
    `${what}: warmed with ${next.toLocaleString('en-US')} of its ${requests.length.toLocaleString('en-US')} requests in ${((Date.now() - t0) / 1000).toFixed(1)}s${failed ? `, ${failed} FAILED` : ''}`,
  );
  return next;
}

/**
 * With pg_stat_statements loaded (--pg-set shared_preload_libraries=pg_stat_statements): what the database did for
 * a measurement, per request of it: the statements that ran at least once a request, with their mean execution time
 * and the shared buffers they found (hit) and had to read. Null without the module.
 */
async function statementStats(url: string) {
  const db = await openPostgres(url, 1);
  const { rows: loaded } = await db.query<{ setting: string }>(
    `SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries'`,
  );
  if (!loaded[0]?.setting.includes('pg_stat_statements')) {
    await db.close();
    return null;
  }
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return {
    reset: async () => {
      await db.query('SELECT pg_stat_statements_reset()');
    },
    report: async (requests: number) => {
      const { rows } = await db.query<{ query: string; calls: string; mean: number; hit: string; read: string }>(
        `SELECT s.query, s.calls, s.mean_exec_time AS mean, s.shared_blks_hit AS hit, s.shared_blks_read AS read
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
         WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'
         ORDER BY s.total_exec_time DESC LIMIT 4`,
      );
      return rows
        .filter((r) => Number(r.calls) >= requests * 0.05)
        .map((r) => {
          const calls = Number(r.calls);
          // Statements of one request often begin alike (the element's rendering): the end tells them apart.
          const text = r.query.replace(/\s+/g, ' ');
          const what = text.length > 80 ? `${text.slice(0, 40)}...${text.slice(-40)}` : text;
          return `"${what}" ${(calls / requests).toFixed(1)} x, ${(r.mean * 1000).toFixed(0)} us, ${(Number(r.hit) / calls).toFixed(1)} hit ${(Number(r.read) / calls).toFixed(1)} read`;
        })
        .join('; ');
    },
    close: () => db.close(),
  };
}

/**
 * Issue 34's item 7: a direct upload and a download through Trellis with its files in an S3-compatible store (a
 * throw-away Ceph cluster, scripts/ceph-cluster.ts), against the same transfers made with the SDK alone in the same
 * run (the S3 floor, bench/lib/s3-floor.ts), taking turns like the other file scenarios. PostgreSQL only.
 */
const S3_SCENARIOS = () => [
  `S3 floor upload ${fileLabel()} (SDK)`,
  `S3 floor download ${fileLabel()} (SDK)`,
  `upload ${fileLabel()} direct, S3`,
  `download ${fileLabel()}, S3`,
];
async function s3Scenarios() {
  const [floorUpName, floorDownName, upName, downName] = S3_SCENARIOS() as [string, string, string, string];
  const store = await startObjectStore((msg) => log(`ceph: ${msg}`));
  const dataDir = join(work, 'data-s3');
  await mkdir(dataDir, { recursive: true });
  const database = 'bench_s3';
  cluster ??= await startCluster((msg) => log(`pg-cluster: ${msg}`), pgSettings);
  const admin = await openPostgres(cluster.url, 1);
  await admin.query(`DROP DATABASE IF EXISTS ${database}`);
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.close();
  const url = cluster.url.replace(/\/[^/]*$/, `/${database}`);
  const bucket = 'trellis-bench';
  const credentials = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
  const sdk = new S3Client({ endpoint: store.endpoint, region: store.region, forcePathStyle: true, credentials });
  await sdk.send(new CreateBucketCommand({ Bucket: bucket }));
  sdk.destroy();
  const config = join(work, 's3.yaml');
  await writeFile(
    config,
    `file:\n  storage: s3\n  s3:\n    endpoint: ${store.endpoint}\n    bucket: ${bucket}\n    prefix: trellis\n`,
  );
  const trellis = await startTrellis('postgres', url, dataDir, {
    TRELLIS_CONFIG: config,
    AWS_ACCESS_KEY_ID: store.accessKeyId,
    AWS_SECRET_ACCESS_KEY: store.secretAccessKey,
  });
  try {
    const account = { type: 'User', uniqueUserIdentifier: 'bench@s3.bench', password: 'bench password 1' };
    await (
      await fetch(`${trellis.baseUrl}/register`, {
        method: 'POST',
        headers: jsonHeaders(),
        body: JSON.stringify(account),
      })
    ).arrayBuffer();
    const tokenRes = await fetch(`${trellis.baseUrl}/token`, {
      method: 'POST',
      headers: jsonHeaders(),
      body: JSON.stringify({ ...account, type: 'Token' }),
    });
    const token = ((await tokenRes.json()) as { token: string }).token;
    const created = await fetch(`${trellis.baseUrl}/`, {
      method: 'POST',
      headers: jsonHeaders(token),
      body: JSON.stringify({ type: 'Attachment', data: { name: 'bench' } }),
    });
    await created.arrayBuffer();
    const fileUrl = `${trellis.baseUrl}${created.headers.get('location')}/file`;
    const payload = join(work, 'payload.bin');
    const floor = (direction: 'upload' | 'download') => async (): Promise<TransferResult> => {
      const job = { endpoint: store.endpoint, ...credentials, bucket, key: 'floor.bin', direction, file: payload };
      const { code, stdout, stderr } = await capture(process.execPath, [
        '--import',
        'tsx',
        join(ROOT, 'bench/lib/s3-floor.ts'),
        JSON.stringify(job),
      ]);
      const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
      if (code !== 0 || !line) throw new Error(`S3 floor client failed (exit ${code}): ${stderr.trim()}`);
      const r = JSON.parse(line.slice('BENCHJSON '.length)) as { seconds: number; bytes: number };
      const moved = direction === 'upload' ? { bytes: 0, sent: r.bytes } : { bytes: r.bytes, sent: 0 };
      return {
        steps: [{ status: 200, ...moved, seconds: r.seconds, body: '', location: null }],
        seconds: r.seconds,
        rssGrowthMiB: null,
      };
    };
    const headers = { ...auth(token), 'content-type': 'application/octet-stream', 'upload-complete': '?1' };
    const tries = settings.fileTries;
    const [floorUp, direct] = await bestOfEach(tries, floor('upload'), () =>
      transfer(trellis.pid, { method: 'PUT', url: fileUrl, headers, file: payload }),
    );
    const baseUp = transferRow(floorUpName, 'postgres', floorUp!, [[200]], settings.fileBytes);
    rows.push(baseUp);
    const up = transferRow(upName, 'postgres', direct!, [[201, 204]], settings.fileBytes);
    compare(up, baseUp, 0.7);
    withRss(up);
    rows.push(up);
    const [floorDown, download] = await bestOfEach(tries, floor('download'), () =>
      transfer(trellis.pid, { method: 'GET', url: fileUrl, headers: auth(token) }),
    );
    const baseDown = transferRow(floorDownName, 'postgres', floorDown!, [[200]], settings.fileBytes);
    rows.push(baseDown);
    const down = transferRow(downName, 'postgres', download!, [[200]], settings.fileBytes);
    compare(down, baseDown, 0.7);
    withRss(down);
    rows.push(down);
  } finally {
    await trellis.stop();
    await store.stop();
  }
}

/** backup:load throughput, measured by bench/backup-load.ts in its own process (with its own PostgreSQL server). */
const BACKUP_LOAD = () => `backup:load ${settings.quick ? '20k' : '1M'} elements`;
async function backupLoadScenario() {
  const elements = settings.quick ? 20_000 : 1_000_000;
  log(`${BACKUP_LOAD()}: running bench/backup-load.ts`);
  const target = '>= 5,000 elements/s';
  const { code, stdout } = await new Promise<{ code: number; stdout: string }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'bench/backup-load.ts'), '--elements', String(elements), '--backend', 'postgres'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    // Its progress lines are ours too.
    child.stderr.setEncoding('utf8').on('data', (d: string) => process.stderr.write(d));
    child.on('error', reject);
    child.on('close', (c) => resolve({ code: c ?? 1, stdout: out }));
  });
  const result = ((): { loadRate?: number; loadSeconds?: number } | null => {
    try {
      return JSON.parse(stdout) as { loadRate?: number; loadSeconds?: number };
    } catch {
      return null; // reported below
    }
  })();
  if (code !== 0 || typeof result?.loadRate !== 'number') {
    rows.push(failedRow(BACKUP_LOAD(), 'postgres', `bench/backup-load.ts exited with ${code}`, target));
    return;
  }
  rows.push({
    scenario: BACKUP_LOAD(),
    backend: 'postgres',
    status: 'measured',
    target,
    elementsPerSecond: result.loadRate,
    met: result.loadRate >= 5000,
    note: `${result.loadSeconds!.toFixed(1)} s`,
  });
}

async function applyExperiments(db: Awaited<ReturnType<typeof openPostgres>>) {
  for (const file of argv.sql ?? []) {
    log(`experiment: applying ${file}`);
    await db.query(readFileSync(file, 'utf8'));
  }
  if (argv['generic-plans']) {
    log('experiment: plan_cache_mode = force_generic_plan for every new session');
    // postgresql.auto.conf: read by every new PostgreSQL session after the reload, and by PGlite when it opens
    // (PGlite ignores per-database settings).
    await db.query('ALTER SYSTEM SET plan_cache_mode = force_generic_plan');
    await db.query('SELECT pg_reload_conf()');
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Phases
// ---------------------------------------------------------------------------------------------------------------

async function prepareDatabase(backend: Backend, dataDir: string): Promise<{ ds: Dataset; dbUrl: string | null }> {
  let dbUrl: string | null = null;
  if (backend === 'postgres') {
    cluster ??= await startCluster((msg) => log(`pg-cluster: ${msg}`), pgSettings);
    dbUrl = cluster.url;
  }
  log(`generating the ${backend} data set (${settings.nodes.toLocaleString('en-US')} nodes, ${settings.users} users)`);
  const db = dbUrl ? await openPostgres(dbUrl) : await openPglite(join(dataDir, 'db'));
  try {
    await migrate(db);
    const ds = await generateDataset(db, { nodes: settings.nodes, users: settings.users }, log);
    await applyExperiments(db);
    datasets[backend] = { ...ds.counts, seconds: ds.seconds, targets: ds.targets.length };
    log(
      `data set ready in ${ds.seconds.toFixed(1)}s: ${ds.counts.nodes} nodes, ${ds.counts.relations} relations, ${ds.targets.length} GET targets`,
    );
    return { ds, dbUrl };
  } finally {
    await db.close();
  }
}

async function backendPhase(backend: Backend) {
  const dataDir = join(work, `data-${backend}`);
  await mkdir(dataDir, { recursive: true });
  const { ds, dbUrl } = await prepareDatabase(backend, dataDir);
  // Baselines and Trellis run side by side and are loaded one after the other. PGlite allows one process per
  // data directory: the PGlite baselines get a copy of the generated one.
  const baselineDir = join(work, `baselines-${backend}`);
  await mkdir(baselineDir, { recursive: true });
  if (!dbUrl) await cp(join(dataDir, 'db'), join(baselineDir, 'db'), { recursive: true });
  const baselines = await startBaselines(backend, dbUrl, baselineDir);
  try {
    const trellis = await startTrellis(backend, dbUrl, dataDir);
    try {
      const servers: Servers = { backend, baselines, trellis, ds };
      await requestScenarios(servers);
      if (wanted(SEARCH_TEXT, SEARCH_CYPHER)) await searchScenarios(servers);
      if (wanted(WORST_ELEMENT)) await worstElementScenario(servers);
      if (wanted(...FILE_SCENARIOS())) await fileScenarios(servers);
    } finally {
      await trellis.stop();
    }
  } finally {
    await baselines.stop();
  }
  await removeTree(dataDir);
  await removeTree(baselineDir);
}

function build() {
  if (argv['no-build']) return;
  log('building (tsc -p tsconfig.build.json)');
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    // tsc still emits on type errors; a half-finished file elsewhere should not stop the benchmark.
    if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error(`build failed:\n${r.stdout}${r.stderr}`);
    log(
      `WARNING: the build reported type errors, benchmarking the emitted JavaScript anyway:\n${r.stdout.trim().split('\n').slice(0, 10).join('\n')}`,
    );
  }
}

async function writePayload(file: string, bytes: number) {
  // Random bytes (no compression or dedup can help), written as one 1 MiB block repeated.
  const block = randomBytes(MiB);
  const handle = await open(file, 'w');
  try {
    for (let written = 0; written < bytes; written += MiB) await handle.write(block, 0, Math.min(MiB, bytes - written));
  } finally {
    await handle.close();
  }
}

function gitCommit(): string | null {
  const r = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

async function main() {
  log(
    `${quick ? 'quick' : 'full'} run: ${settings.nodes.toLocaleString('en-US')} nodes, ${settings.seconds}s per measurement, ${settings.connections} connections, backends ${settings.backends.join(', ')}`,
  );
  build();
  tool = await ensureLoadTool(log, argv.tool as LoadTool | undefined);
  log(`load generator: ${tool}`);
  work = await mkdtemp('/tmp/trellis-bench-');
  try {
    if (wanted(...FILE_SCENARIOS(), ...S3_SCENARIOS())) {
      log(`writing a ${fileLabel()} payload for the file scenarios`);
      await writePayload(join(work, 'payload.bin'), settings.fileBytes);
    }
    const phaseScenarios = [
      'B0 fixed JSON',
      'B1 PK SELECT',
      'B2 INSERT',
      'GET /<id>',
      'GET /<id>/children',
      'POST / node',
      'PATCH /<id>',
      SEARCH_TEXT,
      SEARCH_CYPHER,
      WORST_ELEMENT,
      ...FILE_SCENARIOS(),
    ];
    if (wanted(...phaseScenarios)) for (const backend of settings.backends) await backendPhase(backend);
    if (settings.backends.includes('postgres') && wanted(BACKUP_LOAD())) await backupLoadScenario();
    if (settings.backends.includes('postgres') && wanted(...S3_SCENARIOS())) await s3Scenarios();
    if (argv.large && settings.backends.includes('postgres')) await largeScenario();
    else
      rows.push({
        scenario: 'what grows with the graph (1M nodes)',
        backend: 'postgres',
        status: 'not run',
        met: null,
        note: 'run with --large',
      });
  } finally {
    await cluster?.stop();
    if (argv.profile) {
      const keep = join(ROOT, 'bench/results', `profiles-${stamp}`);
      await mkdir(join(ROOT, 'bench/results'), { recursive: true });
      spawnSync('cp', ['-r', join(work, 'profiles'), keep]);
      spawnSync('cp', [...['postgres', 'pglite'].map((b) => join(work, `trellis-${b}.log`)).filter(existsSync), keep]);
      log(`CPU profiles in ${keep}`);
    }
    await removeTree(work);
  }

  const table = formatTable(rows);
  process.stdout.write(`\n${table}\n\n`);
  const missed = rows.filter((r) => r.met === false).length;
  const failed = rows.filter((r) => r.status === 'failed').length;
  const file = join(ROOT, 'bench/results', `${stamp}.json`);
  await mkdir(join(ROOT, 'bench/results'), { recursive: true });
  await writeFile(
    file,
    `${JSON.stringify(
      {
        date: new Date(started).toISOString(),
        commit: gitCommit(),
        machine: {
          cpus: cpus().length,
          cpu: cpus()[0]?.model,
          memoryGiB: Math.round(totalmem() / 2 ** 30),
          node: process.version,
        },
        postgres: cluster?.version ?? null,
        tool,
        settings,
        datasets,
        seconds: (Date.now() - started) / 1000,
        rows,
      },
      null,
      2,
    )}\n`,
  );
  log(
    `done in ${((Date.now() - started) / 1000).toFixed(0)}s: ${missed} target(s) missed, ${failed} scenario(s) failed; results in ${file}`,
  );
}

const stamp = new Date(started)
  .toISOString()
  .replace(/\.\d+Z$/, 'Z')
  .replaceAll(':', '-');
await main();
