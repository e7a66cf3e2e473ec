// backup:load throughput: generates a synthetic backup of N elements (users with tokens, groups, OWNS trees of
// data, tags), loads it into a throw-away database and prints elements/s; then writes it back with backup:create.
//
//   node --import tsx bench/backup-load.ts [--elements N] [--backend postgres|pglite] [--keep]
//
// Also importable: `benchBackupLoad({ elements, backend })` returns the numbers (for bench/run.ts).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { createBackup } from '../src/backup/create.js';
import { type BackupElement, elementPath, SUMMARY_FILE, serializeElement } from '../src/backup/format.js';
import { loadBackup } from '../src/backup/load.js';
import type { Progress } from '../src/backup/progress.js';
import { FsBlobStore } from '../src/blob/fs-blob-store.js';
import { validateSettings } from '../src/config/load.js';
import type { Db } from '../src/storage/db.js';
import { migrate } from '../src/storage/migrate.js';
import { openPglite } from '../src/storage/pglite.js';
import { openPostgres } from '../src/storage/postgres.js';
import { type PgCluster, startCluster } from './lib/cluster.js';
import { removeTree } from './lib/procs.js';

// One argon2i hash for every synthetic user (hashing a million passwords would measure argon2, not the load).
const PASSWORD_HASH =
  '$argon2i$v=19$m=65536,t=4,p=1$eXVNWnlmR3dDb21CejVtTA$fu9TbXAiv4pf0w1zgZCJ3pKV0ZR7NWcDKe6ZQwzrmpw';
const CREATED = '2024-01-01T00:00:00+00:00';
const TAGS = 100;
const GROUPS = 50;
const CHILDREN = 8;

/** Writes a backup of exactly `total` elements into `dir`, in the layout backup:create uses. */
export async function generateBackup(dir: string, total: number): Promise<{ nodes: number; relations: number }> {
  let nodes = 0;
  let relations = 0;
  let pending: Promise<void>[] = [];
  const made = new Set<string>();
  const emit = async (element: BackupElement) => {
    const path = join(dir, elementPath(element.start !== undefined, element.id));
    if (!made.has(dirname(path))) {
      await mkdir(dirname(path), { recursive: true });
      made.add(dirname(path));
    }
    await writeFile(path, serializeElement(element));
  };
  const add = async (element: BackupElement) => {
    if (element.start === undefined) nodes++;
    else relations++;
    pending.push(emit(element));
    if (pending.length >= 256) {
      await Promise.all(pending);
      pending = [];
    }
  };
  const left = () => total - nodes - relations;
  const node = async (type: string, data: Record<string, unknown>) => {
    const id = randomUUID();
    await add({ type, id, data: { ...data, created: CREATED, updated: CREATED } });
    return id;
  };
  const relation = async (type: string, start: string, end: string) => {
    await add({ type, id: randomUUID(), start, end, data: { created: CREATED, updated: CREATED } });
  };

  const tags: string[] = [];
  const groups: string[] = [];
  for (let i = 0; i < TAGS && left() > 0; i++) tags.push(await node('Tag', { name: `tag ${i}`, color: '#aa0000' }));
  for (let i = 0; i < GROUPS && left() > 0; i++) groups.push(await node('Group', { name: `group ${i}` }));
  // One user unit: User, Token, OWNS token, IS_IN_GROUP, then an OWNS tree of data nodes with tags, while room is left.
  for (let u = 0; left() >= 4; u++) {
    const user = await node('User', {
      email: `user${u}@bench.localhost.dev`,
      name: `User ${u}`,
      _passwordHash: PASSWORD_HASH,
    });
    const token = await node('Token', { hash: randomBytes(32).toString('hex'), state: 'ACTIVE' });
    await relation('OWNS', user, token);
    await relation('IS_IN_GROUP', user, groups[u % groups.length]!);
    let parent = user;
    for (let level = 0; level < 2 && left() >= 2; level++) {
      const root = await node('Data', {
        name: `data ${u}.${level}`,
        description: 'a node of a synthetic backup',
        count: level,
      });
      await relation('OWNS', parent, root);
      for (let c = 0; c < CHILDREN && left() >= 3; c++) {
        const child = await node('Data', {
          name: `data ${u}.${level}.${c}`,
          tags: ['a', 'b'],
          nested: { depth: level + 1 },
        });
        await relation('OWNS', root, child);
        await relation('HAS_TAG', child, tags[(u + c) % tags.length]!);
      }
      parent = root;
    }
  }
  while (left() > 0) await node('Data', { name: 'filler' });
  await Promise.all(pending);
  await writeFile(
    join(dir, SUMMARY_FILE),
    `${JSON.stringify({ nodeCount: nodes, relationCount: relations, fileCount: 0, version: 'dev' }, null, 2)}\n`,
  );
  return { nodes, relations };
}

