// `npm run soak [-- options]`: a mixed load with hostile requests mixed in, against a Trellis server on loopback,
// for a few minutes. It fails (exit 1) when the server's resident memory grows more than 10% after the warm-up,
// when its file descriptors leak, when any request answers 5xx, or when a cheap probe request (GET /<id> every
// 100 ms) has a p99 above its limit (250 ms on PostgreSQL; reported, not judged, on the embedded database, which
// runs one statement at a time).
//
//   --minutes N     how long the load runs (default 8; the whole run stays under 10 minutes)
//   --backend B     postgres (default; a throw-away server is started) or pglite
//   --workers N     concurrent clients of the mixed load (default 8)

import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type PgCluster, startCluster } from './lib/cluster.js';
import { removeTree, rssOf, type ServerProcess, tailOf } from './lib/procs.js';
import { startStandaloneTrellis } from './lib/servers.js';

const ROOT = join(import.meta.dirname, '..');
const { values: argv } = parseArgs({
  options: {
    minutes: { type: 'string', default: '8' },
    backend: { type: 'string', default: 'postgres' },
    workers: { type: 'string', default: '8' },
  },
});
const minutes = Number(argv.minutes);
const backend = argv.backend as 'postgres' | 'pglite';
const workers = Number(argv.workers);
if (!(minutes > 0 && minutes <= 9) || !['postgres', 'pglite'].includes(backend) || !(workers >= 1))
  throw new Error('usage: npm run soak -- [--minutes 1-9] [--backend postgres|pglite] [--workers N]');
const PROBE_P99_LIMIT_MS = backend === 'postgres' ? 250 : null;
const WARM_UP_MS = Math.min(60_000, (minutes * 60_000) / 5);
const log = (msg: string) =>
  process.stderr.write(`[soak ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${msg}\n`);
const started = Date.now();

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;
const json = (token?: string) => ({
  'content-type': 'application/json',
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});

interface Client {
  id: string;
  identifier: string;
  token: string;
  elements: string[];
}

