// The database behind a small interface: parameterised queries and transactions. Both backends (a PostgreSQL
// server through a `pg` pool, and embedded PGlite through a `pg` pool on pglite-socket.ts) are `pg` pools, so the
// same SQL, prepared statements included, runs on both.
import pg from 'pg';
import { serviceUnavailable } from '../errors.js';
import type { SessionAccessEpoch } from './access-decisions.js';
import { ANSWER_GRACE_MS } from './answer-grace.js';
import type { ReadLanes } from './read-lanes.js';

// Rows are typed by the caller; interfaces (without index signatures) are fine.
type Row = object;

/**
 * Settings of every database session of ours (both backends).
 * - plan_cache_mode: every statement of ours is a named prepared statement written for one shape of data (lookups
 *   by id, index probes), so its generic plan is the plan we want; left to choose, PostgreSQL re-planned on every
 *   execution.
 * - random_page_cost: the working set is in memory (or on SSD); with the default of 4 the planner prefers a
 *   sequential scan of a small tokens table over its unique index in every authenticated statement.
 * - jit: our statements run for micro- to milliseconds; JIT compilation costs tens of milliseconds. PGlite has no
 *   JIT; the setting is harmless there.
 * docs/decisions/009-session-settings.md holds the measurements.
 */
export const SESSION_SETTINGS: Record<string, string> = {
  plan_cache_mode: 'force_generic_plan',
  random_page_cost: '1.1',
  jit: 'off',
};

