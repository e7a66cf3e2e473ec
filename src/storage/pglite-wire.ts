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
export const STATEMENT_TOO_COMPLEX = '54001';

/** The error of an exchange that overflowed the JavaScript stack inside PGlite. */
export class EmbeddedStackOverflow extends Error {
  readonly code = STATEMENT_TOO_COMPLEX;
  constructor(cause: unknown) {
    super('stack depth limit exceeded in the embedded database', { cause });
  }
}

/** The PGlite internals the guard wraps: its one-message step and Emscripten's stack pointer reset. */
interface GuardedModule {
  _PostgresMainLoopOnce: () => void;
  stackRestore: (pointer: number) => void;
}

const guarded = new WeakSet<object>();

/**
 * PostgreSQL checks its own stack depth, but in PGlite a deep recursion can exhaust the JavaScript stack under the
 * WebAssembly first. PGlite's protocol loop catches that RangeError and goes on with PostgreSQL half way through a
 * statement: it answered nothing for the statement, then spun for ever on the next one, deaf to signals. Here the
 * error escapes the loop instead (through the stack reset PGlite calls in its catch): the exchange fails, its
 * connection is dropped, and the next connection begins with SESSION_RESET, which ends what the statement left open.
 */
function guardStack(pglite: PGlite): void {
  const mod = (pglite as unknown as { mod: GuardedModule }).mod;
  if (guarded.has(mod)) return;
  guarded.add(mod);
  const longJump = (pglite as unknown as { POSTGRES_MAIN_LONGJMP: number }).POSTGRES_MAIN_LONGJMP;
  const step = mod._PostgresMainLoopOnce;
  const restore = mod.stackRestore;
  let overflow: unknown = null;
  mod._PostgresMainLoopOnce = () => {
    try {
      step();
    } catch (error) {
      // PostgreSQL's own errors arrive as its longjmp and are handled by PGlite; anything else is not PostgreSQL's.
      if ((error as { status?: unknown })?.status !== longJump) overflow = error;
      throw error;
    }
  };
  mod.stackRestore = (pointer) => {
    restore(pointer);
    if (overflow !== null) {
      const cause = overflow;
      overflow = null;
      throw new EmbeddedStackOverflow(cause);
    }
  };
}

/** Runs `messages` on `pglite` and returns the reply bytes, copied out of PGlite's memory. */
async function exchangeWith(pglite: PGlite, messages: Uint8Array): Promise<Uint8Array> {
  // PGlite's raw protocol call does not check this itself: it fails on the memory it has released.
  if (pglite.closed) throw new Error('the embedded database is closed');
  const chunks: Uint8Array[] = [];
  // syncToFs: false. PGlite's sync copies an in-memory file system to a persistent one (browsers); the two Trellis
  // uses, NodeFS for DATA_DIR (its writes reach the files as PostgreSQL makes them) and the in-memory one for tests,
  // have nothing to copy, yet the call takes a mutex and awaits it (docs/decisions/001-pglite-socket.md).
  // test/storage/pglite-socket.test.ts checks that the sync is still the base class's no-op for both.
  await pglite.execProtocolRawStream(messages, { syncToFs: false, onRawData: (chunk) => chunks.push(chunk.slice()) });
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

export function localWire(pglite: PGlite): PgliteWire {
  guardStack(pglite);
  return {
    exchange: (messages) => exchangeWith(pglite, messages),
    async startup(startupPacket) {
      // In this order: PGlite's backend exits on a query before its first startup packet.
      const reply = await exchangeWith(pglite, startupPacket);
      await exchangeWith(pglite, SESSION_RESET);
      return reply;
    },
  };
}
