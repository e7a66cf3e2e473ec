// The access epoch as the process sees it on PGlite (SessionAccessEpoch): kept by the notifications in
// the session's own replies, so that a remembered GET /<id> reads the element alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionAccessEpoch } from '../../src/storage/access-decisions.js';
import { type Db, poolDb } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { followAccessEpoch, pglitePool } from '../../src/storage/pglite.js';
import { localWire } from '../../src/storage/pglite-wire.js';
import { insertElement } from '../../src/storage/queries/elements.js';
import { backendsUnderTest, createElement, freshDatabase, startHarness, userWithToken } from '../helpers/harness.js';
import { newPglite } from '../helpers/pglite-template.js';

describe('SessionAccessEpoch', () => {
  it('is unknown until observed on a listening connection, and only grows', () => {
    const epoch = new SessionAccessEpoch();
    const first = epoch.restart();
    epoch.observe('5');
    expect(epoch.current).toBeNull(); // before the LISTEN took effect
    epoch.listen(first);
    epoch.observe('5');
    epoch.observe('4'); // read by a statement that ran before the notification of 5 arrived
    expect(epoch.current).toBe('5');
    epoch.observe('12345678901234567890');
    expect(epoch.current).toBe('12345678901234567890');
  });

  it('forgets on a new connection, and ignores the LISTEN of a connection that has been replaced', () => {
    const epoch = new SessionAccessEpoch();
    const first = epoch.restart();
    epoch.listen(first);
    epoch.observe('7');
    const second = epoch.restart();
    expect(epoch.current).toBeNull();
    epoch.listen(first);
    epoch.observe('8');
    expect(epoch.current).toBeNull();
    epoch.listen(second);
    epoch.observe('8');
    expect(epoch.current).toBe('8');
  });
});

describe.skipIf(!backendsUnderTest().includes('pglite'))('the access epoch on PGlite', () => {
  let db: Db;
  let dispose: () => Promise<void>;
  const at = new Date('2026-11-25T00:00:00Z');
  const stored = async () => (await db.query<{ e: string }>('SELECT epoch::text AS e FROM access_epoch')).rows[0]!.e;

  beforeAll(async () => {
    ({ db, dispose } = await freshDatabase('pglite'));
  });
  afterAll(async () => {
    await dispose();
  });

  it('is known as soon as the statement that moved it has answered, and not moved by a rollback', async () => {
    const session = db.sessionEpoch!;
    expect(session).toBeDefined();
    await db.query('SELECT trellis_bump_access_epoch()');
    const afterBump = session.current; // read before any other statement ran
    expect(afterBump).not.toBeNull();
    expect(afterBump).toBe(await stored());

    // A deletion moves it at commit, in a transaction of several statements.
    const id = crypto.randomUUID();
    await insertElement(db, { id, type: 'Doc', data: {}, at });
    expect(session.current).toBe(afterBump);
    await db.transaction(async (tx) => {
      await tx.query('DELETE FROM elements WHERE id = $1', [id]);
      expect(session.current).toBe(afterBump); // deferred to the commit
    });
    const afterDelete = session.current;
    expect(BigInt(afterDelete!)).toBe(BigInt(afterBump!) + 1n);
    expect(afterDelete).toBe(await stored());

    const rollback = new Error('rollback');
    await db
      .transaction(async (tx) => {
        await tx.query('SELECT trellis_bump_access_epoch()');
        throw rollback;
      })
      .catch((error: unknown) => {
        if (error !== rollback) throw error;
      });
    expect(session.current).toBe(afterDelete);
    expect(await stored()).toBe(afterDelete);
  });

  it('stays known when a statement fails (the connection stays)', async () => {
    await db.query('SELECT trellis_bump_access_epoch()');
    const known = db.sessionEpoch!.current;
    expect(known).not.toBeNull();
    await expect(db.query('SELECT 1 / 0')).rejects.toMatchObject({ code: '22012' });
    await db.query('SELECT 1'); // on a new connection it would be unknown now
    expect(db.sessionEpoch!.current).toBe(known);
    await db.query('SELECT trellis_bump_access_epoch()');
    expect(db.sessionEpoch!.current).toBe(await stored());
  });
});

describe.skipIf(!backendsUnderTest().includes('pglite'))('the access epoch on a new PGlite connection', () => {
  it('is unknown until notified again', async () => {
    const instance = await newPglite('empty');
    const epoch = new SessionAccessEpoch();
    const pool = pglitePool(localWire(instance), (client) => followAccessEpoch(client, epoch));
    const db = poolDb('pglite', pool, { onClose: () => instance.close() });
    try {
      await migrate(db);
      await db.query('SELECT trellis_bump_access_epoch()');
      const first = epoch.current;
      expect(first).not.toBeNull();
      // The pool drops a connection released as broken; its replacement knows nothing yet.
      (await pool.connect()).release(true);
      await db.query('SELECT 1');
      expect(epoch.current).toBeNull();
      await db.query('SELECT trellis_bump_access_epoch()');
      expect(BigInt(epoch.current!)).toBe(BigInt(first!) + 1n);
    } finally {
      await db.close();
    }
  });
});

describe.skipIf(!backendsUnderTest().includes('pglite'))('a remembered GET /<id> on PGlite', () => {
  let h: Awaited<ReturnType<typeof startHarness>>;
  beforeAll(async () => {
    h = await startHarness('pglite');
  });
  afterAll(async () => {
    await h.stop();
  });

  /** Scans of the epoch's table so far (PGlite's one session: its statistics are flushed on request). */
  const epochScans = async () => {
    await h.db.query('SELECT pg_stat_force_next_flush()');
    await h.db.query('SELECT 1');
    return Number(
      (
        await h.db.query<{ n: string }>(
          `SELECT seq_scan + coalesce(idx_scan, 0) AS n FROM pg_stat_user_tables WHERE relname = 'access_epoch'`,
        )
      ).rows[0]!.n,
    );
  };

  it('reads the element alone, and decides again once a deletion has moved the epoch', async () => {
    const owner = await userWithToken(h, 'owner@session-epoch.dev');
    const reader = await userWithToken(h, 'reader@session-epoch.dev');
    const doc = await createElement(h, owner.token, { type: 'Doc', data: { v: 1 } });
    const grant = await h.request('POST', '/', {
      token: owner.token,
      body: { type: 'HAS_READ_ACCESS', start: reader.id, end: doc },
    });
    expect(grant.status).toBe(201);
    expect((await h.request('GET', `/${doc}`, { token: reader.token })).status).toBe(200); // decides
    expect((await h.request('GET', `/${doc}`, { token: reader.token })).status).toBe(200); // remembered
    const before = await epochScans();
    for (let i = 0; i < 5; i++) {
      const r = await h.request('GET', `/${doc}`, { token: reader.token });
      expect(r.status).toBe(200);
      expect(r.json.data.v).toBe(1);
    }
    expect(await epochScans()).toBe(before);
    expect((await h.request('DELETE', grant.headers.get('location')!, { token: owner.token })).status).toBe(204);
    expect((await h.request('GET', `/${doc}`, { token: reader.token })).status).toBe(404);
  });
});
