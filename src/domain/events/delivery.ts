// Which subscriber gets which event, decided at delivery: an event goes to a subscription that watches its element
// and whose user may read the element at that moment (a deleted element: could read it just before it went).
import type { ElementId } from '../../values.js';
import { etagOf } from '../elements/representation.js';
import { compareCursors, formatCursor, laterCursor } from './cursor.js';
import type { Audience, StoredEvent } from './ports.js';
import type { FeedMessage, Scope, Subscription } from './subscription.js';

/** Relation types whose appearance or removal changes what someone may read (schema/access.ts). */
const ACCESS_TYPES = new Set([
  'OWNS',
  'IS_IN_GROUP',
  'CREATED',
  'HAS_READ_ACCESS',
  'HAS_SEARCH_ACCESS',
  'HAS_CREATE_ACCESS',
  'HAS_UPDATE_ACCESS',
  'HAS_DELETE_ACCESS',
]);

/** A relation that grants or takes away access appeared, changed or went. */
export const changesAccess = (event: StoredEvent): boolean => event.startId !== null && ACCESS_TYPES.has(event.type);

/** The ids whose readability and parents a batch needs: its elements and its relations' ends. */
export function idsOf(events: StoredEvent[]): ElementId[] {
  const ids = new Set<ElementId>();
  for (const e of events) {
    ids.add(e.elementId);
    if (e.startId) ids.add(e.startId);
    if (e.endId) ids.add(e.endId);
  }
  return [...ids];
}

const overlaps = (principals: ReadonlySet<ElementId>, list: ElementId[] | null) =>
  list?.some((id) => principals.has(id)) === true;

/** Whether the user may read the event's element now (for a deletion: could before it went). */
export function visible(event: StoredEvent, userId: ElementId, audience: Audience): boolean {
  if (event.change !== 'deleted') return audience.readable.get(userId)?.has(event.elementId) === true;
  const principals = audience.principals.get(userId);
  if (!principals) return false;
  return overlaps(principals, event.readers) && (event.startId === null || overlaps(principals, event.readersEnd));
}

function parentsOf(id: ElementId, audience: Audience): ElementId[] {
  return audience.parents.get(id) ?? [];
}

/** Whether the event falls in the scope: the element watched, or a child of the node (or a relation among them). */
export function inScope(scope: Scope, event: StoredEvent, audience: Audience): boolean {
  if (scope.kind === 'all') return true;
  if (scope.kind === 'ids') return scope.ids.has(event.elementId);
  const root = scope.id;
  if (event.elementId === root) return true;
  if (event.change === 'deleted') return event.parents?.includes(root) === true;
  if (event.startId === null) return parentsOf(event.elementId, audience).includes(root);
  if (event.type === 'OWNS' && event.startId === root) return true;
  return parentsOf(event.startId, audience).includes(root) && parentsOf(event.endId!, audience).includes(root);
}

/** The message of an event: what changed, and for a creation or change the element as GET /<id> shows it. */
export function messageOf(event: StoredEvent): FeedMessage {
  const head = {
    change: event.change,
    id: event.elementId,
    kind: event.startId === null ? 'node' : 'relation',
    type: event.type,
    etag: event.body === null ? null : etagOf(event.body),
  };
  const json = JSON.stringify(head);
  // The body is the database's rendering, JSON already: spliced in rather than parsed and written again.
  const data = event.body === null ? json : `${json.slice(0, -1)},"element":${event.body}}`;
  return { id: formatCursor(event.cursor), event: event.change, data };
}

/** Sends a batch to the subscriptions that are to have it; each subscription's cursor moves past the batch. */
export function deliver(events: StoredEvent[], subscriptions: Iterable<Subscription>, audience: Audience): void {
  const messages = new Map<StoredEvent, FeedMessage>();
  const message = (event: StoredEvent) => {
    const known = messages.get(event);
    if (known) return known;
    const m = messageOf(event);
    messages.set(event, m);
    return m;
  };
  // A grant on a node created in the same batch reaches nothing the creation events do not show already.
  const born = new Set(events.filter((e) => e.change === 'created').map((e) => e.elementId));
  const movesAccess = (event: StoredEvent) =>
    changesAccess(event) && !(event.change === 'created' && born.has(event.endId!));
  for (const sub of subscriptions) {
    let accessMoved = false;
    const principals = audience.principals.get(sub.userId);
    for (const event of events) {
      if (sub.closed) break;
      // A subscriber that resumed from a cursor another instance gave it may stand ahead of this feed.
      if (compareCursors(event.cursor, sub.cursor) <= 0) continue;
      if (movesAccess(event) && principals?.has(event.startId!)) accessMoved = true;
      if (inScope(sub.scope, event, audience) && visible(event, sub.userId, audience)) {
        sub.send(message(event));
        if (event.change === 'deleted') sub.readableWatched.delete(event.elementId);
      }
    }
    const last = events.at(-1);
    if (last) sub.cursor = laterCursor(sub.cursor, last.cursor);
    if (accessMoved && sub.scope.kind !== 'ids') sub.send(accessMessage(sub.scope));
  }
}

/** "What you may read under this root changed": one message, not one per element of a subtree. */
export function accessMessage(scope: Scope, ids?: ElementId[]): FeedMessage {
  const root = scope.kind === 'parent' ? scope.id : null;
  return { id: null, event: 'access', data: JSON.stringify({ change: 'access', root, ...(ids ? { ids } : {}) }) };
}

/** A watched element the subscriber may no longer read, shown exactly as its deletion would be (as a 404 is). */
export function unreadableMessage(
  sub: Subscription,
  id: ElementId,
  kind: { type: string; relation: boolean },
): FeedMessage {
  const data = { change: 'deleted', id, kind: kind.relation ? 'relation' : 'node', type: kind.type, etag: null };
  return { id: formatCursor(sub.cursor), event: 'deleted', data: JSON.stringify(data) };
}
