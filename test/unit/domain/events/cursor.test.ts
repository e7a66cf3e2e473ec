// Cursors of the change feed (src/domain/events/cursor.ts): written and read back, and nothing else taken for one.
import { describe, expect, it } from 'vitest';
import { compareCursors, formatCursor, laterCursor, parseCursor } from '../../../../src/domain/events/cursor.js';

describe('feed cursors', () => {
  it('read back what they write, and order by xid, then seq', () => {
    const c = { xid: 18446744073709551615n, seq: 9223372036854775807n };
    expect(parseCursor(formatCursor(c))).toEqual(c);
    expect(compareCursors({ xid: 1n, seq: 9n }, { xid: 2n, seq: 0n })).toBe(-1);
    expect(compareCursors({ xid: 2n, seq: 1n }, { xid: 2n, seq: 0n })).toBe(1);
    expect(compareCursors({ xid: 2n, seq: 1n }, { xid: 2n, seq: 1n })).toBe(0);
    expect(laterCursor({ xid: 2n, seq: 0n }, { xid: 1n, seq: 5n })).toEqual({ xid: 2n, seq: 0n });
  });

  it('refuse what is not one: other shapes, numbers past 64 bits', () => {
    for (const text of ['', '1', '1-', '-1', '1-2-3', 'a-1', ' 1-2', '18446744073709551616-0', '1-9223372036854775808'])
      expect([text, parseCursor(text)]).toEqual([text, null]);
  });
});
