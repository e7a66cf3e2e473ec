// --large's warm-up (a server that has been answering these requests for a while) and, with pg_stat_statements
// loaded, what the database did per request of a measurement.
import { openPostgres } from '../../src/storage/postgres.js';
import { type Bench, MiB } from '../lib/context.js';
import type { HttpRequest } from '../lib/load.js';

const RELATIONS = `FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname IN ('public', 'pg_toast') AND c.relkind IN ('r', 'i', 't', 'm') AND c.relpersistence = 'p'`;

/**
 * --large's warm-up, part 1: the data set's tables and indexes read into shared buffers (pg_prewarm, contrib),
 * smallest first, so that what does not fit is the largest table's tail. A long-running server's buffers hold its
 * working set, and after a restart pg_prewarm's autoprewarm (on by default once the module is in
 * shared_preload_libraries) loads what they held before. Skipped when the buffers hold less than half of the data
 * set: reading it through them would leave only its last relations there.
 */
export async function prewarm(bench: Bench, url: string) {
  const { log } = bench;
  const db = await openPostgres(url, 1);
  try {
    const { rows: available } = await db.query(`SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm'`);
    if (available.length === 0) {
      log('--large warm-up: pg_prewarm is not available, the buffers are warmed by the requests alone');
      return;
    }
    const { rows: sizes } = await db.query<{ bytes: string; buffers: string }>(
      `SELECT sum(pg_relation_size(c.oid)) AS bytes,
              (SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers') AS buffers
       ${RELATIONS}`,
    );
    if (Number(sizes[0]!.bytes) > 2 * Number(sizes[0]!.buffers)) {
      log(
        `--large warm-up: no pg_prewarm, the data set (${Math.round(Number(sizes[0]!.bytes) / MiB)} MiB) is more than twice the buffers`,
      );
      return;
    }
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_prewarm');
    const t0 = Date.now();
    const { rows } = await db.query<{ blocks: string }>(
      `SELECT pg_prewarm(c.oid) AS blocks
       ${RELATIONS}
       ORDER BY pg_relation_size(c.oid), c.oid`,
    );
    const { rows: buffers } = await db.query<{ setting: string }>(
      `SELECT current_setting('shared_buffers') AS setting`,
    );
    const blocks = rows.reduce((sum, r) => sum + Number(r.blocks), 0);
    log(
      `--large warm-up: pg_prewarm read ${blocks.toLocaleString('en-US')} blocks (${Math.round((blocks * 8) / 1024)} MiB) into shared_buffers of ${buffers[0]?.setting} in ${((Date.now() - t0) / 1000).toFixed(1)}s`,
    );
  } finally {
    await db.close();
  }
}

/** The longest a warm-up cycle runs: the 1M text match's whole cycle would take minutes. */
const WARM_CYCLE_MS = 60_000;

/**
 * --large's warm-up, part 2: every request of a row sent once, `connections` at a time (through the server's pool as the load
 * does), a whole cycle of its targets, or as much of it as `limitMs` allows.
 */
export async function warmCycle(
  bench: Bench,
  what: string,
  baseUrl: string,
  requests: HttpRequest[],
  connections: number,
  limitMs = WARM_CYCLE_MS,
): Promise<number> {
  const t0 = Date.now();
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < requests.length && Date.now() - t0 < limitMs) {
        const r = requests[next++]!;
        const response = await fetch(`${baseUrl}${r.path}`, { method: r.method, headers: r.headers, body: r.body });
        await response.arrayBuffer();
        if (!response.ok) failed++;
      }
    }),
  );
  bench.log(
    `${what}: warmed with ${next.toLocaleString('en-US')} of its ${requests.length.toLocaleString('en-US')} requests in ${((Date.now() - t0) / 1000).toFixed(1)}s${failed ? `, ${failed} FAILED` : ''}`,
  );
  return next;
}

export type StatementStats = NonNullable<Awaited<ReturnType<typeof statementStats>>>;

/**
 * With pg_stat_statements loaded (--pg-set shared_preload_libraries=pg_stat_statements): what the database did for
 * a measurement, per request of it: the statements that ran at least once a request, with their mean execution time
 * and the shared buffers they found (hit) and had to read. Null without the module.
 */
export async function statementStats(url: string) {
  const db = await openPostgres(url, 1);
  const { rows: loaded } = await db.query<{ setting: string }>(
    `SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries'`,
  );
  if (!loaded[0]?.setting.includes('pg_stat_statements')) {
    await db.close();
    return null;
  }
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return {
    reset: async () => {
      await db.query('SELECT pg_stat_statements_reset()');
    },
    report: async (requests: number) => {
      const { rows } = await db.query<{ query: string; calls: string; mean: number; hit: string; read: string }>(
        `SELECT s.query, s.calls, s.mean_exec_time AS mean, s.shared_blks_hit AS hit, s.shared_blks_read AS read
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
         WHERE d.datname = current_database() AND s.query NOT LIKE '%pg_stat_statements%'
         ORDER BY s.total_exec_time DESC LIMIT 4`,
      );
      return rows
        .filter((r) => Number(r.calls) >= requests * 0.05)
        .map((r) => {
          const calls = Number(r.calls);
          // Statements of one request often begin alike (the element's rendering): the end tells them apart.
          const text = r.query.replace(/\s+/g, ' ');
          const what = text.length > 80 ? `${text.slice(0, 40)}...${text.slice(-40)}` : text;
          return `"${what}" ${(calls / requests).toFixed(1)} x, ${(r.mean * 1000).toFixed(0)} us, ${(Number(r.hit) / calls).toFixed(1)} hit ${(Number(r.read) / calls).toFixed(1)} read`;
        })
        .join('; ');
    },
    close: () => db.close(),
  };
}
