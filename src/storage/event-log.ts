// The EventLog port (domain/events/ports.ts) in SQL: storage/queries/events.ts.
import type { Cursor } from '../domain/events/cursor.js';
import type { Audience, Change, EventLog, StoredEvent } from '../domain/events/ports.js';
import { type ElementId, storedElementId } from '../values.js';
import * as sql from './queries/events.js';
import { queryable } from './transactions.js';

const ids = (list: string[] | null): ElementId[] | null => (list === null ? null : list.map(storedElementId));

function eventOf(row: sql.EventRow): StoredEvent {
  return {
    cursor: { xid: BigInt(row.xid!), seq: BigInt(row.seq!) },
    at: row.at!,
    change: row.change as Change,
    elementId: storedElementId(row.element_id!),
    type: row.type!,
    startId: row.start_id === null ? null : storedElementId(row.start_id),
    endId: row.end_id === null ? null : storedElementId(row.end_id),
    body: row.body,
    parents: ids(row.parents),
    readers: ids(row.readers),
    readersEnd: ids(row.readers_end),
  };
}

export const sqlEventLog: EventLog = {
  async read(tx, after: Cursor, limit, upTo) {
    const rows = await sql.readEvents(queryable(tx), after, limit, upTo);
    const first = rows[0]!;
    return {
      events: rows.filter((r) => r.xid !== null).map(eventOf),
      stable: { xid: BigInt(first.stable), seq: 0n },
      pending: first.pending,
      lost: first.lost,
    };
  },
  async audience(tx, userIds, elementIds) {
    const q = queryable(tx);
    const [readers, shapes] = await Promise.all([sql.readersOf(q, userIds, elementIds), sql.shapesOf(q, elementIds)]);
    const audience: Audience = { principals: new Map(), readable: new Map(), parents: new Map(), kinds: new Map() };
    for (const r of readers) {
      const user = storedElementId(r.user_id);
      audience.principals.set(user, new Set(r.principals.map(storedElementId)));
      audience.readable.set(user, new Set(r.readable.map(storedElementId)));
    }
    for (const s of shapes) {
      const id = storedElementId(s.id);
      audience.parents.set(id, s.parents.map(storedElementId));
      audience.kinds.set(id, { type: s.type, relation: s.relation });
    }
    return audience;
  },
  async activeTokens(tx, hashes, now) {
    return new Set(await sql.activeTokenHashes(queryable(tx), hashes, now));
  },
  prune: (tx, before, keep) => sql.pruneEvents(queryable(tx), before, keep),
};
