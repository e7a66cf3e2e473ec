// The baselines of issue 8: tiny Fastify servers with the same Fastify version, the same `pg` driver and Trellis'
// own database layer (storage/db.ts: on PostgreSQL openPostgres, the same pool, session settings and pipelined
// connections for short reads; on PGlite the pool of src/storage/pglite.ts, opened exactly as Trellis opens it), on
// the same data. Each baseline reaches the database the way the scenario it is compared with does: B1 is a short
// read, as GET /<id>'s statements are (Db.read); B1p and B2 go through the pool (Db.query). Run as a child process by
// bench/run.ts:
//
//   node --import tsx bench/baselines.ts --port P --files DIR (--database-url URL | --pglite DIR)
//
// Prints one JSON line {"ready":true} on stdout once listening.
//   B0  GET  /b0          a fixed small JSON
//   B1  GET  /b1/:id      one primary-key SELECT of a JSONB row (prepared, like Trellis' statements)
//   B1p GET  /b1p/:id     reference for the children page: the 25 children (ordered by id) and the OWNS relations to
//                         them, as one bare SELECT that renders {nodes, relations} in the database as Trellis does
//                         (element-json.ts), no access check, no token: what the page's data alone costs
//   B2  POST /b2          one single-row INSERT of the posted JSON, into bench_b2: a copy of the elements table's
//                         definition (same columns, constraints and indexes) without the search index's column, so
//                         Trellis' own table stays as generated
//   B2x3 POST /b2x3       the three rows a create writes (the node, its OWNS and its CREATED) in one INSERT into
//                         bench_b2: the floor of POST / (the same indexes, no search column)
//   B3  PUT  /b3/file     the request body streamed to a file; GET /b3/file streams it back (plain fs streams);
//                         PUT /b3/file?fsync=1 also flushes the file to disk before answering (as a durable store must)
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { poolDb } from '../src/storage/db.js';
import { createPglite, pglitePool, resolveEmbeddedCacheMiB } from '../src/storage/pglite.js';
import { localWire } from '../src/storage/pglite-wire.js';
import { openPostgres } from '../src/storage/postgres.js';
import { elementArraySql } from '../src/storage/queries/element-json.js';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    files: { type: 'string' },
    'database-url': { type: 'string' },
    pglite: { type: 'string' },
  },
});
if (!args.port || !args.files || (!args['database-url'] && !args.pglite)) {
  process.stderr.write('usage: baselines.ts --port P --files DIR (--database-url URL | --pglite DIR)\n');
  process.exit(2);
}

// The same page cache as Trellis gets on this database ('auto').
const pglite = args['database-url']
  ? null
  : await createPglite(args.pglite, await resolveEmbeddedCacheMiB(args.pglite!, 'auto'));
const db = pglite ? poolDb('pglite', pglitePool(localWire(pglite))) : await openPostgres(args['database-url']!);
await db.query('CREATE TABLE IF NOT EXISTS bench_b2 (LIKE elements INCLUDING ALL)');
// B2 is one plain single-row INSERT: without the search index's generated tsvector column (schema/search.ts) and its GIN
// index, which Trellis pays on every write by design. Copied along, they halved B2 (19.7k -> 9.6k inserts/s on
// PostgreSQL), which would have made every write ratio look better than the write path is.
await db.query('ALTER TABLE bench_b2 DROP COLUMN IF EXISTS search');

const filesDir = args.files;
await mkdir(filesDir, { recursive: true });
const stored = join(filesDir, 'b3.bin');

const app = Fastify({ logger: false });
// B3 takes the raw body stream; Fastify hands it over unparsed.
app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));

const CREATOR = '00000000-0000-4000-8000-000000000001';
const SMALL = { type: 'Baseline', id: '00000000-0000-4000-8000-000000000000', data: { hello: 'world', answer: 42 } };
app.get('/b0', async () => SMALL);

app.get<{ Params: { id: string } }>('/b1/:id', async (request, reply) => {
  const { rows } = await db.read<Record<string, unknown>>(
    'SELECT id, type, start_id, end_id, data, file, created, updated FROM elements WHERE id = $1',
    [request.params.id],
    'b1',
  );
  if (rows.length === 0) return reply.code(404).send({ status: 404 });
  return rows[0];
});

app.get<{ Params: { id: string } }>('/b1p/:id', async (request, reply) => {
  // Rendered by the database with Trellis' own renderer (element-json.ts), the cheapest way this process knows to
  // turn 50 rows into JSON: the floor of any page of these elements, before a token or an access check is paid.
  const { rows } = await db.query<{ body: string }>(
    `WITH rels AS (SELECT r.*, r.end_id AS other FROM elements r WHERE r.start_id = $1 AND r.type = 'OWNS'),
                page AS (SELECT other FROM rels ORDER BY other LIMIT 25)
           SELECT '{"nodes":' || (SELECT ${elementArraySql('n', 'n.id')} FROM page JOIN elements n ON n.id = page.other)
                  || ',"relations":' || (SELECT ${elementArraySql('r', 'r.other, r.id')} FROM rels r JOIN page ON page.other = r.other)
                  || '}' AS body`,
    [request.params.id],
    'b1p',
  );
  return reply.type('application/json; charset=utf-8').send(rows[0]!.body);
});

app.post<{ Body: { type?: string; data?: Record<string, unknown> } }>('/b2', async (request, reply) => {
  const id = randomUUID();
  const now = new Date();
  await db.query(
    'INSERT INTO bench_b2 (id, type, data, created, updated) VALUES ($1, $2, $3, $4, $4)',
    [id, request.body?.type ?? 'Baseline', request.body?.data ?? {}, now],
    'b2',
  );
  return reply.code(201).header('location', `/${id}`).send();
});

app.post<{ Body: { type?: string; data?: Record<string, unknown> } }>('/b2x3', async (request, reply) => {
  const id = randomUUID();
  const now = new Date();
  // The three rows a create writes (the node, an OWNS and a CREATED from the creator, here a fixed id), in one
  // statement and so one transaction.
  await db.query(
    `INSERT INTO bench_b2 (id, type, start_id, end_id, data, created, updated) VALUES
       ($1, $2, NULL, NULL, $3, $4, $4), ($5, 'OWNS', $7, $1, '{}', $4, $4), ($6, 'CREATED', $7, $1, '{}', $4, $4)`,
    [id, request.body?.type ?? 'Baseline', request.body?.data ?? {}, now, randomUUID(), randomUUID(), CREATOR],
    'b2x3',
  );
  return reply.code(201).header('location', `/${id}`).send();
});

app.put<{ Querystring: { fsync?: string } }>('/b3/file', async (request, reply) => {
  const temp = join(filesDir, `b3-${randomUUID()}.part`);
  await pipeline(
    request.body as NodeJS.ReadableStream,
    createWriteStream(temp, { flush: request.query.fsync === '1' }),
  );
  await rename(temp, stored);
  return reply.code(201).send();
});

app.get('/b3/file', async (_request, reply) => {
  const { size } = await stat(stored);
  return reply.type('application/octet-stream').header('content-length', size).send(createReadStream(stored));
});

await app.listen({ port: Number(args.port), host: '127.0.0.1' });
process.stdout.write(`${JSON.stringify({ ready: true, port: Number(args.port) })}\n`);

const shutdown = async () => {
  await app.close();
  await db.close();
  // Closing PGlite checkpoints its data directory, which Trellis opens next.
  await pglite?.close();
  process.exit(0);
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
