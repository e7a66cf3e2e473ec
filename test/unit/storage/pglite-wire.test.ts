// The wire to PGlite (src/storage/pglite-wire.ts): PostgreSQL's log, the error of an aborted instance, the wire's
// exchanges and session reset, and the statement budget (EmbeddedBudget: PGlite ignores statement_timeout, so a
// budgeted transaction's statements are cancelled by other means). The budget's timing, with statements that run
// for seconds, is tested in test/storage/embedded-budget.test.ts; the socket over the wire in pglite-socket.test.ts.
import type { PGlite } from '@electric-sql/pglite';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/storage/db.js';
import { pgliteDb } from '../../../src/storage/pglite.js';
import {
  EMBEDDED_BUDGET_SETTINGS,
  EmbeddedDatabaseAborted,
  keepPostgresLog,
  localWire,
  PostgresLog,
} from '../../../src/storage/pglite-wire.js';
import { newPglite } from '../../helpers/pglite-template.js';

describe("PostgreSQL's log", () => {
  it('keeps the last PANIC, FATAL or ERROR line without its time stamp, and prints nothing itself', () => {
    const log = new PostgresLog();
    expect(log.lastProblem).toBeNull();
    expect(log.write('2026-01-01 00:00:00.000 UTC [1] LOG:  database system is ready')).toBe(false);
    expect(log.lastProblem).toBeNull();
    log.write('2026-01-01 00:00:01.000 UTC [1] ERROR:  relation "x" does not exist');
    expect(log.lastProblem).toBe('ERROR: relation "x" does not exist');
    log.write(
      '2026-01-01 00:00:02.000 UTC [1] PANIC:  could not write to file "pg_wal/xlogtemp.1": No space left on device',
    );
    expect(log.lastProblem).toBe('PANIC: could not write to file "pg_wal/xlogtemp.1": No space left on device');
    log.write('2026-01-01 00:00:03.000 UTC [1] HINT:  free some space');
    expect(log.lastProblem).toMatch(/^PANIC: /);
  });

  it('an aborted instance fails with the SQLSTATE of a crashed server and what PostgreSQL said last', () => {
    const cause = new Error('unreachable');
    const error = new EmbeddedDatabaseAborted('PANIC: could not write', cause);
    expect(error).toMatchObject({
      name: 'EmbeddedDatabaseAborted',
      code: '57P02',
      postgresSaid: 'PANIC: could not write',
      message: 'the embedded database aborted: PANIC: could not write',
      cause,
    });
    expect(new EmbeddedDatabaseAborted(null, cause).message).toBe('the embedded database aborted');
  });
});

// One PGlite for the file; the last test closes it.
let pglite: PGlite;
beforeAll(async () => {
  pglite = await newPglite('empty');
});
afterAll(async () => {
  if (!pglite.closed) await pglite.close();
});

describe('statement budget', () => {
  let db: Db;
  beforeAll(async () => {
    db = await pgliteDb(pglite, false);
  });
  afterAll(() => db.close());

  /** Runs for as long as it is let: a million rows from a cross join, counted. */
  const LONG = 'SELECT count(*)::int AS n FROM generate_series(1, 1000) a, generate_series(1, 1000) b WHERE a + b > 0';

  it('cancels a statement past its budget with 57014, rolls back, and the next statements run unbudgeted', async () => {
    await db.query('CREATE TABLE budget_marks (n int)');
    const error = await db
      .transaction(
        async (tx) => {
          await tx.query('INSERT INTO budget_marks VALUES (1)');
          return tx.query(LONG);
        },
        { statementTimeoutMs: 1 },
      )
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: '57014', message: 'canceling statement due to user request' });
    expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM budget_marks')).rows).toEqual([{ n: 0 }]);
    // Nothing of the budget reaches what follows: the same statement, outside one, runs to its end.
    expect((await db.query(LONG)).rows).toEqual([{ n: 1_000_000 }]);
    expect((await db.transaction((tx) => tx.query(LONG))).rows).toEqual([{ n: 1_000_000 }]);
  });

  it('gives each exchange a deadline while armed, and none once disarmed', async () => {
    const { budget } = localWire(pglite);
    const wire = localWire(pglite);
    const run = async () =>
      Buffer.from(
        await wire.exchange(serialize.query(`BEGIN; ${EMBEDDED_BUDGET_SETTINGS}; ${LONG}; ROLLBACK`)),
      ).toString('latin1');
    budget.arm(1);
    try {
      expect(await run()).toContain('canceling statement due to user request');
    } finally {
      budget.disarm();
    }
    // The ROLLBACK of the failed batch did not run (the error skipped it): end the transaction.
    await wire.exchange(serialize.query('ROLLBACK'));
    const whole = await run();
    expect(whole).not.toContain('canceling statement');
    expect(whole).toContain('1000000');
  });
});

