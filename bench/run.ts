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
//   --config FILE        a settings file (TRELLIS_CONFIG) for the Trellis servers under test: a setting against its
//                        default
//   --generic-plans      experiment: ALTER SYSTEM SET plan_cache_mode = force_generic_plan (every session of the
//                        servers under test and of the baselines)
//
// The scenarios live in bench/scenarios/, one file per family (elements, collections, search, files, uploads, S3,
// backup:load, --large); bench/lib/ holds what they share. This file parses the options and runs the chosen ones.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { backendPhase, phaseScenarioNames } from './lib/backend-phase.js';
import { type Bench, createBench, fileLabel, MiB, parseOptions, ROOT } from './lib/context.js';
import { ensureLoadTool } from './lib/load.js';
import { removeTree } from './lib/procs.js';
import { formatTable } from './lib/report.js';
import { backupLoadName, backupLoadScenario } from './scenarios/backup-load.js';
import { fileScenarioNames } from './scenarios/files.js';
import { largeScenario } from './scenarios/large.js';
import { s3ScenarioNames, s3Scenarios } from './scenarios/s3.js';

function build(bench: Bench) {
  if (bench.options.noBuild) return;
  bench.log('building (tsc -p tsconfig.build.json)');
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    // tsc still emits on type errors; a half-finished file elsewhere should not stop the benchmark.
    if (!existsSync(join(ROOT, 'dist/cli/main.js'))) throw new Error(`build failed:\n${r.stdout}${r.stderr}`);
    bench.log(
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

/** The chosen families, one backend's phase after the other, then those that run on PostgreSQL alone. */
async function runFamilies(bench: Bench) {
  const { settings, wanted, rows } = bench;
  if (wanted(...fileScenarioNames(settings), ...s3ScenarioNames(settings))) {
    bench.log(`writing a ${fileLabel(settings)} payload for the file scenarios`);
    await writePayload(join(bench.work, 'payload.bin'), settings.fileBytes);
  }
  if (wanted(...phaseScenarioNames(bench))) for (const backend of settings.backends) await backendPhase(bench, backend);
  const postgres = settings.backends.includes('postgres');
  if (postgres && wanted(backupLoadName(settings))) await backupLoadScenario(bench);
  if (postgres && wanted(...s3ScenarioNames(settings))) await s3Scenarios(bench);
  if (bench.options.large && postgres) await largeScenario(bench);
  else
    rows.push({
      scenario: 'what grows with the graph (1M nodes)',
      backend: 'postgres',
      status: 'not run',
      met: null,
      note: 'run with --large',
    });
}

/** --profile: the CPU profiles and Trellis's logs kept in bench/results/profiles-<date>/. */
async function keepProfiles(bench: Bench, stamp: string) {
  const keep = join(ROOT, 'bench/results', `profiles-${stamp}`);
  await mkdir(join(ROOT, 'bench/results'), { recursive: true });
  spawnSync('cp', ['-r', join(bench.work, 'profiles'), keep]);
  spawnSync('cp', [
    ...['postgres', 'pglite'].map((b) => join(bench.work, `trellis-${b}.log`)).filter(existsSync),
    keep,
  ]);
  bench.log(`CPU profiles in ${keep}`);
}

/** The table on stdout, the numbers in bench/results/<date>.json. */
async function report(bench: Bench, stamp: string) {
  const { rows, started } = bench;
  const table = formatTable(rows);
  process.stdout.write(`\n${table}\n\n`);
  const missed = rows.filter((r) => r.met === false).length;
  const failed = rows.filter((r) => r.status === 'failed').length;
  const file = join(ROOT, 'bench/results', `${stamp}.json`);
  await mkdir(join(ROOT, 'bench/results'), { recursive: true });
  const results = {
    date: new Date(started).toISOString(),
    commit: gitCommit(),
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    postgres: bench.cluster?.version ?? null,
    tool: bench.tool,
    settings: bench.settings,
    datasets: bench.datasets,
    seconds: (Date.now() - started) / 1000,
    rows,
  };
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  bench.log(
    `done in ${((Date.now() - started) / 1000).toFixed(0)}s: ${missed} target(s) missed, ${failed} scenario(s) failed; results in ${file}`,
  );
}

async function main() {
  const { settings, options } = parseOptions(process.argv.slice(2));
  const bench = createBench(settings, options);
  const stamp = new Date(bench.started)
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replaceAll(':', '-');
  bench.log(
    `${settings.quick ? 'quick' : 'full'} run: ${settings.nodes.toLocaleString('en-US')} nodes, ${settings.seconds}s per measurement, ${settings.connections} connections, backends ${settings.backends.join(', ')}`,
  );
  build(bench);
  bench.tool = await ensureLoadTool(bench.log, options.tool);
  bench.log(`load generator: ${bench.tool}`);
  bench.work = await mkdtemp('/tmp/trellis-bench-');
  try {
    await runFamilies(bench);
  } finally {
    await bench.cluster?.stop();
    if (options.profile) await keepProfiles(bench, stamp);
    await removeTree(bench.work);
  }
  await report(bench, stamp);
}

await main();
