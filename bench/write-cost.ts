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
// --variant name=file.sql (repeatable) measures a changed schema before it becomes a migration: the data set is
// copied once per variant (a database made from it as a template on PostgreSQL, a copy of the data directory on
// PGlite), the file's SQL is applied to the copy (dropping a trigger, a constraint or the search column, replacing
// a function), and `create` runs on every copy in turn, round after round. --cpu (PostgreSQL) runs one statement at
// a time through one connection and reports statements per CPU second of its server process (/proc/<pid>/stat),
// which a machine busy with other work disturbs far less than a rate per second.
//
//   node --import tsx bench/write-cost.ts [--backend postgres|pglite] [--nodes N] [--seconds S] [--rounds R]
//     [--variant name=file.sql ...] [--cpu]
import { randomUUID } from 'node:crypto';
import { cpSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hashToken } from '../src/domain/accounts/tokens.js';
import type { Db } from '../src/storage/db.js';
import { migrate, splitStatements } from '../src/storage/migrate.js';
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
    variant: { type: 'string', multiple: true, default: [] },
    cpu: { type: 'boolean', default: false },
  },
});
const seconds = Number(args.seconds);
const pglite = args.backend === 'pglite';
class Rollback extends Error {}
const say = (msg: string) => process.stderr.write(`${msg}\n`);
const variants = (args.variant ?? []).map((v) => {
  const [name, file] = v.split('=') as [string, string];
  return { name, sql: readFileSync(file, 'utf8') };
});

// pg_stat_statements times every statement, the ones triggers run included: what the create's parts cost, side by
// side with the baselines under the same load.
const cluster: PgCluster | null = pglite
  ? null
  : await startCluster(say, {
      shared_preload_libraries: 'pg_stat_statements',
      'pg_stat_statements.track': 'all',
    });
const work = await mkdtemp(join(tmpdir(), 'trellis-write-cost-'));
const pool = args.cpu ? 1 : 10;
/** The database `name` of the run: a database of the cluster, or a PGlite data directory. */
const open = (name: string) =>
  cluster ? openPostgres(cluster.url.replace(/\/[^/]*$/, `/write_cost_${name}`), pool) : openPglite(join(work, name));
const inFlight = pglite || args.cpu ? 1 : 32;
const copies = new Map<string, Db>();
let db: Db | null = null;

