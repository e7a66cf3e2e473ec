// What the change feed needs from the database, in the domain's words. The SQL adapter is storage/event-log.ts;
// src/services.ts wires it.
import type { ElementId } from '../../values.js';
import type { Tx } from '../transactions.js';
import type { Cursor } from './cursor.js';

export type Change = 'created' | 'changed' | 'deleted' | 'file-created' | 'file-replaced' | 'file-removed';

/** Every change, in the order the documentation lists them. */
export const CHANGES: readonly Change[] = [
  'created',
  'changed',
  'deleted',
  'file-created',
  'file-replaced',
  'file-removed',
];

/** One committed change as the outbox holds it. */
export interface StoredEvent {
  cursor: Cursor;
  /** When the change was written. */
  at: Date;
  change: Change;
  elementId: ElementId;
  type: string;
  startId: ElementId | null;
  endId: ElementId | null;
  /** The element as GET /<id> renders it after the change; null for a deletion. */
  body: string | null;
  /** Deletions only: the nodes it was a child of (for a relation: among whose children it ran, or whose OWNS it was). */
  parents: ElementId[] | null;
  /** Deletions only: the principals that could read it (a relation: of its start, and `readersEnd` of its end). */
  readers: ElementId[] | null;
  readersEnd: ElementId[] | null;
}

interface EventPage {
  /** Events after the cursor asked for, in feed order; only rows no running transaction can add to. */
  events: StoredEvent[];
  /** Every row at or below this point is final (the snapshot's xmin): where a reader that saw all of them stands. */
  stable: Cursor;
  /** Committed rows wait above `stable` for an older transaction to end: read again soon. */
  pending: boolean;
  /** Rows after the cursor asked for were pruned: the reader has lost events. */
  lost: boolean;
}

/** Who may read what, now: for each user, its principals (itself and its groups) and the ids it may READ. */
export interface Audience {
  principals: Map<ElementId, ReadonlySet<ElementId>>;
  readable: Map<ElementId, ReadonlySet<ElementId>>;
  /** The OWNS parents of the given ids that still exist. */
  parents: Map<ElementId, ElementId[]>;
  /** The type of each of the given ids that still exists, and whether it is a relation. */
  kinds: Map<ElementId, { type: string; relation: boolean }>;
}

export interface EventLog {
  /** Up to `limit` final events after `after` (and at or below `upTo` when given), in feed order. */
  read(tx: Tx, after: Cursor, limit: number, upTo: Cursor | null): Promise<EventPage>;
  /** The principals of each user, which of `ids` each may read, and the parents of `ids`, in one snapshot. */
  audience(tx: Tx, userIds: ElementId[], ids: ElementId[]): Promise<Audience>;
  /** Of these token hashes, the ones whose tokens are active and unexpired at `now`. */
  activeTokens(tx: Tx, hashes: string[], now: Date): Promise<Set<string>>;
  /** Drops final events written before `before`, but for what `keep` holds back; how many. */
  prune(tx: Tx, before: Date, keep: Retained | null): Promise<number>;
}

/** Events that another reader (webhooks) still needs: those after `cursor`, unless written before `notBefore`. */
export interface Retained {
  cursor: Cursor;
  notBefore: Date;
}

/** Wakes the feed when a commit wrote events (on any instance of the database); resolves to the way to stop. */
export type EventSignal = (onNotify: () => void) => Promise<() => Promise<void>>;
