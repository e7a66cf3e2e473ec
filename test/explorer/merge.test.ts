// The explorer's version arithmetic (explorer/src/merge.ts) without a browser: what a save sends, and how an unsaved
// edit is merged into a newer version. The browser flows over it are in two-people.test.ts.
import { describe, expect, it } from 'vitest';
import { changesBetween, mergeEdit, sameValue } from '../../explorer/src/merge.js';

describe('explorer merge', () => {
  it('compares JSON values whatever their key order', () => {
    expect(sameValue({ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 })).toBe(true);
    expect(sameValue({ a: null }, {})).toBe(false);
    expect(sameValue([1, 2], [2, 1])).toBe(false);
  });

  it('a save sends what changed only: a null it did not touch is not sent, a removed property is', () => {
    const stored = { name: 'Launch', reviewer: null, priority: 1, tags: ['a'] };
    expect(changesBetween(stored, { ...stored, priority: 2 })).toEqual({ priority: 2 });
    expect(changesBetween(stored, { name: 'Launch', reviewer: null, priority: 1 })).toEqual({ tags: null });
    expect(changesBetween(stored, { ...stored, extra: { x: 1 } })).toEqual({ extra: { x: 1 } });
    expect(changesBetween(stored, { tags: ['a'], priority: 1, reviewer: null, name: 'Launch' })).toEqual({});
  });

  it('merges an edit into a newer version: one side’s changes are taken, both changing one property is a choice', () => {
    const base = { name: 'Budget', amount: 12000, note: 'q1', gone: 1, old: true };
    const mine = { name: 'Budget', amount: 12500.5, note: 'q2', old: true, added: 'mine' };
    const theirs = { name: 'Budget', amount: 13000, note: 'q1', gone: 1, status: 'approved' };
    const { merged, conflicts } = mergeEdit(base, mine, theirs);
    // note: only mine changed; gone: only I removed it; old: only they removed it; status and added: new on one side.
    expect(merged).toEqual({ name: 'Budget', amount: 13000, note: 'q2', added: 'mine', status: 'approved' });
    expect(conflicts).toEqual([{ key: 'amount', mine: 12500.5, theirs: 13000 }]);
    // The same change on both sides is no conflict.
    expect(mergeEdit(base, { ...base, amount: 1 }, { ...base, amount: 1 }).conflicts).toEqual([]);
    // A property I removed and they changed is a choice between their value and none.
    expect(mergeEdit(base, { name: 'Budget' }, { ...base, amount: 2 }).conflicts).toContainEqual({
      key: 'amount',
      mine: undefined,
      theirs: 2,
    });
  });

  it('without a known base, every difference is a choice that starts as the new version', () => {
    const { merged, conflicts } = mergeEdit(null, { a: 1, b: 2 }, { a: 1, b: 3, c: 4 });
    expect(merged).toEqual({ a: 1, b: 3, c: 4 });
    expect(conflicts.map((c) => c.key)).toEqual(['b', 'c']);
  });
});
