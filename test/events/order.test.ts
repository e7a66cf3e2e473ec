// The outbox trap: a transaction that took a lower number can commit after one with a higher number. The feed
// never skips the slow writer's event, never sends one twice, keeps each element's events in commit order, and
// a cursor taken at any point resumes with exactly the rest. Concurrent transactions need a server: on PGlite
// they take turns, so these run on PostgreSQL.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { type Follower, follow } from '../helpers/events.js';
import {
  createElement,
  describeBackends,
  scratchPostgresDatabase,
  startHarness,
  userWithToken,
} from '../helpers/harness.js';

describeBackends('change feed order', (h) => {
  const open: Follower[] = [];
  const watch = (url: string, path: string, token: string, lastEventId?: string) => {
    const f = follow(url, path, token, lastEventId);
    open.push(f);
    return f;
  };
  afterEach(() => {
    for (const f of open.splice(0)) f.close();
  });
  const setData = (id: string, data: object) => (tx: { query(sql: string, values: unknown[]): Promise<unknown> }) =>
    tx.query(`UPDATE elements SET data = $2, updated = now() WHERE id = $1`, [id, JSON.stringify(data)]);

  it('slow and fast writers interleaved: every event once, and every cursor resumes with exactly the rest', async (ctx) => {
    if (h().backend === 'pglite') ctx.skip();
    const alice = await userWithToken(h(), 'alice@order.dev');
    const slowDoc = await createElement(h(), alice.token, { type: 'Doc', data: { v: 'before' } });
    const fast: string[] = [];
    for (let i = 0; i < 4; i++) fast.push(await createElement(h(), alice.token, { type: 'Doc', data: { i } }));
    const feed = watch(h().url, '/events', alice.token);
    await feed.until((r) => r.length > 0);

    // The slow transaction takes its number first, then the fast ones commit one after another while it waits.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = h().db.transaction(async (tx) => {
      await setData(slowDoc, { v: 'slow' })(tx);
      await held;
    });
    await sleep(100);
    for (const [i, id] of fast.entries()) {
      expect((await h().request('PATCH', `/${id}`, { token: alice.token, body: { round: i } })).status).toBe(204);
      await sleep(30);
    }
    await sleep(300);
    // Nothing after the slow writer's number is final while it runs.
    expect(feed.changes()).toEqual([]);
    release();
    await slow;
    await feed.until((r) => r.filter((m) => m.event === 'changed').length === 5);
    const changes = feed.changes();
    expect(changes.map((m) => m.data.id).sort()).toEqual([slowDoc, ...fast].sort());
    expect(new Set(changes.map((m) => m.id)).size).toBe(5);
    expect(changes.find((m) => m.data.id === slowDoc)!.data.element.data.v).toBe('slow');

    // Each cursor resumes with exactly the events after it, in the same order.
    const cursors = [feed.received[0]!.id, ...changes.map((m) => m.id)];
    for (const [i, cursor] of cursors.entries()) {
      const again = watch(h().url, '/events', alice.token, cursor);
      const mark = await createElement(h(), alice.token, { type: 'Mark', data: { i } });
      await again.until((r) => r.some((m) => m.data.id === mark));
      const rest = again.changes().filter((m) => m.event === 'changed');
      expect(rest.map((m) => m.id)).toEqual(changes.slice(i).map((m) => m.id));
      again.close();
    }
  });

  it('an element’s events come in commit order even when the later commit holds the lower transaction id', async (ctx) => {
    if (h().backend === 'pglite') ctx.skip();
    const alice = await userWithToken(h(), 'alice@commit-order.dev');
    const doc = await createElement(h(), alice.token, { type: 'Doc', data: { v: 0 } });
    const other = await createElement(h(), alice.token, { type: 'Doc' });
    const third = await createElement(h(), alice.token, { type: 'Doc' });
    const feed = watch(h().url, `/events?id=${doc}`, alice.token);
    await feed.until((r) => r.length > 0);

    // `early` gets its transaction id first (writing another element), `late` its own after; `late` changes the
    // document and commits, and only then does `early` change it and commit.
    let lateDone!: () => void;
    const lateCommitted = new Promise<void>((resolve) => {
      lateDone = resolve;
    });
    let earlyStarted!: () => void;
    const earlyHasId = new Promise<void>((resolve) => {
      earlyStarted = resolve;
    });
    const early = h().db.transaction(async (tx) => {
      await setData(other, { touched: true })(tx);
      earlyStarted();
      await lateCommitted;
      await setData(doc, { v: 'early' })(tx);
    });
    await earlyHasId;
    await h().db.transaction(async (tx) => {
      await setData(third, { touched: true })(tx);
      await setData(doc, { v: 'late' })(tx);
    });
    lateDone();
    await early;
    await feed.until((r) => r.filter((m) => m.event === 'changed').length === 2);
    // Commit order: late, then early, which is also what GET shows last.
    expect(feed.changes().map((m) => m.data.element.data.v)).toEqual(['late', 'early']);
    expect((await h().request('GET', `/${doc}`, { token: alice.token })).json.data.v).toBe('early');
  });

  it('a long writer in another database on the same server holds nothing back', async (ctx) => {
    if (h().backend === 'pglite') ctx.skip();
    const elsewhere = await scratchPostgresDatabase();
    const other = new pg.Client({ connectionString: elsewhere.url });
    await other.connect();
    try {
      // Its transaction id is running for the whole test, below every id written here.
      await other.query('BEGIN');
      await other.query('CREATE TABLE t (x int)');
      const alice = await userWithToken(h(), 'alice@elsewhere.dev');
      const feed = watch(h().url, '/events', alice.token);
      await feed.until((r) => r.length > 0);
      const doc = await createElement(h(), alice.token, { type: 'Doc', data: { n: 1 } });
      await feed.until((r) => r.some((m) => m.data.id === doc));
      expect(
        feed
          .changes()
          .filter((m) => m.data.id === doc)
          .map((m) => m.event),
      ).toEqual(['created']);
      const { rows } = await h().db.query<{ pending: string }>(
        `SELECT count(*)::text AS pending FROM element_events WHERE xid >= trellis_events_stable()`,
      );
      expect(rows[0]!.pending).toBe('0');
    } finally {
      await other.query('ROLLBACK');
      await other.end();
      await elsewhere.drop();
    }
  });

  it('a change made through one instance reaches the other’s subscribers, which resume there too', async (ctx) => {
    if (h().backend === 'pglite') ctx.skip();
    const second = await startHarness('postgres', { db: h().db });
    try {
      const alice = await userWithToken(h(), 'alice@instances.dev');
      const there = watch(second.url, '/events', alice.token);
      await there.until((r) => r.length > 0);
      const one = await createElement(h(), alice.token, { type: 'Doc', data: { n: 1 } });
      await there.until((r) => r.some((m) => m.data.id === one));
      const cursor = there.lastEventId;
      there.close();
      const two = await createElement(h(), alice.token, { type: 'Doc', data: { n: 2 } });
      // Resumed on the first instance from the second's cursor: exactly what was missed.
      const here = watch(h().url, '/events', alice.token, cursor);
      await here.until((r) => r.some((m) => m.data.id === two));
      expect(
        here
          .changes()
          .map((m) => m.data.type)
          .sort(),
      ).toEqual(['CREATED', 'Doc', 'OWNS']);
      expect(here.changes().some((m) => m.data.id === one)).toBe(false);
    } finally {
      await second.stop();
    }
  });
});
