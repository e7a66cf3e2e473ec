// What GET /<id> costs in the database alone, without HTTP: statements per second with 32 in flight through a pool
// of 10 (as Trellis runs them), on the benchmark's data set, for
//   pk        a bare primary-key SELECT of the element (what B1 runs)
//   caller    the same plus resolving the token (callerSql: part of every authenticated statement)
//   get       the statement GET /<id> runs to decide: token, element and the READ check over the access index
//   known     the statement GET /<id> runs when it remembers the decision (storage/access-decisions.ts): the
//             element and the access epoch
//
//   node --import tsx bench/statement-cost.ts [--nodes N] [--seconds S]
import { parseArgs } from 'node:util';
import { hashToken } from '../src/domain/accounts/tokens.js';
import { AccessDecisions } from '../src/storage/access-decisions.js';
import { migrate } from '../src/storage/migrate.js';
import { openPostgres } from '../src/storage/postgres.js';
import { callerParams, callerSql } from '../src/storage/queries/accounts.js';
import { ELEMENT_COLUMNS, readableElement } from '../src/storage/queries/elements.js';
import { startCluster } from './lib/cluster.js';
import { generateDataset } from './lib/dataset.js';

const { values: args } = parseArgs({
  options: { nodes: { type: 'string', default: '10000' }, seconds: { type: 'string', default: '4' } },
});
const seconds = Number(args.seconds);
const cluster = await startCluster((msg) => process.stderr.write(`${msg}\n`));
try {
  const db = await openPostgres(cluster.url, 10);
  await migrate(db);
  const ds = await generateDataset(db, { nodes: Number(args.nodes), users: 200 }, (msg) =>
    process.stderr.write(`${msg}\n`),
  );
  const targets = ds.targets.map((t) => ({ id: t.id, credentials: { tokenHash: hashToken(t.token) } }));
  const decisions = new AccessDecisions();
  const variants: Record<string, (k: number) => Promise<unknown>> = {
    pk: (k) =>
      db.query(
        `SELECT ${ELEMENT_COLUMNS} FROM elements e WHERE e.id = $1`,
        [targets[k % targets.length]!.id],
        'cost_pk',
      ),
    caller: (k) => {
      const t = targets[k % targets.length]!;
      return db.query(
        `SELECT ${ELEMENT_COLUMNS} FROM (${callerSql(t.credentials).sql}) caller LEFT JOIN elements e ON e.id = $4::uuid`,
        [...callerParams(t.credentials, new Date()), t.id],
        'cost_caller',
      );
    },
    get: async (k) => {
      const t = targets[k % targets.length]!;
      const { body } = await readableElement(db, t.credentials, new Date(), t.id);
      if (body === null) throw new Error(`target ${t.id} not readable`);
    },
    known: async (k) => {
      const t = targets[k % targets.length]!;
      const { body } = await readableElement(db, t.credentials, new Date(), t.id, decisions);
      if (body === null) throw new Error(`target ${t.id} not readable`);
    },
  };
  for (let round = 1; round <= 2; round++)
    for (const [name, one] of Object.entries(variants)) {
      for (let i = 0; i < 500; i++) await one(i);
      const until = Date.now() + seconds * 1000;
      let n = 0;
      const cpu = process.cpuUsage();
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (Date.now() < until) await one(n++);
        }),
      );
      const used = process.cpuUsage(cpu);
      const perStatement = (used.user + used.system) / n;
      process.stdout.write(
        `round ${round}  ${name.padEnd(7)} ${Math.round(n / seconds)
          .toLocaleString('en-US')
          .padStart(7)} statements/s, ` + `${perStatement.toFixed(1)} µs of this process's CPU each\n`,
      );
    }
  await db.close();
} finally {
  await cluster.stop();
}
