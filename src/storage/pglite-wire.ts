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

/** Runs `messages` on `pglite` and returns the reply bytes, copied out of PGlite's memory. */
async function exchangeWith(pglite: PGlite, messages: Uint8Array): Promise<Uint8Array> {
  // PGlite's raw protocol call does not check this itself: it fails on the memory it has released.
  if (pglite.closed) throw new Error('the embedded database is closed');
  const chunks: Uint8Array[] = [];
  // syncToFs: false. PGlite's sync copies an in-memory file system to a persistent one (browsers); the two Trellis
  // uses, NodeFS for DATA_DIR (its writes reach the files as PostgreSQL makes them) and the in-memory one for tests,
  // have nothing to copy, yet the call takes a mutex and awaits it: 12-15 us of every statement, in-process on the
  // benchmark's data (B1's statement 67-72 -> 53-55 us, GET's 96-100 -> 80-82 us). test/storage/pglite-socket.test.ts
  // checks that the sync is still the base class's no-op for both.
  await pglite.execProtocolRawStream(messages, { syncToFs: false, onRawData: (chunk) => chunks.push(chunk.slice()) });
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

export function localWire(pglite: PGlite): PgliteWire {
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
