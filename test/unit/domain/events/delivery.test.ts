// Who gets which event (src/domain/events/delivery.ts): scopes, access at delivery, deletions by their readers,
// the message's form, and one `access` message for a grant to the subscriber.
import { describe, expect, it } from 'vitest';
import { deliver, inScope, messageOf } from '../../../../src/domain/events/delivery.js';
import type { Audience, StoredEvent } from '../../../../src/domain/events/ports.js';
import { type FeedMessage, type Scope, Subscription } from '../../../../src/domain/events/subscription.js';
import type { ElementId } from '../../../../src/values.js';

const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}` as ElementId;
const [user, other, folder, doc, doc2, rel] = [1, 2, 3, 4, 5, 6].map(id) as ElementId[];

function event(n: number, fields: Partial<StoredEvent>): StoredEvent {
  return {
    cursor: { xid: 10n, seq: BigInt(n) },
    at: new Date(0),
    change: 'created',
    elementId: doc!,
    type: 'Doc',
    startId: null,
    endId: null,
    body: `{"type":"Doc","id":"${doc}","data":{}}`,
    parents: null,
    readers: null,
    readersEnd: null,
    ...fields,
  };
}

const audience = (readable: ElementId[], parents: Record<string, ElementId[]> = {}): Audience => ({
  principals: new Map([[user!, new Set([user!])]]),
  readable: new Map([[user!, new Set(readable)]]),
  parents: new Map(Object.entries(parents) as Array<[ElementId, ElementId[]]>),
  kinds: new Map(),
});

function subscriber(scope: Scope) {
  const sent: FeedMessage[] = [];
  const sub = new Subscription(
    { userId: user!, tokenId: null },
    null,
    scope,
    {
      send: (m) => {
        sent.push(m);
        return true;
      },
      heartbeat: () => {},
      end: () => {},
    },
    { xid: 0n, seq: 0n },
  );
  return { sub, sent };
}

describe('delivery', () => {
  it('puts the element as the database rendered it into the message, with its ETag', () => {
    const m = messageOf(event(1, {}));
    expect(m.id).toBe('10-1');
    expect(m.event).toBe('created');
    const data = JSON.parse(m.data);
    expect(data).toMatchObject({ change: 'created', id: doc, kind: 'node', type: 'Doc', element: { id: doc } });
    expect(data.etag).toMatch(/^"[\w-]{27}"$/);
    expect(JSON.parse(messageOf(event(2, { change: 'deleted', body: null })).data)).toEqual({
      change: 'deleted',
      id: doc,
      kind: 'node',
      type: 'Doc',
      etag: null,
    });
  });

  it('scopes: ids, a parent with its children and the relations among them, everything', () => {
    const a = audience([], { [doc!]: [folder!], [doc2!]: [folder!] });
    const child = event(1, {});
    const among = event(2, { elementId: rel!, type: 'LINKS', startId: doc!, endId: doc2! });
    const owns = event(3, { elementId: rel!, type: 'OWNS', startId: folder!, endId: doc! });
    const outside = event(4, { elementId: other! });
    const parent: Scope = { kind: 'parent', id: folder! };
    expect([child, among, owns, outside].map((e) => inScope(parent, e, a))).toEqual([true, true, true, false]);
    const byId: Scope = { kind: 'ids', ids: new Set([other!]) };
    expect([child, outside].map((e) => inScope(byId, e, a))).toEqual([false, true]);
    // A deleted child: its parents as they were.
    expect(inScope(parent, event(5, { change: 'deleted', body: null, parents: [folder!] }), audience([]))).toBe(true);
  });

  it('sends only what the user may read now, a deletion only to who could read it, and moves the cursor', () => {
    const { sub, sent } = subscriber({ kind: 'all' });
    const events = [
      event(1, {}),
      event(2, { elementId: other! }),
      event(3, { elementId: doc2!, change: 'deleted', body: null, readers: [user!] }),
      event(4, { elementId: other!, change: 'deleted', body: null, readers: [other!] }),
    ];
    deliver(events, [sub], audience([doc!]));
    expect(sent.map((m) => [m.event, JSON.parse(m.data).id])).toEqual([
      ['created', doc],
      ['deleted', doc2],
    ]);
    expect(sub.cursor).toEqual({ xid: 10n, seq: 4n });
    // Events at or before the cursor (a resumed client ahead of this feed) are not sent again.
    deliver(events, [sub], audience([doc!]));
    expect(sent).toHaveLength(2);
  });

  it('announces a grant to the subscriber once, but not one on a node created in the same batch', () => {
    const { sub, sent } = subscriber({ kind: 'all' });
    const grant = event(1, { elementId: rel!, type: 'HAS_READ_ACCESS', startId: user!, endId: folder! });
    deliver([grant], [sub], audience([]));
    expect(sent.map((m) => m.event)).toEqual(['access']);
    const fresh = subscriber({ kind: 'all' });
    const node = event(1, { elementId: doc! });
    const owns = event(2, { elementId: rel!, type: 'OWNS', startId: user!, endId: doc! });
    deliver([node, owns], [fresh.sub], audience([doc!]));
    expect(fresh.sent.map((m) => m.event)).toEqual(['created']);
  });
});
