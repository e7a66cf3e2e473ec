// The database interface (src/storage/db.ts): statements, transactions, statement budgets, and which errors say the
// database is unavailable (503), on a `pg` pool over an in-memory PGlite, the same pool the embedded backend uses.
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../../src/errors.js';
import {
  type Db,
  isForeignKeyViolation,
  type PoolDbOptions,
  poolDb,
  retryingTransient,
  type StatementBudget,
} from '../../../src/storage/db.js';
import { pglitePool } from '../../../src/storage/pglite.js';
import { localWire } from '../../../src/storage/pglite-wire.js';
import { newPglite } from '../../helpers/pglite-template.js';

let pglite: PGlite;
beforeAll(async () => {
  pglite = await newPglite('empty');
  await pglite.exec('CREATE TABLE marks (n int PRIMARY KEY, doc jsonb, big bigint)');
  await pglite.exec('CREATE TABLE refs (n int REFERENCES marks (n))');
});
afterAll(() => pglite.close());

/** A Db of its own pool on the shared PGlite, closed (not the PGlite) after `work`. */
async function withDb<T>(options: PoolDbOptions, work: (db: Db) => Promise<T>): Promise<T> {
  const db = poolDb('pglite', pglitePool(localWire(pglite)), options);
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

/** A statement that fails with SQLSTATE `code`. */
const failingWith = (code: string) =>
  `DO $$ BEGIN RAISE EXCEPTION 'failing with ${code}' USING ERRCODE = '${code}'; END $$`;

const caught = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error as Error & { code?: string; cause?: unknown },
  );

const marks = async (db: Db) => (await db.query<{ n: number }>('SELECT n FROM marks ORDER BY n')).rows.map((r) => r.n);

describe('statements', () => {
  it('answers rows and a row count; int8 comes back as a number; prepared statements are reused by name', async () => {
    await withDb({}, async (db) => {
      const inserted = await db.query('INSERT INTO marks (n, big) VALUES (1, 9007199254740991), (2, 3)');
      expect(inserted).toMatchObject({ rows: [], rowCount: 2 });
      for (const n of [1, 2]) {
        const { rows, rowCount } = await db.query<{ big: number }>('SELECT big FROM marks WHERE n = $1', [n], 'big_of');
        expect(rowCount).toBe(1);
        expect(rows[0]!.big).toBe(n === 1 ? Number.MAX_SAFE_INTEGER : 3);
      }
      // A statement without a row count (LISTEN) counts 0, not null.
      expect((await db.query('LISTEN nobody')).rowCount).toBe(0);
      expect(await db.read<{ n: number }>('SELECT 1 AS n')).toMatchObject({ rows: [{ n: 1 }], rowCount: 1 });
      await db.query('DELETE FROM marks');
    });
  });

  it('sends a plain object as jsonb, and arrays, dates and bytes as themselves', async () => {
    await withDb({}, async (db) => {
      const doc = { a: [1, 'two', { three: null }], b: 'é' };
      await db.query('INSERT INTO marks (n, doc) VALUES ($1, $2)', [10, doc]);
      expect((await db.query<{ doc: unknown }>('SELECT doc FROM marks WHERE n = 10')).rows).toEqual([{ doc }]);
      const { rows } = await db.query<{ a: number[]; d: Date; b: Buffer }>(
        'SELECT $1::int[] AS a, $2::timestamptz AS d, $3::bytea AS b',
        [[1, 2], new Date('2026-01-02T03:04:05Z'), Buffer.from([0, 255])],
      );
      expect(rows).toEqual([{ a: [1, 2], d: new Date('2026-01-02T03:04:05Z'), b: Buffer.from([0, 255]) }]);
      await db.query('DELETE FROM marks');
    });
  });

  it("fails a statement with PostgreSQL's error, and the connection and its prepared statements go on", async () => {
    await withDb({}, async (db) => {
      expect((await db.query('SELECT $1::int AS n', [1], 'one')).rows).toEqual([{ n: 1 }]);
      const error = await caught(db.query('SELECT 1 / $1::int', [0], 'divide'));
      expect(error).toMatchObject({ code: '22012', message: 'division by zero' });
      expect(error).not.toBeInstanceOf(Problem);
      expect((await db.query('SELECT $1::int AS n', [2], 'one')).rows).toEqual([{ n: 2 }]);
    });
  });

  it('refuses a parameter nested too deeply to serialise before sending anything, and the named statement stays usable', async () => {
    await withDb({}, async (db) => {
      let deep: Record<string, unknown> = {};
      for (let i = 0; i < 200_000; i++) deep = { d: deep };
      const error = await caught(db.query('SELECT $1::jsonb IS NULL AS none', [deep], 'jsonb_param'));
      expect(error).toBeInstanceOf(RangeError);
      expect((await db.query('SELECT $1::jsonb IS NULL AS none', [{ a: 1 }], 'jsonb_param')).rows).toEqual([
        { none: false },
      ]);
    });
  });

  it('tells a foreign-key violation apart', async () => {
    await withDb({}, async (db) => {
      const error = await caught(db.query('INSERT INTO refs (n) VALUES (404)'));
      expect(isForeignKeyViolation(error)).toBe(true);
      expect(isForeignKeyViolation(await caught(db.query('SELECT 1 / 0')))).toBe(false);
      expect(isForeignKeyViolation(null)).toBe(false);
    });
  });
});

