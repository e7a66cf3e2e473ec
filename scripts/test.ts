// `npm test [-- vitest args]`:
//   1. static checks: type check (tsc: the service, then the explorer), format and lint (biome ci), dead code
//      (knip), sizes (scripts/check-sizes.ts); skipped with TRELLIS_SKIP_TYPECHECK=1
//   2. start a throw-away PostgreSQL cluster (scripts/pg-cluster.ts) when the
//      "postgres" backend is selected, and a throw-away Ceph object store with its
//      S3 gateway (scripts/ceph-cluster.ts) when the "s3" blob store is; failing
//      to start either fails the run
//   2b. find Chromium for the browser tests, installing Debian's package when missing (scripts/chromium.ts)
//   3. npx vitest run <args> with TRELLIS_TEST_PG_URL, TRELLIS_TEST_BACKENDS, TRELLIS_TEST_BLOBS,
//      TRELLIS_TEST_S3 and TRELLIS_CHROMIUM
//   4. stop the clusters, print the ten slowest test files and a summary, exit with vitest's exit code
//
// `--fast` (`npm run test:fast`): everything on PGlite and the disk store only, as TRELLIS_TEST_BACKENDS=pglite
// TRELLIS_TEST_BLOBS=disk would, so no server is started.
//
// Environment:
//   TRELLIS_TEST_BACKENDS   comma list, default "pglite,postgres"
//   TRELLIS_TEST_BLOBS      comma list of blob stores for the file, upload and
//                           backup suites, default "disk,s3"
//   TRELLIS_TEST_PG_URL     use this existing server instead of starting a cluster
//   TRELLIS_TEST_S3         use this existing store instead of starting one:
//                           JSON {"endpoint","accessKeyId","secretAccessKey"}
//   TRELLIS_SKIP_TYPECHECK  "1" skips step 1 (for a quick run of a few test files)
//   TRELLIS_SIZE_CHECK      "0" skips the size check of step 1
//   TRELLIS_CHROMIUM        the Chromium executable for the browser tests (default: found in /usr/bin)

import { type ChildProcess, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { constants as osConstants, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ObjectStore, startObjectStore } from './ceph-cluster.js';
import { ensureChromium } from './chromium.js';
import { type PgCluster, startCluster } from './pg-cluster.js';
import { readReport, slowestFiles } from './slowest-files.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fast = process.argv.includes('--fast');
const args = process.argv.slice(2).filter((arg) => arg !== '--fast');
const say = (msg: string) => process.stderr.write(`[test] ${msg}\n`);
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
const stack = (err: unknown) => (err instanceof Error ? (err.stack ?? err.message) : String(err));

/** Exit code of a finished child: its code, or 128 + signal number. */
function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null && code !== undefined) return code;
  return 128 + ((signal && osConstants.signals[signal]) ?? 1);
}

let current: ChildProcess | null = null; // running child, for signal forwarding
let interrupted = null as NodeJS.Signals | null;
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(sig, () => {
    interrupted = sig;
    if (current && current.exitCode === null) current.kill(sig);
  });
}

function run(cmd: string, cmdArgs: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, cmdArgs, { cwd: root, env, stdio: 'inherit' });
    current = child;
    child.on('error', (err) => {
      say(`could not run ${cmd}: ${err.message}`);
      current = null;
      resolve(127);
    });
    child.on('exit', (code, signal) => {
      current = null;
      resolve(exitCodeOf(code, signal));
    });
  });
}

const started = Date.now();
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** Step 1; exits when a check fails. Resolves to what the summary says of it. */
async function staticChecks(): Promise<string> {
  if (process.env.TRELLIS_SKIP_TYPECHECK === '1') {
    say('static checks skipped (TRELLIS_SKIP_TYPECHECK=1)');
    return 'skipped (TRELLIS_SKIP_TYPECHECK=1)';
  }
  const t = Date.now();
  const checks: [string, string, string[]][] = [
    ['type check', 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']],
    ['type check (explorer)', 'npx', ['tsc', '-p', 'explorer/tsconfig.json']],
    ['format and lint', 'npx', ['biome', 'ci', '--error-on-warnings', '.']],
    ['dead code', 'npx', ['knip']],
  ];
  if (process.env.TRELLIS_SIZE_CHECK === '0') say('size check skipped (TRELLIS_SIZE_CHECK=0)');
  else checks.push(['sizes', process.execPath, ['--import', 'tsx', 'scripts/check-sizes.ts']]);
  for (const [name, cmd, command] of checks) {
    say(`${name}: ${cmd === 'npx' ? 'npx' : 'node'} ${command.join(' ')}`);
    const code = await run(cmd, command);
    if (code !== 0) {
      say(`${name} failed (exit code ${code}); not running tests`);
      process.exit(code || 1);
    }
  }
  return `ok (${seconds(Date.now() - t)})`;
}

const list = (value: string | undefined, fallback: string) =>
  (value ?? fallback)
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);

interface Servers {
  backends: string[];
  blobStores: string[];
  cluster: PgCluster | null;
  pgUrl: string | null;
  pgDesc: string;
  objectStore: ObjectStore | null;
  s3: string | null;
  s3Desc: string;
}