describe('the wire', () => {
  /** The message types ('Z' ReadyForQuery, 'E' ErrorResponse, ...) in `reply`, in order. */
  function messageTypes(reply: Uint8Array): string[] {
    const types: string[] = [];
    const view = Buffer.from(reply.buffer, reply.byteOffset, reply.byteLength);
    for (let at = 0; at < view.length; at += 1 + view.readInt32BE(at + 1)) types.push(String.fromCharCode(view[at]!));
    return types;
  }

  it('exchanges frontend messages for the reply bytes, with one budget and health per instance', async () => {
    const wire = localWire(pglite);
    expect(localWire(pglite).budget).toBe(wire.budget);
    expect(localWire(pglite).health).toBe(wire.health);
    expect(wire.health.aborted).toBeNull();
    const reply = await wire.exchange(serialize.query('SELECT 1; SELECT 1 / 0'));
    // Row description, a row and its completion for the first statement, then the error, then ready.
    expect(messageTypes(reply)).toEqual(['T', 'D', 'C', 'E', 'Z']);
    expect(Buffer.from(reply).toString('latin1')).toContain('division by zero');
  });

  it('opens a session on startup, undoing what an earlier connection left: its transaction and prepared statements', async () => {
    const wire = localWire(pglite);
    await wire.exchange(serialize.query(`BEGIN; PREPARE leftover AS SELECT 1`));
    const reply = await wire.startup(serialize.startup({ user: 'postgres', database: 'postgres' }));
    expect(messageTypes(reply)).toContain('R');
    expect(messageTypes(reply).at(-1)).toBe('Z');
    const check = Buffer.from(
      await wire.exchange(
        serialize.query(`SELECT count(*) || ' prepared, ' || now()::text FROM pg_prepared_statements`),
      ),
    ).toString('latin1');
    expect(check).toContain('0 prepared');
    // Not in the old transaction any more: a new one begins without a warning.
    expect(messageTypes(await wire.exchange(serialize.query('BEGIN; ROLLBACK')))).toEqual(['C', 'C', 'Z']);
  });

  it('the settings of a budgeted transaction make auto_explain time every node without logging, not nested statements', async () => {
    await pglite.exec(`LOAD 'auto_explain'`);
    const { rows } = await pglite.query<{ a: string }>(`SELECT current_setting('auto_explain.log_analyze') AS a`);
    expect(rows[0]!.a).toBe('off');
    const inside = await pglite.transaction(async (tx) => {
      await tx.exec(EMBEDDED_BUDGET_SETTINGS);
      return (
        await tx.query<{ d: string; a: string; t: string; n: string }>(
          `SELECT current_setting('auto_explain.log_min_duration') AS d, current_setting('auto_explain.log_analyze') AS a,
           current_setting('auto_explain.log_timing') AS t, current_setting('auto_explain.log_nested_statements') AS n`,
        )
      ).rows[0];
    });
    expect(inside).toEqual({ d: '2147483647ms', a: 'on', t: 'on', n: 'off' });
  });

  it('fails every exchange once the instance is closed, instead of touching released memory', async () => {
    const log = new PostgresLog();
    keepPostgresLog(pglite, log);
    const wire = localWire(pglite);
    await pglite.close();
    await expect(wire.exchange(serialize.query('SELECT 1'))).rejects.toThrow('the embedded database is closed');
  });
});
