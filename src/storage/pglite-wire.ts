// The wire protocol's bytes to and from a PGlite instance (pglite-socket.ts).
import type { PGlite } from '@electric-sql/pglite';
import { serialize } from 'pg-protocol';
import type { PgliteWire } from './pglite-socket.js';

/**
 * Undoes what a dropped connection left in PGlite's one session: Sync ends an extended query that failed (the
 * backend ignores everything until it), ROLLBACK an open transaction, DEALLOCATE ALL its prepared statements (the
 * next connection's `pg` prepares them again under the same names). The replies are dropped.
 */
const SESSION_RESET = Buffer.concat([serialize.sync(), serialize.query('ROLLBACK; DEALLOCATE ALL')]);

/** The SQLSTATE PostgreSQL gives a statement that exceeds its stack (statement_too_complex). */
const STATEMENT_TOO_COMPLEX = '54001';

/** The error of an exchange that overflowed the JavaScript stack inside PGlite. */
class EmbeddedStackOverflow extends Error {
  readonly code = STATEMENT_TOO_COMPLEX;
  constructor(cause: unknown) {
    super('stack depth limit exceeded in the embedded database', { cause });
  }
}

/**
 * The error of every exchange once PGlite's WebAssembly module has aborted (PostgreSQL's PANIC, e.g. when it cannot
 * create a WAL segment on a full disk) or trapped: the instance is unusable, and a call into it would spin for ever.
 * Its code is the SQLSTATE a PostgreSQL server's clients get when the server crashes (crash_shutdown).
 */
export class EmbeddedDatabaseAborted extends Error {
  readonly code = '57P02';
  constructor(
    /** What PostgreSQL logged last before it aborted (its PANIC or FATAL line), when it logged anything. */
    readonly postgresSaid: string | null,
    cause: unknown,
  ) {
    super(`the embedded database aborted${postgresSaid ? `: ${postgresSaid}` : ''}`, { cause });
    this.name = 'EmbeddedDatabaseAborted';
  }
}

/**
 * PostgreSQL's log lines (its stderr), kept per PGlite instance: the last error among them says why the instance
 * aborted or failed to start. PGlite prints nothing of them itself.
 */
export class PostgresLog {
  private lastError: string | null = null;

  /** For PGlite's `onStderr` option. */
  readonly write = (line: string): boolean => {
    const error = /\b(PANIC|FATAL|ERROR):\s+(.*)$/.exec(line);
    if (error) this.lastError = `${error[1]}: ${error[2]}`;
    return false;
  };

  /** The last PANIC, FATAL or ERROR line, without its time stamp. */
  get lastProblem(): string | null {
    return this.lastError;
  }
}

const postgresLogs = new WeakMap<PGlite, PostgresLog>();

/** Makes `log` the place the guards look for what `pglite` said before it aborted. */
export function keepPostgresLog(pglite: PGlite, log: PostgresLog): void {
  postgresLogs.set(pglite, log);
}

/** Whether a PGlite instance has aborted; listeners hear of it once, after the failed call has returned. */
class EmbeddedHealth {
  private failure: EmbeddedDatabaseAborted | null = null;
  private readonly listeners = new Set<(error: EmbeddedDatabaseAborted) => void>();

  get aborted(): EmbeddedDatabaseAborted | null {
    return this.failure;
  }

  onAbort(listener: (error: EmbeddedDatabaseAborted) => void): void {
    const failure = this.failure;
    if (failure) queueMicrotask(() => listener(failure));
    else this.listeners.add(listener);
  }

  abort(error: EmbeddedDatabaseAborted): void {
    if (this.failure) return;
    this.failure = error;
    // Not from inside PGlite's call stack: the listeners may close servers and log.
    for (const listener of this.listeners) queueMicrotask(() => listener(error));
    this.listeners.clear();
  }
}