interface QueryResult<R extends Row = Row> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  /** Runs one parameterised statement. A `name` makes it a prepared statement, parsed once per connection. */
  query<R extends Row = Row>(text: string, values?: readonly unknown[], name?: string): Promise<QueryResult<R>>;
  /**
   * A short read: one read-only statement that reads a bounded number of rows by index and takes no locks. On a
   * PostgreSQL server it shares a pipelined connection with other short reads (read-lanes.ts); in a transaction, or on
   * PGlite, it is `query`.
   */
  read<R extends Row = Row>(text: string, values?: readonly unknown[], name?: string): Promise<QueryResult<R>>;
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** The access epoch as this process sees it, on a database only this process uses (PGlite; access-decisions.ts). */
  readonly sessionEpoch?: SessionAccessEpoch;
  /** The connection pool's counts, read by the metrics (src/metrics/database.ts). */
  readonly pool?: Pick<pg.Pool, 'totalCount' | 'idleCount' | 'waitingCount' | 'options'>;
  /**
   * Runs `work` in one transaction; it commits when `work` resolves and rolls back when it throws. A
   * `statementTimeoutMs` cancels any of its statements that runs longer (SQLSTATE 57014), on both backends
   * (StatementBudget), instead of the database's bound of every statement (PoolDbOptions); 0 lifts that bound (for
   * work whose statements may take long, such as migrations).
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>, options?: { statementTimeoutMs?: number }): Promise<T>;
  /**
   * Calls `onNotify` whenever a committed transaction notified `channel` (LISTEN/NOTIFY), and after every
   * reconnection of the listening session (what was notified while it was away is lost, so a listener reads the
   * truth again then). Resolves once listening, to the function that stops it.
   */
  listen(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Db.listen without the Db: how a backend hears its notifications. */
export type Listen = Db['listen'];

type PgRunner = Pick<pg.PoolClient, 'query'>;

/**
 * One statement on `client`, answered to `done` (its parameters serialised first). The statement is handed to the
 * driver as a `pg.Query` made from the text (a name set afterwards) rather than as a config object, because `pg`
 * copies a config object property by property (`cloneQueryConfig`, visible in CPU profiles of GET /<id>) and wraps
 * its own promise in a second one; a text it takes as it is.
 */
function statementOn<R extends Row>(
  client: PgRunner,
  text: string,
  values: readonly unknown[],
  name: string | undefined,
  waitMs: number,
  done: (error: Error | null, result: QueryResult<R> | null) => void,
): void {
  let params: unknown[];
  try {
    params = values.map(serialisedObject);
  } catch (error) {
    done(error as Error, null); // nothing has been sent
    return;
  }
  const statement = new pg.Query(text, params) as pg.Query & {
    name?: string;
    query_timeout?: number;
    callback?: (error: Error | null, result: pg.QueryResult) => void;
  };
  if (name !== undefined) statement.name = name;
  if (waitMs > 0) statement.query_timeout = waitMs;
  statement.callback = (error: Error | null, result: pg.QueryResult) => {
    if (error) return done(error, null);
    result.rowCount ??= 0;
    done(null, result as unknown as QueryResult<R>);
  };
  client.query(statement);
}

/** One statement on a checked-out connection, failing after `waitMs` without an answer (0: never). */
function run<R extends Row>(
  client: PgRunner,
  text: string,
  values: readonly unknown[],
  name: string | undefined,
  waitMs: number,
): Promise<QueryResult<R>> {
  return new Promise((resolve, reject) =>
    statementOn<R>(client, text, values, name, waitMs, (error, result) => (error ? reject(error) : resolve(result!))),
  );
}

/** What became of the statements of a transaction: the errors they failed with, whether the connection is lost. */
interface TransactionState {
  failures: Set<unknown>;
  lost: boolean;
}

/** The statements of a transaction on `client`, noting their failures in `state`. */
function runner(client: PgRunner, waitMs: number, state: TransactionState): Queryable {
  const query = <R extends Row>(text: string, values: readonly unknown[] = [], name?: string) =>
    run<R>(client, text, values, name, waitMs).catch((error: unknown) => {
      state.failures.add(error);
      if (connectionLost(error)) state.lost = true;
      throw error;
    });
  return { query, read: query };
}

/** SQLSTATEs of a server that is shutting down, starting, full, or lost the connection (class 08). */
const SERVER_UNAVAILABLE = /^(08...|57P0[1-3]|53300)$/;
const QUERY_CANCELED = '57014';
/** Errors of the connection's socket: the server is gone, restarting, or out of reach. */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether the connection `error` came from can be used no more: its statement went unanswered (the driver's
 * timeout, after which the answer may still come and the connection is mid-statement, maybe mid-transaction), it
 * broke or closed, or the server is ending the session. Every error the server answers otherwise leaves the
 * connection as good as before (`pg` ends every statement with Sync).
 */
function connectionLost(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return SERVER_UNAVAILABLE.test(error.code ?? '');
  const e = error as { message?: string; code?: string } | null;
  return (
    /^(Query read timeout|Connection terminated|Client (has encountered a connection error|was closed))/.test(
      e?.message ?? '',
    ) || SOCKET_ERRORS.has(e?.code ?? '')
  );
}

/**
 * Whether `error` says the database is unavailable rather than the statement wrong: no connection within the
 * connect timeout, a statement unanswered or cancelled at the database's bound (`bounded`: 57014 is that bound, not
 * a budget of the caller's), a lost connection, a server shutting down or full.
 */
function databaseUnavailable(error: unknown, bounded: boolean): boolean {
  if (error instanceof pg.DatabaseError)
    return SERVER_UNAVAILABLE.test(error.code ?? '') || (bounded && error.code === QUERY_CANCELED);
  const message = (error as { message?: string } | null)?.message ?? '';
  return connectionLost(error) || /^(timeout exceeded when trying to connect|timeout expired)/.test(message);
}

/** `error`, or the 503 problem (with `error` as its cause, for the log) when it says the database is unavailable. */
function asUnavailable(error: unknown, bounded: boolean): unknown {
  if (!databaseUnavailable(error, bounded)) return error;
  const problem = serviceUnavailable('The database is unavailable or did not answer in time.');
  problem.cause = error;
  return problem;
}

/**
 * A plain object parameter (a jsonb value) as its JSON text, which is what `pg` would send for it; anything else as
 * it is. Serialised here, before the driver, because `pg` serialises parameters after it has sent a named
 * statement's Parse: when that throws (a value nested deeply enough overflows the stack), it closes the statement on
 * the server but still records it as prepared on the connection, and every later use of that name there failed
 * with `prepared statement "..." does not exist` (test/storage/driver-errors.test.ts). Thrown here, nothing has
 * been sent.
 */
function serialisedObject(value: unknown): unknown {
  if (
    value === null ||
    typeof value !== 'object' ||
    Array.isArray(value) ||
    value instanceof Date ||
    ArrayBuffer.isView(value)
  )
    return value;
  if (typeof (value as { toPostgres?: unknown }).toPostgres === 'function') return value;
  return JSON.stringify(value);
}

/**
 * A checked-out connection that breaks emits 'error' (its statement fails with it), which must have a listener while
 * it is out (pg-pool listens only while the connection is idle). One function for every connection, so that checking
 * out allocates nothing for it.
 */
const ignoreError = () => {};

async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw asUnavailable(error, false);
  }
  client.on('error', ignoreError);
  return client;
}

