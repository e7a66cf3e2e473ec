/**
 * --large: what grows with the graph. The same requests on the data set of the run (settings.nodes) and on one of
 * `--large-nodes` (1M), each in its own database of the PostgreSQL server and with the probes of dataset.ts: the text
 * match and the other searches of search.ts's largeSearchBodies (8 clients and one), the Cypher depth-3 path, the
 * children of a folder with 10,000 children (the first page and one in the middle), GET / and GET /<id> of a user
 * with 5,000 grants, and GET /<id> of the 4+2-hop targets (one client each). Targets (issue 45 for the searches): the
 * text match at 8 clients p50 <= 15 ms and p99 <= 60 ms, the common word p50 <= 25 ms, the Cypher path p50 <= 20 ms
 * on the large set, every other p50 there <= 1.5 x its p50 on the smaller one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { migrate } from '../../src/storage/migrate.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { type PgCluster, startCluster } from '../lib/cluster.js';
import type { Bench } from '../lib/context.js';
import { type Dataset, generateDataset, PROBE_CHILDREN, PROBE_GRANTS } from '../lib/dataset.js';
import { applyExperiments } from '../lib/experiments.js';
import type { HttpRequest } from '../lib/load.js';
import { auth, check, failedRow, latencyTarget, type Measured, measure, requestRow } from '../lib/measure.js';
import type { Row } from '../lib/report.js';
import { startTrellis } from '../lib/servers.js';
import { prewarm, type StatementStats, statementStats, warmCycle } from './large-warmup.js';
import { LIST_ROWS, listTarget } from './lists.js';
import { cypherPathBody, largeSearchBodies, searchRequest, textMatchBody } from './search.js';

const largeLabel = (nodes: number) => (nodes >= 1_000_000 ? `${nodes / 1_000_000}M` : `${Math.round(nodes / 1000)}k`);

interface LargeRequest {
  name: string;
  connections: number;
  requests: (ds: Dataset, baseUrl: string) => HttpRequest[] | Promise<HttpRequest[]>;
  /** A latency target of its own (p50 ms, and p99 ms when given) instead of the growth target. */
  p50Limit?: number;
  p99Limit?: number;
  /**
   * The warm-up cycle's longest run (ms; the default WARM_CYCLE_MS), 0 for a row whose requests the row before it
   * has just sent (the same search at 8 clients and then at one).
   */
  warmMs?: number;
}

/** A search of --large's data sets as the targets' users, the k-th one's body from `body`, at 8 clients and at one. */
function searchRows(what: string, body: (k: number) => string, p50Limit?: number): LargeRequest[] {
  const requests = (ds: Dataset) => ds.targets.map((t, k) => searchRequest(t.token, body(k)));
  return [
    { name: `POST /search ${what}, 8 clients`, connections: 8, requests, warmMs: 15_000, p50Limit },
    { name: `POST /search ${what}, 1 client`, connections: 1, requests, warmMs: 0 },
  ];
}