/** The PGlite internals the guards use: its one-message step, Emscripten's stack reset and PostgreSQL's interrupt flags. */
interface GuardedModule {
  _PostgresMainLoopOnce: () => void;
  stackRestore: (pointer: number) => void;
  setValue: (pointer: number, value: number, type: 'i32') => void;
  /** Addresses of PostgreSQL's `QueryCancelPending` and `InterruptPending` (sig_atomic_t, 32 bits here). */
  _QueryCancelPending: number;
  _InterruptPending: number;
}

/**
 * PostgreSQL's statement_timeout by other means. On a server a timer signal cancels the statement; PGlite's timers
 * are JavaScript timeouts, which cannot fire while the WebAssembly runs a statement. While a budget is armed, each
 * exchange gets a deadline, and the transaction has PostgreSQL time every plan node (auto_explain, see
 * EMBEDDED_BUDGET_SETTINGS): its clock reads come out to JavaScript, and the first one past the deadline raises the
 * cancel flags a server's timer would, so the statement fails at its next interrupt check with 57014.
 */
export class EmbeddedBudget {
  private budgetMs: number | null = null;
  private deadline = Infinity;
  private fired = false;

  constructor(private readonly mod: GuardedModule) {}

  /** Every statement from now until `disarm` may run `ms`. */
  arm(ms: number): void {
    this.budgetMs = ms;
  }

  disarm(): void {
    this.budgetMs = null;
  }

  /** Runs one synchronous step of PostgreSQL under the deadline of the current exchange, if one is armed. */
  watch(step: () => void): void {
    if (this.deadline === Infinity) {
      step();
      return;
    }
    const original = Object.getOwnPropertyDescriptor(performance, 'now');
    const read = performance.now.bind(performance);
    // Only PostgreSQL's clock reads run while the step does (it is synchronous), so nothing else sees this clock.
    Object.defineProperty(performance, 'now', { value: () => this.check(read()), configurable: true, writable: true });
    try {
      step();
    } finally {
      if (original) Object.defineProperty(performance, 'now', original);
      else delete (performance as { now?: unknown }).now;
      // A deadline that passed after the statement's last interrupt check must not cancel the next statement.
      if (this.fired) this.raise(0);
    }
  }

  /** Starts an exchange's deadline (each exchange is one statement: `pg` sends the next after ReadyForQuery). */
  begin(): void {
    this.deadline = this.budgetMs === null ? Infinity : performance.now() + this.budgetMs;
    this.fired = false;
  }

  end(): void {
    this.deadline = Infinity;
  }

  private check(now: number): number {
    if (now > this.deadline && !this.fired) {
      this.fired = true;
      this.raise(1);
    }
    return now;
  }

  private raise(flag: 0 | 1): void {
    try {
      this.mod.setValue(this.mod._QueryCancelPending, flag, 'i32');
      this.mod.setValue(this.mod._InterruptPending, flag, 'i32');
    } catch {
      // Called from inside the WebAssembly: an exception here would leave PostgreSQL half way through a statement.
    }
  }
}

/**
 * What a budgeted transaction sets on the embedded database: auto_explain times every node of every statement
 * without ever logging, so that a running statement reads the clock. Not the statements inside the functions a
 * statement calls: timing those set up instruments for each call of a function per row, which cost a text match most
 * of its time, while the node that calls the function reads the clock for every row anyway (decision 027).
 */
export const EMBEDDED_BUDGET_SETTINGS =
  'SET LOCAL auto_explain.log_min_duration = 2147483647; SET LOCAL auto_explain.log_analyze = on; ' +
  'SET LOCAL auto_explain.log_timing = on; SET LOCAL auto_explain.log_nested_statements = off';

interface Guards {
  budget: EmbeddedBudget;
  health: EmbeddedHealth;
}

const guards = new WeakMap<object, Guards>();

