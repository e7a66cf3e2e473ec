// The feed of one instance (src/domain/events/feed.ts) on an in-memory PGlite with the real schema, wired as
// services.ts wires it: a subscription gets `ready`, then the tail; one that resumes catches up first; the bounds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Authentication } from '../../../../src/domain/accounts/authentication.js';
import { formatCursor } from '../../../../src/domain/events/cursor.js';
import { Feed } from '../../../../src/domain/events/feed.js';
import type { FeedMessage, Sink } from '../../../../src/domain/events/subscription.js';
import { Problem } from '../../../../src/errors.js';
import { sqlAccountStore } from '../../../../src/storage/account-store.js';
import type { Db } from '../../../../src/storage/db.js';
import { sqlEventLog } from '../../../../src/storage/event-log.js';
import { EVENTS_CHANNEL } from '../../../../src/storage/schema/events.js';
import { sqlTransactions } from '../../../../src/storage/transactions.js';
import type { ElementId } from '../../../../src/values.js';
import { addNode, addRelation, addUser, migratedDb } from '../../helpers/database.js';

let db: Db;
let feed: Feed;
let user: ElementId;

function sink() {
  const messages: FeedMessage[] = [];
  let ended = false;
  const s: Sink = {
    send: (m) => {
      messages.push(m);
      return true;
    },
    heartbeat: () => {},
    end: () => {
      ended = true;
    },
  };
  return { s, messages, ended: () => ended };
}

const until = async (test: () => boolean) => {
  const deadline = Date.now() + 5000;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

beforeAll(async () => {
  db = await migratedDb();
  const transactions = sqlTransactions(db);
  feed = new Feed({
    log: sqlEventLog,
    transactions,
    authentication: new Authentication(sqlAccountStore, transactions),
    now: () => new Date(),
    signal: (onNotify) => db.listen(EVENTS_CHANNEL, onNotify),
    settings: { retentionInSeconds: 60, maxSubscribers: 3, maxSubscribersPerUser: 2, heartbeatInSeconds: 15 },
  });
  user = (await addUser(db, 'feed@unit.dev')) as ElementId;
});

afterAll(async () => {
  await feed.close();
  await db.close();
});

describe('feed', () => {
  it('sends ready, then the committed changes the user may read', async () => {
    const { s, messages } = sink();
    const sub = await feed.subscribe({ anonymousUserId: user }, { kind: 'all' }, null, s);
    expect(messages[0]!.event).toBe('ready');
    const mine = await addNode(db, 'Doc', { n: 1 });
    await addNode(db, 'Secret', {});
    await addRelation(db, 'OWNS', user, mine);
    await until(() => messages.some((m) => m.event === 'created' && m.data.includes(mine)));
    expect(messages.some((m) => m.data.includes('Secret'))).toBe(false);
    feed.unsubscribe(sub);
  });

  it('catches a resumed subscription up from its cursor before it joins the tail', async () => {
    const first = sink();
    const sub = await feed.subscribe({ anonymousUserId: user }, { kind: 'all' }, null, first.s);
    const cursor = sub.cursor;
    feed.unsubscribe(sub);
    const later = await addNode(db, 'Doc', { n: 2 });
    await addRelation(db, 'OWNS', user, later);
    const again = sink();
    const resumed = await feed.subscribe({ anonymousUserId: user }, { kind: 'all' }, cursor, again.s);
    expect(again.messages[0]).toMatchObject({ event: 'ready', id: formatCursor(cursor) });
    await until(() => again.messages.some((m) => m.data.includes(later)));
    expect(again.messages.filter((m) => m.data.includes(`"id":"${later}"`) && m.event === 'created')).toHaveLength(1);
    feed.unsubscribe(resumed);
    expect(again.ended()).toBe(true);
  });

  it('refuses past its bounds and for credentials that name no one', async () => {
    await expect(
      feed.subscribe({ anonymousUserId: crypto.randomUUID() }, { kind: 'all' }, null, sink().s),
    ).rejects.toMatchObject({ slug: 'unauthorized' });
    const other = (await addUser(db, 'other@unit.dev')) as ElementId;
    await feed.subscribe({ anonymousUserId: other }, { kind: 'all' }, null, sink().s);
    await feed.subscribe({ anonymousUserId: other }, { kind: 'all' }, null, sink().s);
    const perUser = await feed
      .subscribe({ anonymousUserId: other }, { kind: 'all' }, null, sink().s)
      .catch((e: Problem) => e);
    expect((perUser as Problem).slug).toBe('too-many-requests');
    expect(feed.size).toBe(2);
    await feed.subscribe({ anonymousUserId: user }, { kind: 'all' }, null, sink().s);
    const full = await feed.subscribe({ anonymousUserId: user }, { kind: 'all' }, null, sink().s).catch((e) => e);
    expect((full as Problem).slug).toBe('service-unavailable');
    const missing = await feed
      .admit({ anonymousUserId: user }, { kind: 'ids', ids: new Set([crypto.randomUUID() as ElementId]) }, null)
      .catch((e) => e);
    expect(missing).toBeInstanceOf(Problem);
  });
});