async function call(
  base: string,
  method: string,
  path: string,
  init: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = {
    ...(init.body !== undefined ? json(init.token) : init.token ? { authorization: `Bearer ${init.token}` } : {}),
    ...init.headers,
  };
  const res = await fetch(base + path, {
    method,
    headers,
    body: init.body !== undefined ? JSON.stringify(init.body) : init.raw,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text };
}

async function setUp(base: string, n: number): Promise<Client[]> {
  const clients: Client[] = [];
  for (let i = 0; i < n; i++) {
    const identifier = `soak${i}@soak.dev`;
    const password = 'soak password';
    const reg = await call(base, 'POST', '/register', {
      body: { type: 'User', uniqueUserIdentifier: identifier, password },
    });
    if (reg.status !== 201) throw new Error(`register: ${reg.status} ${reg.text}`);
    const tok = await call(base, 'POST', '/token', {
      body: { type: 'Token', uniqueUserIdentifier: identifier, password },
    });
    const token = (JSON.parse(tok.text) as { token: string }).token;
    const elements: string[] = [];
    for (let k = 0; k < 20; k++) {
      const res = await call(base, 'POST', '/', {
        token,
        body: { type: 'Note', data: { title: `note ${k} of ${identifier}`, rank: k } },
      });
      elements.push(res.headers.get('location')!.slice(1));
    }
    clients.push({ id: reg.headers.get('location')!.slice(1), identifier, token, elements });
  }
  return clients;
}

type Search = (query: unknown) => ReturnType<typeof call>;

/** One request of the mix: mostly ordinary work, about a third hostile. Returns its status. */
async function oneRequest(base: string, c: Client, k: number): Promise<number> {
  const el = pick(c.elements);
  const search: Search = (query) =>
    call(base, 'POST', '/search', {
      token: c.token,
      body: { steps: [{ type: 'searchengine-query-dsl-mixin', query }] },
    });
  return k % 16 <= 8 ? ordinaryRequest(base, c, k, el, search) : hostileRequest(base, c, k, el, search);
}

async function ordinaryRequest(base: string, c: Client, k: number, el: string, search: Search): Promise<number> {
  switch (k % 16) {
    case 0:
    case 1:
      return (await call(base, 'GET', `/${el}`, { token: c.token })).status;
    case 2:
      return (await call(base, 'GET', `/${c.id}/children?pageSize=10`, { token: c.token })).status;
    case 3:
      return (await call(base, 'PATCH', `/${el}`, { token: c.token, body: { touched: k } })).status;
    case 4: {
      const res = await call(base, 'POST', `/${el}`, {
        token: c.token,
        body: { type: 'Note', data: { title: `child ${k}` } },
      });
      const id = res.headers.get('location')?.slice(1);
      if (id) await call(base, 'DELETE', `/${id}`, { token: c.token });
      return res.status;
    }
    case 5:
      return (await search({ match: { title: 'note' } })).status;
    case 6:
      return (
        await call(base, 'POST', '/search', {
          token: c.token,
          body: {
            steps: [
              {
                type: 'cypher-path-subset',
                query: 'MATCH path=(u:User)-[:OWNS]->(n) WHERE u.id = $id RETURN path LIMIT 5',
                parameters: { id: c.id },
              },
            ],
          },
        })
      ).status;
    case 7:
      return (
        await call(base, 'PUT', `/${el}/file`, {
          token: c.token,
          raw: 'x'.repeat(1000 + (k % 5000)),
          headers: { 'upload-complete': '?1', 'content-disposition': 'attachment; filename="a.txt"' },
        })
      ).status;
    default:
      return (await call(base, 'GET', `/${el}/file`, { token: c.token, headers: { range: 'bytes=0-99' } })).status;
  }
}

/** Hostile: each must answer a 4xx quickly and change nothing. */
async function hostileRequest(base: string, c: Client, k: number, el: string, search: Search): Promise<number> {
  switch (k % 16) {
    case 9:
      return (await search({ terms: { 'title.keyword': Array.from({ length: 2000 }, (_, i) => `v${i}`) } })).status;
    case 10:
      return (
        await call(base, 'POST', '/', {
          token: c.token,
          body: { type: 'Note', data: { a: Array.from({ length: 200_000 }, (_, i) => i) } },
        })
      ).status;
    case 11:
      return (
        await call(base, 'POST', '/', {
          token: c.token,
          raw: `{"type":"Note","data":${'['.repeat(5000)}${']'.repeat(5000)}}`,
          headers: json(c.token),
        })
      ).status;
    case 12:
      return (
        await call(base, 'POST', '/token', {
          body: { type: 'Token', uniqueUserIdentifier: c.identifier, password: `wrong ${k}` },
        })
      ).status;
    case 13:
      return (await search({ query_string: { query: `${'('.repeat(40)}a${')'.repeat(40)} AND b~ OR "c d"~3 [x TO` } }))
        .status;
    case 14:
      return (await call(base, 'GET', `/${el}`, { token: 'secret-token:notATokenAtAll' })).status;
    default:
      return (
        await call(base, 'POST', '/search', {
          token: c.token,
          body: {
            steps: [
              { type: 'element-hydration', query: { elementIds: `{{ ${'('.repeat(100)}1${')'.repeat(100)} }}` } },
            ],
          },
        })
      ).status;
  }
}

/** A client that sends a request body one byte every few seconds: the server must cut it off, not keep it. */
function slowBody(port: number, path: string, token: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = createConnection(port, '127.0.0.1', () => {
      socket.write(
        `PATCH ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
      );
      const timer = setInterval(() => socket.write(' '), 3000);
      socket.on('close', () => {
        clearInterval(timer);
        resolve();
      });
    });
    socket.on('error', () => {});
  });
}

const fdsOf = async (pid: number) => (await readdir(`/proc/${pid}/fd`)).length;
const percentile = (list: number[], q: number) =>
  [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(q * list.length))] ?? NaN;

/** Trellis on `backend` (its PostgreSQL server in `cluster`), its data in `work`. */
const startTrellis = (work: string, cluster: PgCluster | null) => startStandaloneTrellis(work, cluster?.url ?? null);

interface Sample {
  at: number;
  rss: number;
  fds: number;
}

/** What the load saw: the statuses, the probe's latencies after the warm-up, and the server's samples. */
interface Soaked {
  statuses: Map<number, number>;
  probes: number[];
  samples: Sample[];
  loadStart: number;
}

/** The mixed load, the probe and the slow bodies, until the time is up; the server sampled every 5 s. */
async function soak(server: ServerProcess, clients: Client[]): Promise<Soaked> {
  const base = server.baseUrl;
  const until = Date.now() + minutes * 60_000;
  const statuses = new Map<number, number>();
  const probes: number[] = [];
  const samples: Sample[] = [];
  const sample = async () =>
    samples.push({ at: Date.now() - started, rss: rssOf(server.pid) ?? NaN, fds: await fdsOf(server.pid) });
  await sample();
  const loadStart = Date.now();
  const sampler = setInterval(() => void sample(), 5000);
  const probe = (async () => {
    const c = clients[0]!;
    while (Date.now() < until) {
      const t = performance.now();
      const res = await fetch(`${base}/${c.elements[0]}`, { headers: { authorization: `Bearer ${c.token}` } });
      await res.arrayBuffer();
      if (Date.now() - loadStart > WARM_UP_MS) probes.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const port = Number(new URL(base).port);
  const slowClient = clients[1 % clients.length]!;
  const slow = (async () => {
    while (Date.now() < until)
      await Promise.all(
        Array.from({ length: 5 }, () => slowBody(port, `/${slowClient.elements[1]}`, slowClient.token)),
      );
  })();
  let k = 0;
  const load = clients.map(async (c, w) => {
    while (Date.now() < until) {
      let status: number;
      try {
        status = await oneRequest(base, c, k++ + w);
      } catch {
        status = 0; // the connection failed
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  });
  await progress(until, samples, statuses);
  await Promise.all([...load, probe, slow]);
  clearInterval(sampler);
  // Idle a moment so that what the load held (sockets, temporary files) is let go, then count again.
  await new Promise((r) => setTimeout(r, 5000));
  await sample();
  return { statuses, probes, samples, loadStart };
}

/** A line a minute while the load runs. */
async function progress(until: number, samples: Sample[], statuses: Map<number, number>) {
  let last = Date.now();
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 1000));
    if (Date.now() - last > 60_000) {
      last = Date.now();
      const s = samples.at(-1)!;
      log(
        `RSS ${(s.rss / 1048576).toFixed(0)} MiB, ${s.fds} descriptors, ${[...statuses.values()].reduce((a, b) => a + b, 0)} requests`,
      );
    }
  }
}

/** Prints the report; returns what failed. */
function judge({ statuses, probes, samples, loadStart }: Soaked): string[] {
  const failed: string[] = [];
  const warm = samples.filter((s) => s.at - (loadStart - started) >= WARM_UP_MS);
  const afterWarmUp = warm[0] ?? samples[0]!;
  const peakLate = Math.max(...warm.map((s) => s.rss));
  const end = samples.at(-1)!;
  const growth = (end.rss - afterWarmUp.rss) / afterWarmUp.rss;
  const total = [...statuses.values()].reduce((a, b) => a + b, 0);
  const fiveXX = [...statuses].filter(([s]) => s >= 500 || s === 0).reduce((a, [, n]) => a + n, 0);
  const p50 = percentile(probes, 0.5);
  const p99 = percentile(probes, 0.99);
  const report = {
    backend,
    minutes,
    workers,
    requests: total,
    statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
    errorRate5xx: fiveXX / total,
    rssMiB: {
      afterWarmUp: afterWarmUp.rss / 1048576,
      peakAfterWarmUp: peakLate / 1048576,
      end: end.rss / 1048576,
      growth,
    },
    descriptors: { start: samples[0]!.fds, afterWarmUp: afterWarmUp.fds, end: end.fds },
    probeMs: { count: probes.length, p50, p99, limitP99: PROBE_P99_LIMIT_MS },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (growth > 0.1) failed.push(`RSS grew ${(growth * 100).toFixed(1)}% after the warm-up`);
  if (end.fds > afterWarmUp.fds + 10) failed.push(`descriptors ${afterWarmUp.fds} -> ${end.fds}`);
  if (fiveXX > 0) failed.push(`${fiveXX} requests answered 5xx or failed`);
  if (PROBE_P99_LIMIT_MS !== null && !(p99 <= PROBE_P99_LIMIT_MS))
    failed.push(`probe p99 ${p99.toFixed(1)} ms > ${PROBE_P99_LIMIT_MS} ms`);
  return failed;
}

async function main() {
  const built = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (built.status !== 0) throw new Error(`build failed:\n${built.stdout}${built.stderr}`);
  const work = await mkdtemp(join(tmpdir(), 'trellis-soak-'));
  let cluster: PgCluster | null = null;
  let server: ServerProcess | null = null;
  let failed: string[] = [];
  try {
    if (backend === 'postgres') cluster = await startCluster(log);
    server = await startTrellis(work, cluster);
    log(`Trellis on ${backend} at ${server.baseUrl}; setting up`);
    const clients = await setUp(server.baseUrl, workers);
    failed = judge(await soak(server, clients));
  } catch (error) {
    failed = [`the soak could not run: ${(error as Error).stack ?? error}`, server ? tailOf(server.logFile) : ''];
  } finally {
    if (server && failed.length > 0)
      log(
        `server log:\n${await readFile(server.logFile, 'utf8').then(
          (t) => t.split('\n').slice(-20).join('\n'),
          () => '',
        )}`,
      );
    await server?.stop();
    await cluster?.stop();
    await removeTree(work);
  }
  log(failed.length === 0 ? 'passed' : `FAILED: ${failed.join('; ')}`);
  process.exitCode = failed.length === 0 ? 0 : 1;
}

await main();
