// The hand-written element serialiser must produce exactly the bytes of JSON.stringify(toElementJson(row)): ETags
// are hashes of those bytes, and every single-element response renders through it.
import { describe, expect, it } from 'vitest';
import { elementBody, etagOf, renderElement, toElementJson } from '../../src/domain/representation.js';
import type { ElementRow } from '../../src/storage/queries/elements.js';

const NODE_ID = '0b7c4c5e-2f0a-4c1e-9d5b-6f8e7a6b5c4d';
const START = '1c8d5d6f-3a1b-4d2f-8e6c-7a9f8b7c6d5e';
const END = '2d9e6e7a-4b2c-4e3a-9f7d-8bae9c8d7e6f';
const FILE = { contentLength: 5, extension: 'txt', mimeType: 'text/plain', hash: { sha256: 'LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=' } };

const row = (overrides: Partial<ElementRow>): ElementRow => ({
  id: NODE_ID,
  type: 'Doc',
  start_id: null,
  end_id: null,
  data: {},
  file: null,
  created: new Date('2026-11-22T06:35:54.123Z'),
  updated: new Date('2026-11-22T07:01:02.999Z'),
  ...overrides,
});

describe('elementBody', () => {
  const cases: Array<[string, ElementRow]> = [
    ['a node with empty data', row({})],
    ['a node with data', row({ data: { name: 'x', level: 5, nested: { a: [1, 2.5, null, { b: true }] } } })],
    ['integer-like keys (JavaScript orders them first)', row({ data: { b: 1, 10: 'ten', 2: 'two', a: { 3: 'x', c: 1 } } })],
    ['characters that need escaping', row({ type: 'Doc_x-1', data: { 'q"uote': 'say "hi"\n\t\\ ü 東京 😀 \u2028 \u0001' } })],
    ['a key named __proto__', row({ data: JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') })],
    ['a node with a file', row({ data: { name: 'has a file' }, file: FILE })],
    ['a node with a file and no data', row({ file: FILE })],
    ['a relation', row({ type: 'OWNS', start_id: START, end_id: END })],
    ['a relation with data and a file', row({ type: 'LINKS', start_id: START, end_id: END, data: { why: 'because' }, file: FILE })],
  ];
  for (const [name, r] of cases)
    it(`writes the bytes JSON.stringify(toElementJson(row)) writes: ${name}`, () => {
      const expected = JSON.stringify(toElementJson(r));
      expect(elementBody(r)).toBe(expected);
      expect(renderElement(r)).toEqual({ body: expected, etag: etagOf(expected) });
      expect(JSON.parse(elementBody(r))).toEqual(JSON.parse(expected));
    });
});
