// The session settings the statements are written for (src/storage/db.ts) are in force on every backend.
import { expect, it } from 'vitest';
import { SESSION_SETTINGS } from '../../src/storage/db.js';
import { describeBackends } from '../helpers/harness.js';

describeBackends('database session settings', (h) => {
  it('applies plan_cache_mode and random_page_cost to the sessions of the pool', async () => {
    for (const [key, value] of Object.entries(SESSION_SETTINGS)) {
      const { rows } = await h().db.query<{ v: string }>(`SELECT current_setting($1) AS v`, [key]);
      expect([key, rows[0]!.v]).toEqual([key, value]);
    }
    // Also inside a transaction (a pooled connection of its own).
    await h().db.transaction(async (tx) => {
      const { rows } = await tx.query<{ v: string }>(`SELECT current_setting('plan_cache_mode') AS v`);
      expect(rows[0]!.v).toBe('force_generic_plan');
    });
  });
});