/** Step 2: the PostgreSQL server of the "postgres" backend; exits when it cannot start. */
async function postgres(servers: Servers): Promise<void> {
  if (!servers.backends.includes('postgres')) return;
  if (process.env.TRELLIS_TEST_PG_URL) {
    servers.pgUrl = process.env.TRELLIS_TEST_PG_URL;
    const u = new URL(servers.pgUrl);
    servers.pgDesc = `external server at ${u.hostname}:${u.port || 5432}`;
    say(`using existing PostgreSQL from TRELLIS_TEST_PG_URL (${u.hostname}:${u.port || 5432})`);
    return;
  }
  let cluster: PgCluster;
  try {
    cluster = await startCluster({ log: (m) => say(m) });
  } catch (err) {
    say('FAILED to start PostgreSQL for the "postgres" test backend:');
    process.stderr.write(`${stack(err)}\n`);
    say('(set TRELLIS_TEST_BACKENDS=pglite to run without a PostgreSQL server)');
    process.exit(1);
  }
  servers.cluster = cluster;
  servers.pgUrl = cluster.url;
  servers.pgDesc = `PostgreSQL ${cluster.version} at ${cluster.host}:${cluster.port}, started in ${seconds(cluster.startMs)}`;
}

/** Step 2b: the object store of the "s3" blob store; exits when it cannot start. */
async function objectStore(servers: Servers): Promise<void> {
  if (!servers.blobStores.includes('s3') || servers.s3 || interrupted) return;
  let store: ObjectStore;
  try {
    store = await startObjectStore({ log: (m) => say(m) });
  } catch (err) {
    say('FAILED to start the Ceph object store for the "s3" blob store:');
    process.stderr.write(`${stack(err)}\n`);
    say('(set TRELLIS_TEST_BLOBS=disk to run without an object store)');
    await servers.cluster?.stop();
    process.exit(1);
  }
  servers.objectStore = store;
  const { endpoint, accessKeyId, secretAccessKey } = store;
  servers.s3 = JSON.stringify({ endpoint, accessKeyId, secretAccessKey });
  servers.s3Desc = `Ceph radosgw at ${endpoint}, started in ${seconds(store.startMs)}`;
}

/** Step 3: vitest with the servers' addresses. */
function vitest(servers: Servers, chromium: string | null): Promise<number> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TRELLIS_TEST_BACKENDS: servers.backends.join(','),
    TRELLIS_TEST_BLOBS: servers.blobStores.join(','),
  };
  if (chromium) env.TRELLIS_CHROMIUM = chromium;
  if (servers.pgUrl) env.TRELLIS_TEST_PG_URL = servers.pgUrl;
  else delete env.TRELLIS_TEST_PG_URL;
  if (servers.s3) env.TRELLIS_TEST_S3 = servers.s3;
  const reporters = ['--reporter=default', '--reporter=json', `--outputFile.json=${report}`];
  return run('npx', ['vitest', 'run', ...reporters, ...args], env);
}

/** vitest's JSON report of this run, for the slowest files. */
const report = join(tmpdir(), `trellis-test-report-${process.pid}.json`);

/** Step 4: always stop the servers started here. */
async function stopServers(servers: Servers): Promise<void> {
  const started: [string, { stop(): Promise<void> } | null][] = [
    ['PostgreSQL', servers.cluster],
    ['the object store', servers.objectStore],
  ];
  for (const [name, server] of started) {
    if (!server) continue;
    try {
      await server.stop();
    } catch (err) {
      say(`stopping ${name} failed: ${message(err)}`);
    }
  }
}

const typecheck = await staticChecks();
if (interrupted) process.exit(130);

const servers: Servers = {
  backends: fast ? ['pglite'] : list(process.env.TRELLIS_TEST_BACKENDS, 'pglite,postgres'),
  blobStores: fast ? ['disk'] : list(process.env.TRELLIS_TEST_BLOBS, 'disk,s3'),
  cluster: null,
  pgUrl: null,
  pgDesc: '',
  objectStore: null,
  s3: process.env.TRELLIS_TEST_S3 || null,
  s3Desc: '',
};
await postgres(servers);
await objectStore(servers);

// Chromium: a missing browser fails the browser tests, not the run.
let chromium: string | null = null;
try {
  chromium = await ensureChromium((m) => say(m));
} catch (err) {
  say(`installing Chromium failed: ${message(err)}`);
}

let code: number;
try {
  code = interrupted ? 130 : await vitest(servers, chromium);
} finally {
  await stopServers(servers);
}

const results = await readReport(report);
await rm(report, { force: true });
if (results) console.log(`\n${slowestFiles(results, root).join('\n')}`);

let summary = `backends: ${servers.backends.join(', ') || '(none)'}`;
if (servers.pgDesc) summary += ` (${servers.pgDesc})`;
summary += `; blob stores: ${servers.blobStores.join(', ') || '(none)'}`;
if (servers.s3Desc) summary += ` (${servers.s3Desc})`;
console.log(`\n${summary}`);
console.log(
  `static checks: ${typecheck}; vitest exit code ${code}${interrupted ? ` (interrupted by ${interrupted})` : ''}; total ${seconds(Date.now() - started)}`,
);
process.exit(code);