try {
  const admin = cluster ? await openPostgres(cluster.url, 1) : null;
  await admin?.query('CREATE DATABASE write_cost_current');
  db = await open('current');
  await migrate(db);
  const ds = await generateDataset(db, { nodes: Number(args.nodes), users: 200 }, say);
  await db.query('CREATE TABLE bench_b2 (LIKE elements INCLUDING ALL)');
  await db.query('ALTER TABLE bench_b2 DROP COLUMN search');
  await db.query('CREATE TABLE bench_b2s (LIKE elements INCLUDING ALL)');
  if (variants.length > 0) {
    await db.close();
    for (const v of variants) {
      if (admin) await admin.query(`CREATE DATABASE write_cost_${v.name} TEMPLATE write_cost_current`);
      else cpSync(join(work, 'current'), join(work, v.name), { recursive: true });
      const copy = await open(v.name);
      for (const statement of splitStatements(v.sql)) await copy.query(statement);
      await copy.query('ANALYZE');
      copies.set(v.name, copy);
    }
    db = await open('current');
  }
  await admin?.close();
  const main = db;
  const users = ds.users.map((u) => ({ id: u.id, credentials: { tokenHash: hashToken(u.token) } }));
  const data = (k: number) => ({ name: `note ${k}`, text: `a note about the benchmark, number ${k}` });
  const threeRows = (table: string) => (k: number) => {
    const user = users[k % users.length]!;
    const node = randomUUID();
    const now = new Date().toISOString();
    return main.query(
      `INSERT INTO ${table} (id, type, start_id, end_id, data, created, updated) VALUES
         ($1::uuid, 'Note', NULL, NULL, $2::jsonb, $3::timestamptz, $3::timestamptz),
         ($4::uuid, 'OWNS', $5::uuid, $1::uuid, '{}'::jsonb, $3::timestamptz, $3::timestamptz),
         ($6::uuid, 'CREATED', $5::uuid, $1::uuid, '{}'::jsonb, $3::timestamptz, $3::timestamptz)`,
      [node, data(k), now, randomUUID(), user.id, randomUUID()],
      `write_cost_${table}`,
    );
  };
  const create = (on: Db) => async (k: number) => {
    const user = users[k % users.length]!;
    const node = { id: randomUUID(), type: 'Note', data: data(k), parentId: null, ownsId: randomUUID() };
    const result = await insertNodeAs(on, user.credentials, new Date(), { ...node, createdId: randomUUID() });
    if (!result.inserted) throw new Error(`create as ${user.id} failed: ${JSON.stringify(result)}`);
  };
  const measured: Array<{ name: string; on: Db; one: (k: number) => Promise<unknown> }> = [
    {
      name: 'b2',
      on: main,
      one: (k) =>
        main.query(
          'INSERT INTO bench_b2 (id, type, data, created, updated) VALUES ($1, $2, $3, $4, $4)',
          [randomUUID(), 'Note', data(k), new Date().toISOString()],
          'write_cost_b2',
        ),
    },
    { name: 'b2x3', on: main, one: threeRows('bench_b2') },
    { name: 'b2x3s', on: main, one: threeRows('bench_b2s') },
    { name: 'create', on: main, one: create(main) },
    ...[...copies].map(([name, on]) => ({ name, on, one: create(on) })),
  ];
  // The CPU seconds the server process behind `on`'s one connection has used (utime + stime, clock ticks of 10 ms).
  const cpuSeconds = async (on: Db) => {
    const { rows } = await on.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const fields = readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
  const unit = args.cpu ? 'statements/CPU s' : 'statements/s';
  const rates: Record<string, number[]> = {};
  for (let round = 1; round <= Number(args.rounds); round++)
    for (const { name, on, one } of measured) {
      for (let i = 0; i < 200; i++) await one(i);
      const until = Date.now() + seconds * 1000;
      let n = 0;
      const before = args.cpu ? await cpuSeconds(on) : 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (Date.now() < until) await one(n++);
        }),
      );
      const rate = args.cpu ? n / Math.max(0.01, (await cpuSeconds(on)) - before) : n / seconds;
      rates[name] = [...(rates[name] ?? []), rate];
      say(`round ${round}  ${name.padEnd(12)} ${Math.round(rate).toLocaleString('en-US')} ${unit}`);
    }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  process.stdout.write(
    `\n${args.backend}, ${args.nodes} nodes, ${inFlight} in flight, median of ${args.rounds} rounds of ${seconds} s:\n`,
  );
  for (const { name } of measured)
    process.stdout.write(
      `  ${name.padEnd(12)} ${Math.round(median(rates[name]!)).toLocaleString('en-US').padStart(7)} ${unit}` +
        `  ${(median(rates[name]!) / median(rates.b2x3!)).toFixed(2)} x b2x3   (${rates[name]!.map((r) => Math.round(r)).join(', ')})\n`,
    );

  // Every statement's mean execution time, nested ones included, over a round of all of them interleaved.
  if (cluster) {
    await main.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await main.query('SELECT pg_stat_statements_reset()');
    const rounds = 2000;
    let k = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (k < rounds * measured.length) {
          const i = k++;
          await measured[i % measured.length]!.one(i);
        }
      }),
    );
    const { rows } = await main.query<{ calls: string; mean: number; db: string; query: string }>(
      `SELECT calls, total_exec_time / calls * 1000 AS mean, substr(d.datname, 12) AS db,
              left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS query
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
       WHERE query NOT LIKE '%pg_stat_statements%' AND calls >= ${rounds}
       ORDER BY total_exec_time DESC LIMIT 16`,
    );
    process.stdout.write(`\npg_stat_statements, ${rounds} of each interleaved, 4 in flight, mean execution time:\n`);
    for (const r of rows)
      process.stdout.write(
        `  ${Math.round(r.mean).toString().padStart(6)} us  ${String(r.calls).padStart(6)} calls  ${r.db.padEnd(8)} ${r.query}\n`,
      );
  }

  // Where the create statement's time goes: EXPLAIN ANALYZE reports each trigger's time; summed over many runs.
  const explained = new Map<string, { ms: number; calls: number }>();
  const add = (key: string, ms: number, calls = 1) => {
    const entry = explained.get(key) ?? { ms: 0, calls: 0 };
    explained.set(key, { ms: entry.ms + ms, calls: entry.calls + calls });
  };
  const runs = 300;
  await main
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
  for (const copy of copies.values()) await copy.close();
  await db?.close();
  await cluster?.stop();
  await rm(work, { recursive: true, force: true });
}