const LARGE_REQUESTS: LargeRequest[] = [
  {
    name: 'POST /search text match, 8 clients',
    connections: 8,
    p50Limit: 15,
    p99Limit: 60,
    requests: (ds) => ds.targets.map((t, k) => searchRequest(t.token, textMatchBody(k))),
  },
  {
    name: 'POST /search text match, 1 client',
    connections: 1,
    warmMs: 0,
    requests: (ds) => ds.targets.map((t, k) => searchRequest(t.token, textMatchBody(k))),
  },
  ...searchRows('common word', largeSearchBodies.common, 25),
  ...searchRows('bool should rare+common', largeSearchBodies.shouldRareCommon),
  ...searchRows('prefix', largeSearchBodies.prefix),
  ...searchRows('query_string phrase', largeSearchBodies.phrase),
  ...searchRows('range on created by score', largeSearchBodies.rangeCreated),
  ...LIST_ROWS.map((row) => {
    const target = listTarget(row, 'postgres');
    return {
      name: row.name,
      connections: row.connections,
      p50Limit: target.p50,
      p99Limit: target.p99 ?? undefined,
      warmMs: row.connections === 1 ? 0 : 5_000,
      requests: row.requests,
    };
  }),
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

/**
 * --large's PostgreSQL: buffers that hold the 1M data set's working set (docs/operations.md, "Memory"). Huge pages
 * are PostgreSQL's default `try`: used where the machine has them reserved.
 */
const LARGE_SERVER_SETTINGS = { shared_buffers: '4GB' };

/** The sizes of one --large run and the p50 of each row on the first (smaller) one. */
interface LargeRun {
  sizes: number[];
  p50: Map<string, number>;
}

export async function largeScenario(bench: Bench) {
  const run: LargeRun = { sizes: [bench.settings.nodes, bench.options.largeNodes], p50: new Map() };
  // A server of its own, sized as docs/operations.md advises for the large data set, so that the other scenarios keep
  // theirs; kept in keepDir, its data sets are generated once and measured by later runs too, with each run's settings.
  const server = await startCluster(
    (msg) => bench.log(`pg-cluster (--large): ${msg}`),
    { ...LARGE_SERVER_SETTINGS, ...bench.options.pgSettings },
    bench.options.largeKeep,
  );
  try {
    for (const nodes of run.sizes) await largeSize(bench, server, nodes, run);
  } finally {
    await server.stop();
  }
}

async function largeSize(bench: Bench, server: PgCluster, nodes: number, run: LargeRun) {
  const label = largeLabel(nodes);
  const database = `bench_large_${label.toLowerCase()}`;
  const url = server.url.replace(/\/[^/]*$/, `/${database}`);
  const dataDir = join(bench.work, `data-${database}`);
  await mkdir(dataDir, { recursive: true });
  const ds = await largeDataset(bench, server, nodes, database);
  bench.datasets[`postgres-${label}`] = { ...ds.counts, seconds: ds.seconds, targets: ds.targets.length };
  const stats = await statementStats(url);
  const warm = !bench.options.largeCold;
  if (warm) await prewarm(bench, url);
  const trellis = await startTrellis(bench, 'postgres', url, dataDir);
  try {
    for (const scenario of LARGE_REQUESTS) {
      const name = `${scenario.name} (${label})`;
      // --only picks among these rows when it names any of them with its size (`--only grows` runs them all).
      const picked = (row: string) => run.sizes.some((n) => bench.wanted(`${row} (${largeLabel(n)})`));
      if (LARGE_REQUESTS.some((r) => picked(r.name)) && !picked(scenario.name)) continue;
      const row = await largeRow(bench, trellis.baseUrl, scenario, name, ds, warm, stats);
      if (row) bench.rows.push(largeTarget(row, scenario, ds, run));
    }
  } finally {
    await trellis.stop();
    await stats?.close();
  }
  if (!bench.options.largeKeep) {
    const drop = await openPostgres(server.url, 1);
    await drop.query(`DROP DATABASE ${database}`);
    await drop.close();
  }
}

/** The data set in `database`: the kept one, or generated there (and kept when --large-keep says so). */
async function largeDataset(bench: Bench, server: PgCluster, nodes: number, database: string): Promise<Dataset> {
  const { log } = bench;
  const kept = bench.options.largeKeep ? join(bench.options.largeKeep, `${database}.json`) : null;
  if (kept && existsSync(kept)) {
    log(`--large: reusing the ${nodes.toLocaleString('en-US')}-node data set in ${database} (${kept})`);
    return JSON.parse(readFileSync(kept, 'utf8')) as Dataset;
  }
  const admin = await openPostgres(server.url, 1);
  await admin.query(`DROP DATABASE IF EXISTS ${database}`);
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.close();
  log(`--large: generating ${nodes.toLocaleString('en-US')} nodes and the probes in ${database}`);
  const db = await openPostgres(server.url.replace(/\/[^/]*$/, `/${database}`));
  let ds: Dataset;
  try {
    await migrate(db);
    ds = await generateDataset(db, { nodes, users: bench.settings.users, probes: true }, log);
    await applyExperiments(bench, db);
  } finally {
    await db.close();
  }
  // Written last: a data set whose generation was cut short is generated again.
  if (kept) await writeFile(kept, JSON.stringify(ds));
  return ds;
}

/** One row measured (after its warm-up cycle when warm), or null when its sanity check failed (the row is said). */
async function largeRow(
  bench: Bench,
  baseUrl: string,
  scenario: LargeRequest,
  name: string,
  ds: Dataset,
  warm: boolean,
  stats: StatementStats | null,
): Promise<Row | null> {
  let requests: HttpRequest[];
  try {
    requests = await scenario.requests(ds, baseUrl);
  } catch (error) {
    bench.rows.push(failedRow(bench, name, 'postgres', (error as Error).message));
    return null;
  }
  const problem = await check(
    `${baseUrl}${requests[0]!.path}`,
    { method: requests[0]!.method, headers: requests[0]!.headers, body: requests[0]!.body },
    200,
  );
  if (problem) {
    bench.rows.push(failedRow(bench, name, 'postgres', problem));
    return null;
  }
  if (warm && scenario.warmMs !== 0) {
    await stats?.reset();
    const sent = await warmCycle(bench, name, baseUrl, requests, scenario.connections, scenario.warmMs);
    const warming = await stats?.report(sent);
    if (warming) bench.log(`${name}: per request of the warm-up ${warming}`);
  }
  const measured = await measure(bench, name, baseUrl, requests, scenario.connections, () => stats?.reset());
  const statements = await stats?.report(measured.requests);
  const perRequest = [postgresCpu(measured), statements ?? ''].filter(Boolean).join('; ');
  if (perRequest) bench.log(`${name}: per request ${perRequest}`);
  return requestRow(name, 'postgres', measured);
}

const postgresCpu = (measured: Measured) => {
  const pgCpu = measured.cpu?.postgres;
  return pgCpu !== undefined && measured.rps > 0 ? `PostgreSQL ${Math.round((pgCpu / measured.rps) * 1e6)} us CPU` : '';
};

/** The first size's row sets the p50 the second is held to (or its own latency limit). */
function largeTarget(row: Row, scenario: LargeRequest, ds: Dataset, run: LargeRun): Row {
  const small = run.p50.get(scenario.name);
  const first = largeLabel(run.sizes[0]!);
  if (small === undefined) {
    run.p50.set(scenario.name, row.p50!);
    row.note = `${(ds.counts.nodes + ds.counts.relations).toLocaleString('en-US')} elements; ${scenario.connections} client(s)`;
  } else if (scenario.p50Limit !== undefined) {
    latencyTarget(row, scenario.p50Limit, scenario.p99Limit ?? null);
    row.note = `${first}: p50 ${small.toFixed(2)} ms`;
  } else {
    row.ratio = row.p50! / small;
    row.baseline = `${first} p50`;
    row.target = `p50 <= 1.5 x ${first}`;
    row.met = row.status === 'measured' ? row.ratio <= 1.5 : null;
    row.note = `${first}: p50 ${small.toFixed(2)} ms`;
  }
  return row;
}
