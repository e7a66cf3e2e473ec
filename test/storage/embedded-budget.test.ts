// The statement budget on the embedded database (src/storage/pglite-wire.ts, EmbeddedBudget): PGlite ignores
// statement_timeout, so a transaction's `statementTimeoutMs` cancels its statements by other means. A statement past
// its budget fails with PostgreSQL's 57014, and nothing of it reaches the statements after it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { pgliteDb } from '../../src/storage/pglite.js';
import { backendsUnderTest } from '../helpers/harness.js';
import { newPglite } from '../helpers/pglite-template.js';

/** A statement that takes seconds on PGlite: nine million rows out of a join. */
const SLOW = 'SELECT count(*) AS n FROM generate_series(1, 3000) a, generate_series(1, 3000) b WHERE a + b > 0';

describe.skipIf(!backendsUnderTest().includes('pglite'))('statement budget [pglite]', () => {
  let db: Db;
  beforeAll(async () => {
    db = await pgliteDb(await newPglite('empty'));
  });
  afterAll(() => db.close());

  const timed = async <T>(
    work: () => Promise<T>,
  ): Promise<{ ms: number; result: T | null; error: { code?: string } | null }> => {
    const started = performance.now();
    try {
      const result = await work();
      return { ms: performance.now() - started, result, error: null };
    } catch (error) {
      return { ms: performance.now() - started, result: null, error: error as { code?: string } };
    }
  };

  it('cancels a statement that runs past the budget (57014) near the deadline, and the transaction rolls back', async () => {
    await db.query('CREATE TABLE budget_marks (n int)');
    const run = await timed(() =>
      db.transaction(
        async (tx) => {
          await tx.query('INSERT INTO budget_marks VALUES (1)');
          return tx.query(SLOW);
        },
        { statementTimeoutMs: 300 },
      ),
    );
    expect(run.error?.code).toBe('57014');
    expect(run.ms).toBeGreaterThanOrEqual(290);
    expect(run.ms).toBeLessThan(5_000);
    expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM budget_marks')).rows).toEqual([{ n: 0 }]);
  });

  it('cancels a statement whose rows each go through a function, whose own statements are not timed', async () => {
    // The statements inside a function are not timed (decision 027); the node that calls it for every row reads the
    // clock, so the statement still ends near its deadline.
    await db.query(
      `CREATE FUNCTION budget_positive(p int) RETURNS boolean LANGUAGE plpgsql AS $fn$ BEGIN RETURN (SELECT p > 0); END $fn$`,
    );
    const run = await timed(() =>
      db.transaction((tx) => tx.query(SLOW.replace('a + b > 0', 'budget_positive(a + b)')), {
        statementTimeoutMs: 300,
      }),
    );
    expect(run.error?.code).toBe('57014');
    expect(run.ms).toBeGreaterThanOrEqual(290);
    expect(run.ms).toBeLessThan(5_000);
  });

  it('budgets each statement on its own, and leaves statements outside a budgeted transaction alone', async () => {
    // Statements under a budget of four times what one takes (timed under a budget, which makes PostgreSQL time
    // every plan node, after a first run that warms up): each finishes, although together they run one and a half
    // budgets. The transaction runs statements until then rather than a count computed from one timing, which a
    // busy machine makes too short or too long.
    const quick =
      'SELECT count(*)::int AS n FROM generate_series(1, 300) a, generate_series(1, 1000) b WHERE a + b > 0';
    const runs: number[] = [];
    for (let i = 0; i < 4; i++) {
      const run = await timed(() => db.transaction((tx) => tx.query(quick), { statementTimeoutMs: 60_000 }));
      expect(run.error).toBeNull();
      runs.push(run.ms);
    }
    const one = runs.slice(1).sort((a, b) => a - b)[1]!;
    const budget = Math.max(1000, Math.ceil(one * 4));
    const many = await timed(() =>
      db.transaction(
        async (tx) => {
          const started = performance.now();
          const counts: unknown[] = [];
          while (performance.now() - started < budget * 1.5) counts.push((await tx.query(quick)).rows[0]);
          return counts;
        },
        { statementTimeoutMs: budget },
      ),
    );
    expect(many.error).toBeNull();
    expect(many.result!.length).toBeGreaterThan(1);
    expect(many.result).toEqual(Array(many.result!.length).fill({ n: 300_000 }));
    expect(many.ms).toBeGreaterThan(budget * 1.5);
    // After a cancelled transaction, a long statement without a budget runs to its end.
    expect((await timed(() => db.transaction((tx) => tx.query(SLOW), { statementTimeoutMs: 100 }))).error?.code).toBe(
      '57014',
    );
    const long = await timed(() => db.query<{ n: number }>(SLOW));
    expect(long.error).toBeNull();
    expect(long.result!.rows).toEqual([{ n: 9_000_000 }]);
    expect(long.ms).toBeGreaterThan(100);
  });
});
