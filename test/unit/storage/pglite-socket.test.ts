// The socket that carries `pg`'s wire protocol to PGlite (src/storage/pglite-socket.ts), on a real in-memory PGlite.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_SETTINGS } from '../../../src/storage/db.js';
import { createPglite, openPglite, pgliteDb, pglitePool, prepareSession } from '../../../src/storage/pglite.js';
import type { PgliteWire } from '../../../src/storage/pglite-socket.js';
import { seedFromTemplate } from '../../../src/storage/pglite-template.js';
import { localWire } from '../../../src/storage/pglite-wire.js';
import { newPglite } from '../../helpers/pglite-template.js';

/** The real wire, counting the batches that reach PGlite. */
function countingWire(pglite: PGlite): PgliteWire & { batches: number; startups: number } {
  const wire = localWire(pglite);
  const counted = {
    batches: 0,
    startups: 0,
    exchange: (messages: Uint8Array) => {
      counted.batches++;
      return wire.exchange(messages);
    },
    startup: (packet: Uint8Array) => {
      counted.startups++;
      return wire.startup(packet);
    },
  };
  return counted;
}

describe('PGlite socket', () => {
  let pglite: PGlite;
  beforeAll(async () => {
    pglite = await newPglite('empty');
    await prepareSession(pglite);
  });
  afterAll(() => pglite.close());

  it('sends the messages of one statement (Parse, Bind, Describe, Execute, Sync) to PGlite as one batch', async () => {
    const wire = countingWire(pglite);
    const pool = pglitePool(wire);
    try {
      await pool.query('SELECT 1');
      expect(wire.startups).toBe(1);
      const before = wire.batches;
      const first = await pool.query({
        name: 'socket_batch',
        text: 'SELECT $1::int + 1 AS n, $2::text AS t',
        values: [41, 'x'],
      });
      const second = await pool.query({
        name: 'socket_batch',
        text: 'SELECT $1::int + 1 AS n, $2::text AS t',
        values: [1, 'y'],
      });
      expect([first.rows, second.rows]).toEqual([[{ n: 42, t: 'x' }], [{ n: 2, t: 'y' }]]);
      expect(wire.batches - before).toBe(2);
    } finally {
      await pool.end();
    }
  });

  it("delivers a reply larger than PGlite's receive buffer (1 MiB) whole", async () => {
    const pool = pglitePool(localWire(pglite));
    try {
      const { rows } = await pool.query<{ big: string }>('SELECT repeat($1, 3000000) AS big, 7 AS after', ['ab']);
      expect(rows[0]!.big.length).toBe(6_000_000);
      expect(rows[0]!.big.slice(-4)).toBe('abab');
      expect(rows[0]).toMatchObject({ after: 7 });
    } finally {
      await pool.end();
    }
  });

  it("answers a failing statement with PostgreSQL's error, and the connection goes on", async () => {
    const pool = pglitePool(localWire(pglite));
    try {
      await expect(pool.query({ name: 'socket_failing', text: 'SELECT no_such_column' })).rejects.toMatchObject({
        code: '42703',
      });
      await expect(pool.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
      const client = await pool.connect();
      await client.query('BEGIN');
      await expect(client.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
      await expect(client.query('SELECT 1')).rejects.toMatchObject({ code: '25P02' }); // in a failed transaction
      await client.query('ROLLBACK');
      client.release();
      expect((await pool.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    } finally {
      await pool.end();
    }
  });

  it("undoes what a dropped connection left in PGlite's one session: its transaction and its prepared statements", async () => {
    const wire = countingWire(pglite);
    const pool = pglitePool(wire);
    try {
      const client = await pool.connect();
      await client.query({ name: 'socket_dropped', text: 'SELECT $1::int AS n', values: [1] });
      await client.query('BEGIN');
      await client.query('CREATE TABLE socket_dropped (n int)');
      client.release(new Error('dropped')); // the pool destroys it, as after a failed ROLLBACK (db.ts)
      const { rows } = await pool.query(
        `SELECT to_regclass('socket_dropped') AS t, (SELECT count(*)::int FROM pg_prepared_statements) AS prepared`,
      );
      expect(rows).toEqual([{ t: null, prepared: 0 }]);
      expect(wire.startups).toBe(2);
      // The new connection's `pg` prepares the statement again under the same name.
      expect((await pool.query({ name: 'socket_dropped', text: 'SELECT $1::int AS n', values: [2] })).rows).toEqual([
        { n: 2 },
      ]);
      // Session settings are the session's, not a connection's: they stay.
      expect((await pool.query(`SELECT current_setting('plan_cache_mode') AS v`)).rows).toEqual([
        { v: SESSION_SETTINGS.plan_cache_mode },
      ]);
    } finally {
      await pool.end();
    }
  });

  it('fails a statement that overflows the JavaScript stack inside PGlite (54001), and answers the next ones', async () => {
    const db = await pgliteDb(pglite, false);
    try {
      await db.query('CREATE TABLE socket_overflow (n int)');
      // A chain PostgreSQL's parser recurses along: deeper than the JavaScript stack allows before PostgreSQL's own
      // check (max_stack_depth) trips. PGlite's loop used to swallow the RangeError and hang on the next statement.
      const deep = `SELECT ${Array(30_000).fill('1').join(' + ')} AS s`;
      for (let round = 0; round < 2; round++) {
        const started = Date.now();
        await expect(db.query(deep)).rejects.toMatchObject({ code: '54001' });
        expect(Date.now() - started).toBeLessThan(20_000);
        expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      }
      await db.transaction(async (tx) => {
        await tx.query('INSERT INTO socket_overflow VALUES (1), (2)');
      });
      await expect(db.transaction((tx) => tx.query(deep))).rejects.toMatchObject({ code: '54001' });
      // Nothing of the failed statement's session is left: no open transaction, and the earlier write is committed.
      expect(
        (await db.query('SELECT sum(n)::int AS s, now() = statement_timestamp() AS fresh FROM socket_overflow')).rows,
      ).toEqual([{ s: 3, fresh: true }]);
    } finally {
      await db.close();
    }
  });

  it('answers the next statement after PGlite runs out of memory for one (53200)', async () => {
    const db = await pgliteDb(pglite, false);
    try {
      // A value past PostgreSQL's 1 GiB limit for one allocation.
      await expect(
        db.query(`SELECT length(string_agg(repeat('x', 1000000), '')) AS n FROM generate_series(1, 1100)`),
      ).rejects.toMatchObject({
        code: '53200',
      });
      expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  });

  it('ending a pool (Terminate) leaves the database open for the next', async () => {
    const first = pglitePool(localWire(pglite));
    await first.query('CREATE TABLE socket_terminate (n int)');
    await first.query('INSERT INTO socket_terminate VALUES (5)');
    await first.end();
    const second = pglitePool(localWire(pglite));
    try {
      expect((await second.query('SELECT n FROM socket_terminate')).rows).toEqual([{ n: 5 }]);
    } finally {
      await second.end();
    }
  });

  it('fails a query instead of hanging when PGlite fails', async () => {
    const own = await newPglite('empty');
    const db = await pgliteDb(own, false);
    expect((await db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await own.close();
    await expect(db.query('SELECT 1 AS one')).rejects.toThrow(/closed/i);
    await expect(db.transaction((tx) => tx.query('SELECT 1'))).rejects.toThrow();
    await db.close();
  });

  it("writes reach DATA_DIR without PGlite's file-system sync, which is a no-op for the file systems Trellis uses", async () => {
    // The socket passes syncToFs: false (pglite-wire.ts). That is only right while the sync has nothing to do: PGlite's
    // NodeFS (DATA_DIR) and its in-memory file system inherit the base class's empty syncToFs.
    const dir = await mkdtemp(join(tmpdir(), 'trellis-socket-'));
    try {
      const dataDir = join(dir, 'db');
      await seedFromTemplate(dataDir); // a copy of initdb's output, as a new DATA_DIR gets at start
      const first = await createPglite(dataDir);
      const fsOf = (instance: PGlite) => (instance as unknown as { fs: object }).fs;
      for (const instance of [first, pglite]) {
        const fs = fsOf(instance);
        expect(Object.hasOwn(Object.getPrototypeOf(fs), 'syncToFs')).toBe(false);
        expect(String((fs as { syncToFs: () => unknown }).syncToFs).replace(/\s/g, '')).toMatch(
          /^asyncsyncToFs\(\w*\){}$/,
        );
      }
      const db = await pgliteDb(first);
      await db.transaction(async (tx) => {
        await tx.query('CREATE TABLE socket_durable (n int)');
        await tx.query('INSERT INTO socket_durable VALUES (1), (2)');
      });
      await db.close();
      const reopened = await openPglite(dataDir, 16);
      try {
        expect((await reopened.query('SELECT sum(n)::int AS s FROM socket_durable')).rows).toEqual([{ s: 3 }]);
      } finally {
        await reopened.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
