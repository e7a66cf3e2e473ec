// The search's time budget (search.statementTimeoutInSeconds): a statement of a search that runs past it is
// cancelled and the search answers a 400 that says so, never a 500 or a wait without end. On a server a statement
// held up by a lock shows it; on the embedded database, which cancels by other means (src/storage/pglite-wire.ts),
// a statement that really computes that long.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSettings } from '../../src/config/load.js';
import { searchBudgetSeconds } from '../../src/domain/search/pipeline.js';
import { backendsUnderTest, createElement, type Harness, startHarness, userWithToken } from '../helpers/harness.js';
import { lockElements } from '../helpers/locks.js';

describe('search time budget: defaults', () => {
  it('is 10 s per statement on PostgreSQL and 3 s on the embedded database unless set', () => {
    expect(searchBudgetSeconds(validateSettings({}), 'postgres')).toBe(10);
    expect(searchBudgetSeconds(validateSettings({}), 'pglite')).toBe(3);
    const set = validateSettings({ search: { statementTimeoutInSeconds: 0.5 } });
    expect([searchBudgetSeconds(set, 'postgres'), searchBudgetSeconds(set, 'pglite')]).toEqual([0.5, 0.5]);
    expect(searchBudgetSeconds(validateSettings({ search: { statementTimeoutInSeconds: 0 } }), 'pglite')).toBe(0);
    expect(() => validateSettings({ search: { statementTimeoutInSeconds: 0.05 } })).toThrow(
      /statementTimeoutInSeconds/,
    );
  });
});

describe.skipIf(!backendsUnderTest().includes('pglite'))('search time budget [pglite]', () => {
  const ELEMENTS = 40;
  const longValues = (i: number) =>
    Object.fromEntries(Array.from({ length: 30 }, (_, k) => [`code${k}`, `${'ab'.repeat(995)}${i}-${k}`]));
  let h: Harness & { stop(): Promise<void> };
  let token: string;
  const search = (query: unknown) =>
    h.request('POST', '/search', { token, body: { steps: [{ type: 'searchengine-query-dsl-mixin', query }] } });
  // A thousand infix wildcards over 30 values of 2,000 characters per element: several seconds of work on the embedded
  // database even on a fast machine (each value is one lexeme the patterns scan; a longer one is not indexed).
  const expensive = { bool: { should: Array.from({ length: 1000 }, (_, i) => ({ wildcard: { code0: `*zq${i}*` } })) } };

  beforeAll(async () => {
    h = await startHarness('pglite', { settings: { search: { statementTimeoutInSeconds: 0.5 } } });
    token = (await userWithToken(h, 'alice@budget.dev')).token;
    for (let i = 0; i < ELEMENTS; i++)
      await createElement(h, token, { type: 'Thing', data: { name: `budget ${i}`, ...longValues(i) } });
  });
  afterAll(() => h.stop());

  it('cancels the statement at the budget with a 400 naming it; a request meanwhile waits no longer; the next search answers', async () => {
    const started = Date.now();
    const pending = search(expensive);
    // Sent while the search runs: the embedded database runs one statement at a time, so it waits for the budget.
    const probe = await h.request('GET', '/me', { token });
    const probed = Date.now() - started;
    const res = await pending;
    const took = Date.now() - started;
    expect(res.status).toBe(400);
    expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
    expect(res.json.detail).toMatch(/budget of 0.5 s/);
    expect(took).toBeGreaterThanOrEqual(450);
    expect(took).toBeLessThan(5_000);
    expect(probe.status).toBe(200);
    expect(probed).toBeLessThan(5_000);
    const after = await search({ match: { name: 'budget' } });
    expect(after.status).toBe(200);
    expect(after.json.results.length).toBeGreaterThan(0);
    for (const element of after.json.results) expect(element.data.name).toMatch(/^budget \d+$/);
  });
});

describe.skipIf(!backendsUnderTest().includes('postgres'))('search time budget [postgres]', () => {
  let h: Harness & { stop(): Promise<void> };
  let token: string;
  const search = () =>
    h.request('POST', '/search', {
      token,
      body: { steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: 'budget' } } }] },
    });

  beforeAll(async () => {
    h = await startHarness('postgres', { settings: { search: { statementTimeoutInSeconds: 1 } } });
    token = (await userWithToken(h, 'alice@budget.dev')).token;
    await createElement(h, token, { type: 'Thing', data: { name: 'budget' } });
  });
  afterAll(() => h.stop());

  it('cancels a statement past the budget with a 400 naming it, then answers the next search', async () => {
    // A statement that cannot finish in time: the elements are locked by another transaction until the search gave up.
    const unlock = await lockElements(h.db);
    const started = Date.now();
    const res = await search();
    const took = Date.now() - started;
    await unlock();
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
