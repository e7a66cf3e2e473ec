// A place in the change feed: (xid, seq) of an outbox row (storage/schema/events.ts), written as the SSE `id:` of the
// event after which it stands ("<xid>-<seq>"). Every row at or below a cursor a reader reached has been seen.

export interface Cursor {
  xid: bigint;
  seq: bigint;
}

const MAX_U64 = (1n << 64n) - 1n;
const MAX_I64 = (1n << 63n) - 1n;

export const formatCursor = (cursor: Cursor): string => `${cursor.xid}-${cursor.seq}`;

/** A cursor as a client sent it back (Last-Event-ID), or null when it is not one of ours. */
export function parseCursor(text: string): Cursor | null {
  const match = /^(\d{1,20})-(\d{1,19})$/.exec(text);
  if (!match) return null;
  const xid = BigInt(match[1]!);
  const seq = BigInt(match[2]!);
  return xid <= MAX_U64 && seq <= MAX_I64 ? { xid, seq } : null;
}

export function compareCursors(a: Cursor, b: Cursor): number {
  if (a.xid !== b.xid) return a.xid < b.xid ? -1 : 1;
  return a.seq === b.seq ? 0 : a.seq < b.seq ? -1 : 1;
}

export const laterCursor = (a: Cursor, b: Cursor): Cursor => (compareCursors(a, b) >= 0 ? a : b);