/** Records how long each phase of a load or backup took. */
function phaseTimer(log: (msg: string) => void): Progress & { seconds: Record<string, number> } {
  const seconds: Record<string, number> = {};
  let phase = '';
  let began = 0;
  return {
    seconds,
    start(name) {
      phase = name;
      began = performance.now();
    },
    tick() {},
    done() {
      seconds[phase] = (performance.now() - began) / 1000;
      log(`${phase}: ${seconds[phase]!.toFixed(1)} s`);
    },
    note() {},
  };
}

export interface BackupBenchResult {
  backend: 'postgres' | 'pglite';
  elements: number;
  generateSeconds: number;
  /** The load's one pass, from the first file read to the commit (without listing the folder). */
  writeSeconds: number;
  loadSeconds: number;
  /** Whole backup:load in elements per second. */
  loadRate: number;
  createSeconds: number;
  createRate: number;
  peakRssMiB: number;
}

export async function benchBackupLoad(options: {
  elements: number;
  backend: 'postgres' | 'pglite';
  keep?: boolean;
  log?: (msg: string) => void;
}): Promise<BackupBenchResult> {
  const log = options.log ?? ((msg: string) => process.stderr.write(`[backup-load] ${msg}\n`));
  const work = await mkdtemp(join(tmpdir(), 'trellis-bench-backup-'));
  let cluster: PgCluster | null = null;
  let db: Db | null = null;
  try {
    const backupDir = join(work, 'backup');
    log(`generating a backup of ${options.elements.toLocaleString('en-US')} elements in ${backupDir}`);
    let t = performance.now();
    const generated = await generateBackup(backupDir, options.elements);
    const generateSeconds = (performance.now() - t) / 1000;
    log(`generated ${generated.nodes} nodes and ${generated.relations} relations in ${generateSeconds.toFixed(1)} s`);

    if (options.backend === 'postgres') {
      cluster = await startCluster(log);
      db = await openPostgres(cluster.url, 2);
    } else db = await openPglite(join(work, 'db'));
    await migrate(db);
    const blobs = new FsBlobStore(join(work, 'files'));

    const loadPhases = phaseTimer(log);
    const report = await loadBackup(
      { db, blobs, identifierKey: 'email', limits: validateSettings({}).element, now: new Date() },
      backupDir,
      {
        progress: loadPhases,
      },
    );
    const loadRate = options.elements / report.seconds;
    log(
      `backup:load ${options.backend}: ${options.elements} elements in ${report.seconds.toFixed(1)} s = ${Math.round(loadRate)} elements/s`,
    );

    t = performance.now();
    const created = await createBackup({ db, blobs, now: new Date() }, join(work, 'again'), {
      progress: phaseTimer(log),
    });
    const createSeconds = (performance.now() - t) / 1000;
    log(
      `backup:create ${options.backend}: ${created.nodes + created.relations} elements in ${createSeconds.toFixed(1)} s`,
    );
    return {
      backend: options.backend,
      elements: options.elements,
      generateSeconds,
      writeSeconds: loadPhases.seconds.loading ?? 0,
      loadSeconds: report.seconds,
      loadRate,
      createSeconds,
      createRate: options.elements / createSeconds,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
    };
  } finally {
    await db?.close();
    await cluster?.stop();
    if (options.keep) log(`kept ${work}`);
    else await removeTree(work);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      elements: { type: 'string', default: '100000' },
      backend: { type: 'string', default: 'postgres' },
      keep: { type: 'boolean' },
    },
  });
  const elements = Number(values.elements);
  if (!Number.isSafeInteger(elements) || elements < 1) throw new Error('--elements must be a positive integer');
  if (values.backend !== 'postgres' && values.backend !== 'pglite')
    throw new Error('--backend must be postgres or pglite');
  const result = await benchBackupLoad({ elements, backend: values.backend, keep: values.keep });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}
