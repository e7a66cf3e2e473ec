// One backend's phase of a run: its data set generated, the baselines and Trellis started side by side on it, and
// the scenario families that load both run in turn.
import { cp, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { migrate } from '../../src/storage/migrate.js';
import { openPglite } from '../../src/storage/pglite.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { COLLECTION_SCENARIOS, childrenPage } from '../scenarios/collections.js';
import {
  ELEMENT_SCENARIOS,
  elementReads,
  elementWrites,
  WORST_ELEMENT,
  worstElementScenario,
} from '../scenarios/elements.js';
import { EXPLORER_FAST_3G, explorerScenario } from '../scenarios/explorer.js';
import { fileScenarioNames, fileScenarios } from '../scenarios/files.js';
import { LIST_SCENARIOS, listScenarios } from '../scenarios/lists.js';
import { SEARCH_CYPHER, SEARCH_TEXT, searchScenarios } from '../scenarios/search.js';
import { startCluster } from './cluster.js';
import type { Backend, Bench } from './context.js';
import { type Dataset, generateDataset } from './dataset.js';
import { applyExperiments } from './experiments.js';
import type { Servers } from './measure.js';
import { removeTree } from './procs.js';
import { startBaselines, startTrellis } from './servers.js';

/** The scenarios of a backend's phase: --only runs the phase when it names any of them. */
export const phaseScenarioNames = (bench: Bench) => [
  ...ELEMENT_SCENARIOS,
  ...COLLECTION_SCENARIOS,
  SEARCH_TEXT,
  SEARCH_CYPHER,
  ...LIST_SCENARIOS,
  ...fileScenarioNames(bench.settings),
  EXPLORER_FAST_3G,
];

async function prepareDatabase(
  bench: Bench,
  backend: Backend,
  dataDir: string,
): Promise<{ ds: Dataset; dbUrl: string | null }> {
  const { settings, log } = bench;
  let dbUrl: string | null = null;
  if (backend === 'postgres') {
    bench.cluster ??= await startCluster((msg) => log(`pg-cluster: ${msg}`), bench.options.pgSettings);
    dbUrl = bench.cluster.url;
  }
  log(`generating the ${backend} data set (${settings.nodes.toLocaleString('en-US')} nodes, ${settings.users} users)`);
  const db = dbUrl ? await openPostgres(dbUrl) : await openPglite(join(dataDir, 'db'));
  try {
    await migrate(db);
    const ds = await generateDataset(db, { nodes: settings.nodes, users: settings.users }, log);
    await applyExperiments(bench, db);
    bench.datasets[backend] = { ...ds.counts, seconds: ds.seconds, targets: ds.targets.length };
    log(
      `data set ready in ${ds.seconds.toFixed(1)}s: ${ds.counts.nodes} nodes, ${ds.counts.relations} relations, ${ds.targets.length} GET targets`,
    );
    return { ds, dbUrl };
  } finally {
    await db.close();
  }
}

/** The families, in the order of the table's rows. */
async function runFamilies(bench: Bench, servers: Servers) {
  await elementReads(bench, servers);
  await childrenPage(bench, servers);
  await elementWrites(bench, servers);
  if (bench.wanted(SEARCH_TEXT, SEARCH_CYPHER)) await searchScenarios(bench, servers);
  if (bench.wanted(...LIST_SCENARIOS)) await listScenarios(bench, servers);
  if (bench.wanted(WORST_ELEMENT)) await worstElementScenario(bench, servers);
  if (bench.wanted(...fileScenarioNames(bench.settings))) await fileScenarios(bench, servers);
  // The page's bytes do not depend on the database: measured once, on the run's first backend.
  if (bench.wanted(EXPLORER_FAST_3G) && servers.backend === bench.settings.backends[0])
    await explorerScenario(bench, servers);
}

export async function backendPhase(bench: Bench, backend: Backend) {
  const dataDir = join(bench.work, `data-${backend}`);
  await mkdir(dataDir, { recursive: true });
  const { ds, dbUrl } = await prepareDatabase(bench, backend, dataDir);
  // Baselines and Trellis run side by side and are loaded one after the other. PGlite allows one process per
  // data directory: the PGlite baselines get a copy of the generated one.
  const baselineDir = join(bench.work, `baselines-${backend}`);
  await mkdir(baselineDir, { recursive: true });
  if (!dbUrl) await cp(join(dataDir, 'db'), join(baselineDir, 'db'), { recursive: true });
  const baselines = await startBaselines(bench, backend, dbUrl, baselineDir);
  try {
    const trellis = await startTrellis(bench, backend, dbUrl, dataDir);
    try {
      await runFamilies(bench, { backend, baselines, trellis, ds });
    } finally {
      await trellis.stop();
    }
  } finally {
    await baselines.stop();
  }
  await removeTree(dataDir);
  await removeTree(baselineDir);
}
