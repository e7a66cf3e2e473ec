// The search's time budget on a PostgreSQL server (search.statementTimeoutInSeconds): a statement of a search that
// runs past it is cancelled and the search answers a 400 that says so, never a 500 or a wait without end. The
// embedded database cannot cancel a statement (no timers in its WebAssembly), so this runs on PostgreSQL only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendsUnderTest, createElement, startHarness, userWithToken, type Harness } from '../helpers/harness.js';

describe.skipIf(!backendsUnderTest().includes('postgres'))('search time budget [postgres]', () => {
  let h: Harness & { stop(): Promise<void> };
  let token: string;
  const search = () =>
    h.request('POST', '/search', { token, body: { steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: 'budget' } } }] } });

  beforeAll(async () => {
    h = await startHarness('postgres', { settings: { search: { statementTimeoutInSeconds: 1 } } });
    token = (await userWithToken(h, 'alice@budget.dev')).token;
    await createElement(h, token, { type: 'Thing', data: { name: 'budget' } });
  });
  afterAll(() => h.stop());

  it('cancels a statement past the budget with a 400 naming it, then answers the next search', async () => {
    // A statement that cannot finish in time: the elements are locked by another transaction until the search gave up.
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = h.db.transaction(async (tx) => {
      await tx.query('LOCK TABLE elements IN ACCESS EXCLUSIVE MODE');
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await isLocked;
    const started = Date.now();
    const res = await search();
    const took = Date.now() - started;
    release();
    await holder;
    expect(res.status).toBe(400);
    expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
    expect(res.json.detail).toMatch(/budget of 1 s/);
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5_000);
    const after = await search();
    expect(after.status).toBe(200);
    expect(after.json.results).toHaveLength(1);
  });
});