/**
 * Installs the guards on a PGlite instance, once, and returns its statement budget and health.
 *
 * The stack guard: PostgreSQL checks its own stack depth, but in PGlite a deep recursion can exhaust the JavaScript
 * stack under the WebAssembly first. PGlite's protocol loop catches that RangeError and goes on with PostgreSQL half
 * way through a statement: it answered nothing for the statement, then spun for ever on the next one, deaf to
 * signals. Here the error escapes the loop instead (through the stack reset PGlite calls in its catch): the exchange
 * fails, its connection is dropped, and the next connection begins with SESSION_RESET.
 *
 * The abort guard: when PostgreSQL PANICs (it cannot create a WAL segment on a full disk), Emscripten aborts the
 * module with a RuntimeError, which PGlite's loop catches too, and the next exchange spun for ever. Here the abort
 * marks the instance's health: the exchange fails, every later one fails at once without calling into the module,
 * and the health's listeners hear of it (the server stops, server.ts).
 */
function guard(pglite: PGlite): Guards {
  const mod = (pglite as unknown as { mod: GuardedModule }).mod;
  const existing = guards.get(mod);
  if (existing) return existing;
  const budget = new EmbeddedBudget(mod);
  const health = new EmbeddedHealth();
  guards.set(mod, { budget, health });
  const longJump = (pglite as unknown as { POSTGRES_MAIN_LONGJMP: number }).POSTGRES_MAIN_LONGJMP;
  const step = mod._PostgresMainLoopOnce;
  const restore = mod.stackRestore;
  let overflow: unknown = null;
  mod._PostgresMainLoopOnce = () => {
    try {
      budget.watch(step);
    } catch (error) {
      // PostgreSQL's own errors arrive as its longjmp and are handled by PGlite; anything else is not PostgreSQL's.
      if ((error as { status?: unknown })?.status !== longJump) overflow = error;
      // An abort (PostgreSQL's PANIC calls abort()) or a trap leaves the module unusable; PGlite's loop would call
      // into it again and again.
      if (error instanceof WebAssembly.RuntimeError)
        health.abort(new EmbeddedDatabaseAborted(postgresLogs.get(pglite)?.lastProblem ?? null, error));
      throw error;
    }
  };
  mod.stackRestore = (pointer) => {
    restore(pointer);
    if (overflow !== null) {
      const cause = overflow;
      overflow = null;
      throw health.aborted ?? new EmbeddedStackOverflow(cause);
    }
  };
  return { budget, health };
}

/** Runs `messages` on `pglite` and returns the reply bytes, copied out of PGlite's memory. */
async function exchangeWith(pglite: PGlite, messages: Uint8Array, { budget, health }: Guards): Promise<Uint8Array> {
  // PGlite's raw protocol call does not check this itself: it fails on the memory it has released.
  if (pglite.closed) throw new Error('the embedded database is closed');
  if (health.aborted) throw health.aborted;
  const chunks: Uint8Array[] = [];
  budget.begin();
  // syncToFs: false. PGlite's sync copies an in-memory file system to a persistent one (browsers); the two Trellis
  // uses, NodeFS for DATA_DIR (its writes reach the files as PostgreSQL makes them) and the in-memory one for tests,
  // have nothing to copy, yet the call takes a mutex and awaits it (docs/decisions/001-pglite-socket.md).
  // test/unit/storage/pglite-socket.test.ts checks that the sync is still the base class's no-op for both.
  try {
    await pglite.execProtocolRawStream(messages, { syncToFs: false, onRawData: (chunk) => chunks.push(chunk.slice()) });
  } catch (error) {
    // An abort outside the loop the guard wraps (a startup packet, the flush after a statement) is as final.
    if (error instanceof WebAssembly.RuntimeError && !health.aborted)
      health.abort(new EmbeddedDatabaseAborted(postgresLogs.get(pglite)?.lastProblem ?? null, error));
    throw health.aborted ?? error;
  } finally {
    budget.end();
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** The wire to a PGlite instance, with the instance's statement budget and health. */
export function localWire(pglite: PGlite): PgliteWire & Guards {
  const guards = guard(pglite);
  return {
    ...guards,
    exchange: (messages) => exchangeWith(pglite, messages, guards),
    async startup(startupPacket) {
      // In this order: PGlite's backend exits on a query before its first startup packet.
      const reply = await exchangeWith(pglite, startupPacket, guards);
      await exchangeWith(pglite, SESSION_RESET, guards);
      return reply;
    },
  };
}