/** Gives a connection back to its pool (`broken`: drop it). */
function checkIn(client: pg.PoolClient, broken = false): void {
  client.off('error', ignoreError);
  client.release(broken);
}

/** How a backend bounds the time of each statement of a transaction. */
export interface StatementBudget {
  /** The statements that open a transaction whose statements may each run `ms` milliseconds. */
  begin(ms: number): string;
  /** Called once the transaction is open, and when it has ended. */
  arm?(ms: number): void;
  disarm?(): void;
}

/** A PostgreSQL server's own: statement_timeout, local to the transaction. SET takes no bind parameters; `ms` is a checked integer. */
const serverBudget: StatementBudget = { begin: (ms) => `BEGIN; SET LOCAL statement_timeout = ${ms}` };

export interface PoolDbOptions {
  onClose?: () => Promise<void>;
  /** Pipelined connections for short reads (read-lanes.ts); without them short reads use the pool. */
  lanes?: ReadLanes;
  budget?: StatementBudget;
  /**
   * The bound of every statement but those of a transaction with a budget of its own, in milliseconds: the server's
   * statement_timeout, which the pool's connections must start with (postgres.ts), and this side's wait for an answer
   * (ANSWER_GRACE_MS later). Past it the statement fails as the database's unavailability (503). Undefined: no bound
   * (the embedded database, whose statements run on this process's thread; commands).
   */
  statementTimeoutMs?: number;
  /** How notifications are heard (Db.listen): a session of its own on a server, the one session on PGlite. */
  listen?: Listen;
}

const notListening: Listen = async () => {
  throw new Error('this database does not deliver notifications');
};

export function poolDb(kind: Db['kind'], pool: pg.Pool, options: PoolDbOptions = {}): Db {
  const { onClose = async () => {}, lanes, budget = serverBudget, statementTimeoutMs, listen = notListening } = options;
  const bounded = statementTimeoutMs !== undefined;
  const waitMs = bounded ? statementTimeoutMs + ANSWER_GRACE_MS : 0;
  const db: Db = {
    kind,
    pool,
    /**
     * One statement on a connection that goes back to the pool whether the statement succeeded or not. pg-pool's
     * own `query` drops the connection when the statement fails, even for an error of the database's (a division by
     * zero, a value that is not a uuid), after which the connection is fine (`pg` ends every statement with Sync).
     * The next statements would pay for a new connection (on PostgreSQL a new server process) and prepare every
     * statement again. A connection that did break is not queryable any more, and pg-pool drops it on release.
     */
    query<R extends Row>(text: string, values: readonly unknown[] = [], name?: string) {
      // Callbacks inside one promise: the checkout, the statement and the check-in cost one promise and no async layers.
      return new Promise<QueryResult<R>>((resolve, reject) => {
        pool.connect((error, client) => {
          if (error || !client) return reject(asUnavailable(error, bounded));
          client.on('error', ignoreError);
          statementOn<R>(client, text, values, name, waitMs, (failure, result) => {
            checkIn(client, failure !== null && connectionLost(failure));
            if (failure) reject(asUnavailable(failure, bounded));
            else resolve(result!);
          });
        });
      });
    },
    read<R extends Row>(text: string, values: readonly unknown[] = [], name?: string) {
      if (lanes === undefined) return db.query<R>(text, values, name);
      let client: pg.Client;
      try {
        client = lanes.connection();
      } catch (error) {
        return Promise.reject(error as Error);
      }
      // The lanes bound their statements themselves (read-lanes.ts).
      return run<R>(client, text, values, name, 0).catch((error: unknown) => {
        throw asUnavailable(error, true);
      });
    },
    transaction: (work, options = {}) =>
      inTransaction(pool, { budget, bounded, waitMs }, work, options.statementTimeoutMs),
    listen,
    async close() {
      await lanes?.close();
      await pool.end();
      await onClose();
    },
  };
  return db;
}

