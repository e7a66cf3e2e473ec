// `npm test [-- vitest args]`:
//   1. static checks: type check (tsc: the service, then the explorer), format and lint (biome ci), dead code
//      (knip); skipped with TRELLIS_SKIP_TYPECHECK=1
//   2. start a throw-away PostgreSQL cluster (scripts/pg-cluster.mjs) when the
//      "postgres" backend is selected, and a throw-away Ceph object store with its
//      S3 gateway (scripts/ceph-cluster.mjs) when the "s3" blob store is; failing
//      to start either fails the run
//   2b. find Chromium for the browser tests, installing Debian's package when missing (scripts/chromium.mjs)
//   3. npx vitest run <args> with TRELLIS_TEST_PG_URL, TRELLIS_TEST_BACKENDS, TRELLIS_TEST_BLOBS,
//      TRELLIS_TEST_S3 and TRELLIS_CHROMIUM
//   4. stop the clusters, print a summary, exit with vitest's exit code
//
// Environment:
//   TRELLIS_TEST_BACKENDS   comma list, default "pglite,postgres"
//   TRELLIS_TEST_BLOBS      comma list of blob stores for the file, upload and
//                           backup suites, default "disk,s3"
//   TRELLIS_TEST_PG_URL     use this existing server instead of starting a cluster
//   TRELLIS_TEST_S3         use this existing store instead of starting one:
//                           JSON {"endpoint","accessKeyId","secretAccessKey"}
//   TRELLIS_SKIP_TYPECHECK  "1" skips step 1 (for a quick run of a few test files)
//   TRELLIS_CHROMIUM        the Chromium executable for the browser tests (default: found in /usr/bin)

import { spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startObjectStore } from './ceph-cluster.mjs';
import { ensureChromium } from './chromium.mjs';
import { startCluster } from './pg-cluster.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const say = (msg) => process.stderr.write(`[test] ${msg}\n`);

/** Exit code of a finished child: its code, or 128 + signal number. */
function exitCodeOf(code, signal) {
  if (code !== null && code !== undefined) return code;
  return 128 + (osConstants.signals[signal] ?? 1);
}

let current = null; // running child, for signal forwarding
let interrupted = null;
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    interrupted = sig;
    if (current && current.exitCode === null) current.kill(sig);
  });
}

function run(cmd, cmdArgs, env = process.env) {
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
const seconds = (ms) => `${(ms / 1000).toFixed(1)}s`;

// 1. static checks
let typecheck = 'skipped (TRELLIS_SKIP_TYPECHECK=1)';
if (process.env.TRELLIS_SKIP_TYPECHECK === '1') {
  say('static checks skipped (TRELLIS_SKIP_TYPECHECK=1)');
} else {
  const t = Date.now();
  const checks = [
    ['type check', ['tsc', '-p', 'tsconfig.json', '--noEmit']],
    ['type check (explorer)', ['tsc', '-p', 'explorer/tsconfig.json']],
    ['format and lint', ['biome', 'ci', '--error-on-warnings', '.']],
    ['dead code', ['knip']],
  ];
  for (const [name, command] of checks) {
    say(`${name}: npx ${command.join(' ')}`);
    const code = await run('npx', command);
    if (code !== 0) {
      say(`${name} failed (exit code ${code}); not running tests`);
      process.exit(code || 1);
    }
  }
  typecheck = `ok (${seconds(Date.now() - t)})`;
}
if (interrupted) process.exit(130);

// 2. PostgreSQL
const backends = (process.env.TRELLIS_TEST_BACKENDS ?? 'pglite,postgres')
  .split(',')
  .map((b) => b.trim())
  .filter(Boolean);
let cluster = null;
let pgUrl = null;
let pgDesc = '';
if (backends.includes('postgres')) {
  if (process.env.TRELLIS_TEST_PG_URL) {
    pgUrl = process.env.TRELLIS_TEST_PG_URL;
    const u = new URL(pgUrl);
    pgDesc = `external server at ${u.hostname}:${u.port || 5432}`;
    say(`using existing PostgreSQL from TRELLIS_TEST_PG_URL (${u.hostname}:${u.port || 5432})`);
  } else {
    try {
      cluster = await startCluster({ log: (m) => say(m) });
    } catch (err) {
      say('FAILED to start PostgreSQL for the "postgres" test backend:');
      process.stderr.write(`${err?.stack ?? err}\n`);
      say('(set TRELLIS_TEST_BACKENDS=pglite to run without a PostgreSQL server)');
      process.exit(1);
    }
    pgUrl = cluster.url;
    pgDesc = `PostgreSQL ${cluster.version} at ${cluster.host}:${cluster.port}, started in ${seconds(cluster.startMs)}`;
  }
}

// 2b. the object store
const blobStores = (process.env.TRELLIS_TEST_BLOBS ?? 'disk,s3')
  .split(',')
  .map((b) => b.trim())
  .filter(Boolean);
let objectStore = null;
let s3 = process.env.TRELLIS_TEST_S3 || null;
let s3Desc = '';
if (blobStores.includes('s3') && !s3 && !interrupted) {
  try {
    objectStore = await startObjectStore({ log: (m) => say(m) });
  } catch (err) {
    say('FAILED to start the Ceph object store for the "s3" blob store:');
    process.stderr.write(`${err?.stack ?? err}\n`);
    say('(set TRELLIS_TEST_BLOBS=disk to run without an object store)');
    await cluster?.stop();
    process.exit(1);
  }
  const { endpoint, accessKeyId, secretAccessKey } = objectStore;
  s3 = JSON.stringify({ endpoint, accessKeyId, secretAccessKey });
  s3Desc = `Ceph radosgw at ${endpoint}, started in ${seconds(objectStore.startMs)}`;
}

// 2c. Chromium: a missing browser fails the browser tests, not the run
let chromium = null;
try {
  chromium = await ensureChromium((m) => say(m));
} catch (err) {
  say(`installing Chromium failed: ${err?.message ?? err}`);
}

// 3. vitest
let code;
try {
  if (interrupted) {
    code = 130;
  } else {
    const env = { ...process.env, TRELLIS_TEST_BACKENDS: backends.join(','), TRELLIS_TEST_BLOBS: blobStores.join(',') };
    if (chromium) env.TRELLIS_CHROMIUM = chromium;
    if (pgUrl) env.TRELLIS_TEST_PG_URL = pgUrl;
    else delete env.TRELLIS_TEST_PG_URL;
    if (s3) env.TRELLIS_TEST_S3 = s3;
    code = await run('npx', ['vitest', 'run', ...args], env);
  }
} finally {
  // 4. always stop the clusters
  for (const [name, started] of [
    ['PostgreSQL', cluster],
    ['the object store', objectStore],
  ]) {
    if (!started) continue;
    try {
      await started.stop();
    } catch (err) {
      say(`stopping ${name} failed: ${err?.message ?? err}`);
    }
  }
}

let summary = `backends: ${backends.join(', ') || '(none)'}`;
if (pgDesc) summary += ` (${pgDesc})`;
summary += `; blob stores: ${blobStores.join(', ') || '(none)'}`;
if (s3Desc) summary += ` (${s3Desc})`;
console.log(`\n${summary}`);
console.log(
  `static checks: ${typecheck}; vitest exit code ${code}${interrupted ? ` (interrupted by ${interrupted})` : ''}; total ${seconds(Date.now() - started)}`,
);
process.exit(code);
