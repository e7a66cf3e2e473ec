// The registration throttle (domain/accounts/registration-throttle.ts) on its real SQL store: the attempts of one
// address are counted one statement at a time, and once that address is over its allowance this instance refuses it
// without asking the database again until the window ends. A flood from one address costs the database the allowance
// and one statement more, not a statement per attempt, each holding a connection while it waits on the same row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../src/clock.js';
import { validateSettings } from '../../../../src/config/load.js';
import type { RegistrationCountStore } from '../../../../src/domain/accounts/ports.js';
import { RegistrationThrottle } from '../../../../src/domain/accounts/registration-throttle.js';
import { Problem } from '../../../../src/errors.js';
import { sqlRegistrationCountStore } from '../../../../src/storage/account-store.js';
import type { Db } from '../../../../src/storage/db.js';
import { migratedDb } from '../../helpers/database.js';

/** The real store, noting how many counts it ran and how many at most ran at once. */
function watched(store: RegistrationCountStore) {
  const seen = { counts: 0, running: 0, mostAtOnce: 0 };
  const wrapped: RegistrationCountStore = {
    async count(...args) {
      seen.counts++;
      seen.mostAtOnce = Math.max(seen.mostAtOnce, ++seen.running);
      try {
        return await store.count(...args);
      } finally {
        seen.running--;
      }
    },
    deleteOld: (before) => store.deleteOld(before),
  };
  return { wrapped, seen };
}

describe('registration throttle', () => {
  let db: Db;
  beforeAll(async () => {
    db = await migratedDb();
  });
  afterAll(() => db.close());

  it('counts one address one attempt at a time, and refuses it from memory once over until the window ends', async () => {
    const settings = validateSettings({ register: { throttle: { registrationsPerAddress: 5, windowInSeconds: 60 } } })
      .register.throttle;
    const clock = new ManualClock();
    const { wrapped, seen } = watched(sqlRegistrationCountStore(db));
    const throttle = new RegistrationThrottle(wrapped, settings, clock);
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, () =>
        throttle.count('192.0.2.7').then(
          () => 'counted',
          (error: unknown) => error,
        ),
      ),
    );
    expect(outcomes.filter((o) => o === 'counted')).toHaveLength(5);
    for (const refused of outcomes.filter((o) => o !== 'counted')) {
      expect(refused).toBeInstanceOf(Problem);
      expect((refused as Problem).status).toBe(429);
      expect((refused as Problem).headers['retry-after']).toBe('60');
    }
    expect(seen).toEqual({ counts: 6, running: 0, mostAtOnce: 1 });
    // Another address has its own allowance.
    await throttle.count('198.51.100.1');
    expect(seen.counts).toBe(7);
    // Once the window is over the address is counted again.
    clock.advance(60);
    await throttle.count('192.0.2.7');
    expect(seen.counts).toBe(8);
  });
});
