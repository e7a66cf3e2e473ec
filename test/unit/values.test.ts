// The value checks at the bottom of the layers (src/values.ts).
import { describe, expect, it } from 'vitest';
import { unstorableAt } from '../../src/values.js';

describe('unstorableAt', () => {
  it('finds what cannot be stored, with its path', () => {
    expect(unstorableAt({ a: ['ok', { b: 'x\u0000' }] })).toBe('a[1].b');
    expect(unstorableAt({ a: '\ud800' })).toBe('a');
    expect(unstorableAt({ a: 'x\udc00y' })).toBe('a');
    expect(unstorableAt({ 'k\ud800': 1 })).toBe('the key of "k\\ud800"');
    expect(unstorableAt({ n: [1, Infinity] })).toBe('n[1]');
    expect(unstorableAt({ fine: '\ud83c\udf89 \u00e9 \\u0000', n: 1e308 })).toBeNull();
  });
});
