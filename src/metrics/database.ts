// The database as the metrics see it: every statement timed by its name, and the pool's connections counted at each
// scrape. A wrapper around the Db the services use, so that the adapters stay as they are.
import type { Db, Queryable } from '../storage/db.js';
import type { PromMetrics } from './registry.js';

/**
 * The label of a statement name. Names made from a query's structure end in a hash of it
 * (storage/queries/statement-names.ts): their prefix names them, so that the label values stay few.
 */
function statementLabel(name: string | undefined): string {
  if (name === undefined) return 'unnamed';
  return name.replace(/_[0-9a-f]{24}$/, '');
}

/** Runs of one statement, timed and their failures counted. */
type Run = <R extends object>(
  text: string,
  values?: readonly unknown[],
  name?: string,
) => Promise<{ rows: R[]; rowCount: number }>;

function timed(run: Run, metrics: PromMetrics): Run {
  return (text, values, name) => {
    const started = performance.now();
    const label = statementLabel(name);
    return run(text, values, name).then(
      (result) => {
        metrics.statement(label, (performance.now() - started) / 1000);
        return result as never;
      },
      (error: unknown) => {
        metrics.statement(label, (performance.now() - started) / 1000);
        metrics.statementErrors.labels(label).inc();
        throw error;
      },
    );
  };
}

function timedQueryable(q: Queryable, metrics: PromMetrics): Queryable {
  // Looked up at each call, not bound once: whoever wraps `q` later (a test counting statements) is still called.
  const query = timed(((text, values, name) => q.query(text, values, name)) as Run, metrics);
  // A transaction's `read` is its `query`: one wrapper serves both.
  const read = q.read === q.query ? query : timed(((text, values, name) => q.read(text, values, name)) as Run, metrics);
  return { query, read } as Queryable;
}

/** `db` with its statements timed, and its pool's counts observed at every scrape. */
export function measuredDb(db: Db, metrics: PromMetrics): Db {
  const pool = db.pool;
  if (pool !== undefined) {
    metrics.observe('trellis_db_pool_connections', 'Connections the database pool holds open.', () => pool.totalCount);
    metrics.observe(
      'trellis_db_pool_max_connections',
      'Connections the database pool may open (database.poolSize; 1 on the embedded database).',
      () => pool.options.max ?? 10,
    );
    metrics.observe(
      'trellis_db_pool_connections_in_use',
      'Connections of the pool checked out by a statement or transaction.',
      () => pool.totalCount - pool.idleCount,
    );
    metrics.observe(
      'trellis_db_pool_waiting_requests',
      'Statements and transactions waiting for a connection of the pool.',
      () => pool.waitingCount,
    );
  }
  const { query, read } = timedQueryable(db, metrics);
  return {
    kind: db.kind,
    ...(db.sessionEpoch ? { sessionEpoch: db.sessionEpoch } : {}),
    ...(pool ? { pool } : {}),
    query,
    read,
    transaction: (work, options) => db.transaction((tx) => work(timedQueryable(tx, metrics)), options),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    close: () => db.close(),
  } as Db;
}
