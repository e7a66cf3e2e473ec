// Holding statements back for a test: another transaction locks a table until the test lets go, so a request that
// reads it is still running while the test looks at what happens meanwhile.
import type { Db } from '../../src/storage/db.js';

/**
 * Locks `elements` (ACCESS EXCLUSIVE) in a transaction of its own; every statement that reads the table waits.
 * Resolves once the lock is held, to the function that releases it and waits for that transaction to end (calling it
 * again does no harm).
 */
export async function lockElements(db: Db): Promise<() => Promise<void>> {
  let release!: () => void;
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const holder = db.transaction(async (tx) => {
    await tx.query('LOCK TABLE elements IN ACCESS EXCLUSIVE MODE');
    locked();
    await new Promise<void>((resolve) => (release = resolve));
  });
  await isLocked;
  return async () => {
    release();
    await holder;
  };
}