/**
 * One transaction of `poolDb` on a connection of its own: BEGIN (with the statement budget of `timeout` where given),
 * `work`, COMMIT; ROLLBACK when `work` throws, unless the connection is lost.
 */
async function inTransaction<T>(
  pool: pg.Pool,
  bounds: { budget: StatementBudget; bounded: boolean; waitMs: number },
  work: (tx: Queryable) => Promise<T>,
  timeout: number | undefined,
): Promise<T> {
  const { budget, bounded, waitMs } = bounds;
  if (timeout !== undefined && !(Number.isSafeInteger(timeout) && timeout >= 0))
    throw new Error(`invalid statement timeout ${timeout}`);
  // A budget of the caller's (`timeout` > 0) replaces the database's bound; 0 lifts it where there is one.
  const budgeted = timeout !== undefined && timeout > 0;
  const lifted = timeout === 0 && bounded;
  const begin = budgeted ? budget.begin(timeout) : lifted ? serverBudget.begin(0) : 'BEGIN';
  // This side waits for answers only where it bounds statements at all (never on the embedded database, whose
  // statements run on this thread: a timer could not fire before the answer anyway).
  const wait = !bounded || timeout === 0 ? 0 : budgeted ? timeout + ANSWER_GRACE_MS : waitMs;
  const client = await checkOut(pool);
  const state: TransactionState = { failures: new Set(), lost: false };
  const tx = runner(client, wait, state);
  try {
    await tx.query(begin);
    if (budgeted) budget.arm?.(timeout);
    const result = await work(tx);
    budget.disarm?.();
    await tx.query('COMMIT');
    return result;
  } catch (error) {
    budget.disarm?.();
    // A connection that went unanswered or broke is dropped as it is (the server rolls back what it never
    // sees committed): a ROLLBACK sent to it would only wait in vain.
    if (!state.lost)
      await tx.query('ROLLBACK').catch(() => {
        state.lost = true;
      });
    // Only a statement's own failure speaks for the database (`work` may fail for reasons of its own).
    throw state.failures.has(error) ? asUnavailable(error, bounded && !budgeted) : error;
  } finally {
    checkIn(client, state.lost);
  }
}

/** Values of type `timestamptz` come back as JS Dates; int8 (counts) as numbers (they stay far below 2^53). */
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/** SQLSTATEs that mean "nothing happened, the same work may simply be tried again". */
const TRANSIENT = new Set(['40P01' /* deadlock_detected */, '40001' /* serialization_failure */]);

/**
 * Runs `work` (one statement, or one whole `transaction`) again when PostgreSQL aborted it as a deadlock victim or a
 * serialization failure: graph changes take row locks and the access index's advisory lock (schema/access.ts), and two
 * concurrent changes can meet in opposite orders. `work` must have no effects outside the database before it
 * resolves.
 */
export async function retryingTransient<T>(work: () => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts || !TRANSIENT.has((error as { code?: string })?.code ?? '')) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}

/** Did a statement fail because a row it refers to is gone (foreign_key_violation), e.g. deleted concurrently? */
export const isForeignKeyViolation = (error: unknown): boolean => (error as { code?: string })?.code === '23503';