describe('the database unavailable (503)', () => {
  it('a server shutting down, starting, full or a lost connection, with the error as its cause', async () => {
    await withDb({}, async (db) => {
      for (const code of ['57P01', '57P03', '53300', '08006']) {
        const error = await caught(db.query(failingWith(code)));
        expect(error).toBeInstanceOf(Problem);
        expect(error).toMatchObject({
          slug: 'service-unavailable',
          status: 503,
          detail: 'The database is unavailable or did not answer in time.',
          headers: { 'retry-after': expect.any(String) },
        });
        expect(error.cause).toMatchObject({ code, message: `failing with ${code}` });
        // The connection the error came from is dropped; the next one answers.
        expect((await db.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      }
    });
  });

  it("a cancelled statement (57014) only where it is the database's own bound", async () => {
    await withDb({}, async (db) => {
      expect(await caught(db.query(failingWith('57014')))).toMatchObject({ code: '57014' });
    });
    await withDb({ statementTimeoutMs: 5_000 }, async (db) => {
      expect(await caught(db.query(failingWith('57014')))).toMatchObject({ status: 503 });
      // In a transaction under the database's bound too, but not under a budget of the caller's own.
      expect(await caught(db.transaction((tx) => tx.query(failingWith('57014'))))).toMatchObject({ status: 503 });
      const budgeted = await caught(
        db.transaction((tx) => tx.query(failingWith('57014')), { statementTimeoutMs: 1_000 }),
      );
      expect(budgeted).not.toBeInstanceOf(Problem);
      expect(budgeted.code).toBe('57014');
    });
  });
});

describe('transactions', () => {
  it('commits when the work resolves, with its result, and rolls back when it throws, with its error', async () => {
    await withDb({}, async (db) => {
      const result = await db.transaction(async (tx) => {
        await tx.query('INSERT INTO marks (n) VALUES (1)');
        await tx.read('INSERT INTO marks (n) VALUES (2)');
        return 'done';
      });
      expect(result).toBe('done');
      const own = new Error('the work failed');
      const error = await caught(
        db.transaction(async (tx) => {
          await tx.query('INSERT INTO marks (n) VALUES (3)');
          throw own;
        }),
      );
      expect(error).toBe(own);
      // A statement's failure rolls back too, and comes out as the statement's error.
      const duplicate = await caught(
        db.transaction(async (tx) => {
          await tx.query('INSERT INTO marks (n) VALUES (4)');
          await tx.query('INSERT INTO marks (n) VALUES (1)');
        }),
      );
      expect(duplicate).toMatchObject({ code: '23505' });
      expect(await marks(db)).toEqual([1, 2]);
      await db.query('DELETE FROM marks');
    });
  });

  it('refuses a statement timeout that is not a non-negative integer', async () => {
    await withDb({}, async (db) => {
      for (const ms of [-1, 1.5, Number.NaN])
        expect((await caught(db.transaction(async () => 1, { statementTimeoutMs: ms }))).message).toBe(
          `invalid statement timeout ${ms}`,
        );
    });
  });

  it("opens a transaction with a budget of the caller's by the backend's StatementBudget, armed while it runs", async () => {
    const calls: string[] = [];
    const budget: StatementBudget = {
      begin: (ms) => {
        calls.push(`begin ${ms}`);
        return `BEGIN; SET LOCAL application_name = 'budget ${ms}'`;
      },
      arm: (ms) => calls.push(`arm ${ms}`),
      disarm: () => calls.push('disarm'),
    };
    await withDb({ budget }, async (db) => {
      const name = await db.transaction(
        async (tx) => (await tx.query<{ name: string }>(`SELECT current_setting('application_name') AS name`)).rows[0],
        { statementTimeoutMs: 250 },
      );
      expect(name).toEqual({ name: 'budget 250' });
      expect(calls).toEqual(['begin 250', 'arm 250', 'disarm']);
      // Without a budget (or 0, lifting a bound there is none of), a plain BEGIN; disarm still runs at the end.
      calls.length = 0;
      await db.transaction(async (tx) => tx.query('SELECT 1'));
      await db.transaction(async (tx) => tx.query('SELECT 1'), { statementTimeoutMs: 0 });
      expect(calls).toEqual(['disarm', 'disarm']);
      // Disarmed when the work fails as well.
      calls.length = 0;
      await caught(db.transaction(() => Promise.reject(new Error('no')), { statementTimeoutMs: 100 }));
      expect(calls).toEqual(['begin 100', 'arm 100', 'disarm']);
    });
  });

  it("sets a server's statement_timeout for a budget, and lifts the database's bound for 0", async () => {
    const timeout = (db: Db, ms?: number) =>
      db.transaction(
        async (tx) =>
          (await tx.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout,
        ms === undefined ? {} : { statementTimeoutMs: ms },
      );
    await withDb({ statementTimeoutMs: 30_000 }, async (db) => {
      await db.query(`SET statement_timeout = '30s'`);
      expect(await timeout(db, 250)).toBe('250ms');
      expect(await timeout(db, 0)).toBe('0');
      expect(await timeout(db)).toBe('30s');
      await db.query('RESET statement_timeout');
    });
  });
});

describe('close', () => {
  it('ends the pool and calls onClose once; statements fail afterwards', async () => {
    let closed = 0;
    const db = poolDb('pglite', pglitePool(localWire(pglite)), {
      onClose: async () => {
        closed++;
      },
    });
    expect((await db.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    await db.close();
    expect(closed).toBe(1);
    expect(await caught(db.query('SELECT 1'))).toBeInstanceOf(Error);
    // The PGlite itself is still open for the next pool.
    await withDb({}, async (next) => expect((await next.query('SELECT 2 AS n')).rows).toEqual([{ n: 2 }]));
  });
});

describe('retryingTransient', () => {
  it('runs the work again after a deadlock or serialization failure, up to the attempts, and not after others', async () => {
    await withDb({}, async (db) => {
      let runs = 0;
      const flaky = (codes: string[]) => () => {
        const code = codes[runs++];
        return db.query<{ ok: number }>(code ? failingWith(code) : 'SELECT 1 AS ok');
      };
      expect((await retryingTransient(flaky(['40P01', '40001']))).rows).toEqual([{ ok: 1 }]);
      expect(runs).toBe(3);
      runs = 0;
      expect(await caught(retryingTransient(flaky(['40001', '40001', '40001', '40001'])))).toMatchObject({
        code: '40001',
      });
      expect(runs).toBe(4);
      runs = 0;
      expect(await caught(retryingTransient(flaky(['40001', '40001']), 2))).toMatchObject({ code: '40001' });
      expect(runs).toBe(2);
      runs = 0;
      expect(await caught(retryingTransient(flaky(['22012'])))).toMatchObject({ code: '22012' });
      expect(runs).toBe(1);
    });
  });
});
