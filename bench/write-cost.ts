// What creating a node costs in the database alone, without HTTP, and where that time goes: statements per second
// on the benchmark's data set (PostgreSQL: 32 in flight through a pool of 10, as Trellis runs them; PGlite: one at a
// time, as it runs them), alternating, for
//   b2        one single-row INSERT into a copy of the elements table without the search column (bench's B2)
//   b2x3      the three rows a create needs (the node, its OWNS and its CREATED) in one INSERT into that copy
//   b2x3s     the same into a copy that keeps the search column and its GIN index (what the search document costs)
//   create    the statement POST / runs (storage/queries/elements.ts insertNodeAs: token, CREATE check, the three
//             rows, the access keys and, through triggers, the access index and the search document)
// then EXPLAIN ANALYZE of `create`, summed over many runs: the time of each trigger and of the statement.
//
//   node --import tsx bench/write-cost.ts [--backend postgres|pglite] [--nodes N] [--seconds S] [--rounds R]
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hashToken } from '../src/domain/accounts/tokens.js';
import type { Db } from '../src/storage/db.js';
import { migrate } from '../src/storage/migrate.js';
import { openPglite } from '../src/storage/pglite.js';
import { openPostgres } from '../src/storage/postgres.js';
import { insertNodeAs } from '../src/storage/queries/elements.js';
import { type PgCluster, startCluster } from './lib/cluster.js';
import { generateDataset } from './lib/dataset.js';

const { values: args } = parseArgs({
  options: {
    backend: { type: 'string', default: 'postgres' },
    nodes: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
  },
});
const seconds = Number(args.seconds);
class Rollback extends Error {}
const say = (msg: string) => process.stderr.write(`${msg}\n`);

let cluster: PgCluster | null = null;
let dataDir: string | null = null;
let db: Db;
if (args.backend === 'pglite') {
  dataDir = await mkdtemp(join(tmpdir(), 'trellis-write-cost-'));
  db = await openPglite(dataDir);
} else {
  cluster = await startCluster(say);
  db = await openPostgres(cluster.url, 10);
}
const inFlight = args.backend === 'pglite' ? 1 : 32;

try {
  await migrate(db);
  const ds = await generateDataset(db, { nodes: Number(args.nodes), users: 200 }, say);
  await db.query('CREATE TABLE bench_b2 (LIKE elements INCLUDING ALL)');
  await db.query('ALTER TABLE bench_b2 DROP COLUMN search');
  await db.query('CREATE TABLE bench_b2s (LIKE elements INCLUDING ALL)');
  const users = ds.users.map((u) => ({ id: u.id, credentials: { tokenHash: hashToken(u.token) } }));
  const data = (k: number) => ({ name: `note ${k}`, text: `a note about the benchmark, number ${k}` });
  const threeRows = (table: string) => (k: number) => {
    const user = users[k % users.length]!;
    const node = randomUUID();
    const now = new Date().toISOString();
    return db.query(
      `INSERT INTO ${table} (id, type, start_id, end_id, data, created, updated) VALUES
         ($1::uuid, 'Note', NULL, NULL, $2::jsonb, $3::timestamptz, $3::timestamptz),
         ($4::uuid, 'OWNS', $5::uuid, $1::uuid, '{}'::jsonb, $3::timestamptz, $3::timestamptz),
         ($6::uuid, 'CREATED', $5::uuid, $1::uuid, '{}'::jsonb, $3::timestamptz, $3::timestamptz)`,
      [node, data(k), now, randomUUID(), user.id, randomUUID()],
      `write_cost_${table}`,
    );
  };
  const create = async (k: number) => {
    const user = users[k % users.length]!;
    const node = { id: randomUUID(), type: 'Note', data: data(k), parentId: null, ownsId: randomUUID() };
    const result = await insertNodeAs(db, user.credentials, new Date(), { ...node, createdId: randomUUID() });
    if (!result.inserted) throw new Error(`create as ${user.id} failed: ${JSON.stringify(result)}`);
  };
  const variants: Record<string, (k: number) => Promise<unknown>> = {
    b2: (k) =>
      db.query(
        'INSERT INTO bench_b2 (id, type, data, created, updated) VALUES ($1, $2, $3, $4, $4)',
        [randomUUID(), 'Note', data(k), new Date().toISOString()],
        'write_cost_b2',
      ),
    b2x3: threeRows('bench_b2'),
    b2x3s: threeRows('bench_b2s'),
    create,
  };
  const rates: Record<string, number[]> = {};
  for (let round = 1; round <= Number(args.rounds); round++)
    for (const [name, one] of Object.entries(variants)) {
      for (let i = 0; i < 200; i++) await one(i);
      const until = Date.now() + seconds * 1000;
      let n = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (Date.now() < until) await one(n++);
        }),
      );
      rates[name] = [...(rates[name] ?? []), n / seconds];
      say(`round ${round}  ${name.padEnd(6)} ${Math.round(n / seconds).toLocaleString('en-US')} statements/s`);
    }
  const best = (name: string) => Math.max(...rates[name]!);
  process.stdout.write(`\n${args.backend}, ${args.nodes} nodes, best of ${args.rounds} rounds of ${seconds} s:\n`);
  for (const name of Object.keys(variants))
    process.stdout.write(
      `  ${name.padEnd(6)} ${Math.round(best(name)).toLocaleString('en-US').padStart(7)} statements/s` +
        `  ${(best(name) / best('b2x3')).toFixed(2)} x b2x3\n`,
    );

  // Where the create statement's time goes: EXPLAIN ANALYZE reports each trigger's time; summed over many runs.
  const explained = new Map<string, { ms: number; calls: number }>();
  const add = (key: string, ms: number, calls = 1) => {
    const entry = explained.get(key) ?? { ms: 0, calls: 0 };
    explained.set(key, { ms: entry.ms + ms, calls: entry.calls + calls });
  };
  const runs = 300;
  await db
    .transaction(async (tx) => {
      // The statement's text and parameters, as insertNodeAs sends them, captured from a call on a wrapper.
      let captured: { text: string; values: unknown[] } | null = null;
      const capture = {
        query: async (text: string, values?: unknown[]) => {
          captured = { text, values: values ?? [] };
          return { rows: [{ authenticated: true, allowed: true, inserted: true }] };
        },
      } as unknown as Db;
      for (let k = 0; k < runs; k++) {
        const user = users[k % users.length]!;
        const node = { id: randomUUID(), type: 'Note', data: data(k), parentId: null, ownsId: randomUUID() };
        await insertNodeAs(capture, user.credentials, new Date(), { ...node, createdId: randomUUID() });
        const { text, values } = captured!;
        const { rows } = await tx.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
        const plan = (rows[0]!['QUERY PLAN'] as Array<Record<string, unknown>>)[0]!;
        add('planning', plan['Planning Time'] as number);
        add('execution (incl. triggers)', plan['Execution Time'] as number);
        for (const t of (plan.Triggers as Array<{ 'Trigger Name': string; Time: number; Calls: number }>) ?? [])
          add(`trigger ${t['Trigger Name']}`, t.Time, t.Calls);
      }
      throw new Rollback();
    })
    .catch((err) => {
      if (!(err instanceof Rollback)) throw err;
    });
  process.stdout.write(`\nEXPLAIN ANALYZE of create, ${runs} runs, mean per statement:\n`);
  for (const [key, { ms, calls }] of explained)
    process.stdout.write(`  ${key.padEnd(48)} ${((ms / runs) * 1000).toFixed(0).padStart(6)} µs  (${calls} calls)\n`);
} finally {
  await db.close();
  if (cluster) await cluster.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}
