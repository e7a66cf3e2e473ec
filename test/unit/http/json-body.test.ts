// The JSON body parser's nesting check (src/http/json-body.ts). What it answers over HTTP, on both databases, is in
// test/http/json-body.test.ts.
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../../src/http/json-body.js';

describe('nestsDeeperThan', () => {
  it('counts nesting on the text, brackets inside strings not included', () => {
    expect(nestsDeeperThan(`[${'"[[[[",'.repeat(300)}1]`, 3)).toBe(false);
    expect(nestsDeeperThan(`${'['.repeat(300)}${']'.repeat(300)}`, 299)).toBe(true);
    expect(nestsDeeperThan(`${'['.repeat(300)}${']'.repeat(300)}`, 300)).toBe(false);
    expect(nestsDeeperThan(`["\\"[[[[[[[[[", ${'{"a":'.repeat(5)}1${'}'.repeat(5)}]`, 6)).toBe(false);
  });

  it('counts objects and arrays alike, up to MAX_JSON_DEPTH', () => {
    const nested = (levels: number) => `${'{"a":['.repeat(levels / 2)}1${']}'.repeat(levels / 2)}`;
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 2), MAX_JSON_DEPTH)).toBe(true);
  });
});
