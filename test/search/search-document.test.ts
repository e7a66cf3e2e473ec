// trellis_search_document against a reference build of the same document: one query over every leaf of the data
// (LEAVES) and the plain fold, the straightforward form of what the function does with less work per element (one
// scan of the properties, ASCII lowered inline). The reference puts field names into regexp_replace's replacement
// text as they are, so a backslash in a field name mangles its token lexemes: the expected vector of a document is
// the reference's, computed with every backslash in a field name replaced by U+E000 and put back into the lexemes
// afterwards. Both backends, over hand-picked edge cases and seeded random documents; a write stores that vector.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { documentOfText, LEAVES, leafLexemes } from '../../src/storage/schema/search.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

const STAND_IN = '\uE000';

/** The document with every backslash in a field name (at any depth) replaced by STAND_IN. */
function keysWithoutBackslash(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(keysWithoutBackslash);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replaceAll('\\', STAND_IN), keysWithoutBackslash(v)]),
  );
}

/** The reference build, as a function called `name`. */
function referenceDocument(name: string): string {
  const lexemes = leafLexemes('f');
  return `CREATE FUNCTION ${name}(p_data jsonb) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET jit = off AS $fn$
DECLARE
  doc text;
BEGIN
  IF p_data IS NULL OR jsonb_typeof(p_data) <> 'object' OR p_data = '{}'::jsonb THEN
    RETURN ''::tsvector;
  END IF;
  SELECT string_agg(${lexemes}, E'\\x1d') INTO doc FROM (${LEAVES}) leaf;
${documentOfText(lexemes)}END
$fn$`;
}

const EDGE_CASES: unknown[] = [
  {
    name: 'Document 3970',
    level: 5,
    pages: 180,
    title: 'gammadelta betagamma',
    status: 'review',
    description: 'gamma epsilon omicron',
  },
  {},
  { _secret: 'hidden', _n: 1 },
  { a: null, b: [], c: {} },
  { only: { nested: { deep: 'Value', n: 2.5 }, list: [1, 'Two', [true, { x: 'ÉCOLE' }]] } },
  { mixed: 'top', obj: { k: 'inner' }, arr: ['a', 'b'], _hidden: { k: 'no' } },
  { s: '' },
  { s: '  ...,,;  ' },
  { s: '--leading and trailing--' },
  { s: 'tag-20 e-mail@x.org 3.14 snake_case camelCase' },
  { 'dotted.key': 'v', dotted: { key: 'w' } },
  { 'weird\u001ekey\u001f\u001d': 'value \u001e\u001f\u001d end' },
  { greek: 'ΑΘΗΝΑ Σοφία', cyrillic: 'МОСКВА Ёлка', armenian: 'ԱԲԳ', georgian: 'ႠႡႢ', fullwidth: 'ＡＢＣ１２３' },
  {
    turkish: 'İSTANBUL',
    german: 'STRAẞE Größe',
    cjk: '東京、大阪。名古屋',
    emoji: 'party 🎉🎉 time',
    rtl: 'مرحبا بالعالم',
  },
  { numbers: [0, -0, 1.0, 1e21, -3.5e-7, 1.2345678901234568e29], flags: [true, false] },
  {
    keyword: 'x'.repeat(256),
    tooLong: 'y'.repeat(257),
    manyWords: Array.from({ length: 300 }, (_, i) => `w${i}`).join(' '),
  },
  { longToken: 'z'.repeat(5000), normal: 'kept words' },
  { big: Array.from({ length: 40 }, (_, i) => `field ${i} ${'q'.repeat(60)}`) },
  { arrays: [[['deep']]], objs: [{ a: 1 }, { a: 2 }, { b: { c: 'three' } }] },
  // Every ASCII character, alone and between letters.
  { ascii: String.fromCharCode(...Array.from({ length: 127 }, (_, i) => i + 1)) },
  Object.fromEntries(
    Array.from({ length: 127 }, (_, i) => [
      `c${i + 1}`,
      `Ab${String.fromCharCode(i + 1)}cD${String.fromCharCode(i + 1)}`,
    ]),
  ),
  {
    tabs: 'a\tb\nc\rd',
    spaces: '   ',
    one: 'x',
    digits: '007 42',
    mixedCase: 'HeLLo WoRLD',
    nested: { s: '  Nested, ASCII-only!  ', list: ['a b', '', ' '] },
  },
  // Field names with the escapes of regexp_replace's replacement text.
  {
    'a\\1b': 'one two three',
    'c\\\\d': 'one two',
    'x\\&y': 'one, two',
    '\\': 'a b',
    'end\\': { '\\9': ['p q', 'r'] },
    v: 'back\\slash \\1 value',
  },
];

/** A deterministic generator of JSON documents with separators, Unicode, nesting and hidden keys. */
function randomDocuments(count: number, seed: number, asciiOnly = false): unknown[] {
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]!;
  const all = [
    'a',
    'B',
    'z',
    '0',
    '9',
    ' ',
    '-',
    '.',
    '_',
    '/',
    'é',
    'Ж',
    'Ω',
    'ß',
    '東',
    '🎉',
    '\u00a0',
    '\u2014',
    '\u3001',
    'Ｆ',
    '\u001f',
    'İ',
    ' ',
  ];
  const chars = asciiOnly
    ? [...all.filter((c) => c.charCodeAt(0) < 0x80), 'Q', '~', '\t', '\u007f', '\\', "'", '"', '@']
    : all;
  const text = () => Array.from({ length: Math.floor(next() * 30) }, () => pick(chars)).join('');
  const value = (depth: number): unknown => {
    const r = next();
    if (r < 0.45) return text();
    if (r < 0.6) return Math.round((next() - 0.5) * 1e6) / pick([1, 10, 1000]);
    if (r < 0.65) return next() < 0.5;
    if (r < 0.7) return null;
    if (depth > 2) return text();
    if (r < 0.85) return Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1));
    return object(depth + 1);
  };
  const object = (depth: number) =>
    Object.fromEntries(
      Array.from({ length: Math.floor(next() * 6) }, () => [
        pick(['', '_']) + [...text()].slice(0, 8).join(''),
        value(depth),
      ]),
    );
  return Array.from({ length: count }, () => object(0));
}

for (const backend of backendsUnderTest()) {
  describe(`search document [${backend}]`, () => {
    let db: Db;
    let dispose: () => Promise<void>;
    beforeAll(async () => {
      ({ db, dispose } = await freshDatabase(backend));
      await db.query(referenceDocument('search_document_reference'));
    });
    afterAll(() => dispose());

    const differences = async (documents: unknown[]) => {
      const json = JSON.stringify(documents);
      expect(json).not.toContain(STAND_IN);
      const { rows } = await db.query<{ i: number; now: string[]; expected: string[] }>(
        `SELECT d.i,
           ARRAY(SELECT x FROM unnest(tsvector_to_array(trellis_search_document(d.doc))) x ORDER BY x COLLATE "C") AS now,
           ARRAY(SELECT y FROM (SELECT replace(x, E'\\uE000', E'\\\\') AS y FROM unnest(tsvector_to_array(search_document_reference(s.doc))) x) r
                 ORDER BY y COLLATE "C") AS expected
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY d(doc, i)
         JOIN jsonb_array_elements($2::jsonb) WITH ORDINALITY s(doc, i) USING (i)`,
        [json, JSON.stringify(documents.map(keysWithoutBackslash))],
      );
      expect(rows).toHaveLength(documents.length);
      return rows
        .filter((r) => JSON.stringify(r.now) !== JSON.stringify(r.expected))
        .map((r) => ({ document: documents[r.i - 1], ...r }));
    };

    it('gives the vector of the reference for hand-picked edge cases', async () => {
      expect(await differences(EDGE_CASES)).toEqual([]);
      // The cases are not trivially empty: most of them produce lexemes.
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jsonb_array_elements($1::jsonb) d WHERE length(trellis_search_document(d)) > 0`,
        [JSON.stringify(EDGE_CASES)],
      );
      expect(rows[0]!.n).toBeGreaterThanOrEqual(15);
    });

    it('indexes every word under a field name holding a backslash (the reference mangles all but the last)', async () => {
      const { rows } = await db.query<{ now: string[]; before: string[] }>(
        `SELECT tsvector_to_array(trellis_search_document($1)) AS now, tsvector_to_array(search_document_reference($1)) AS before`,
        [{ 'a\\1b': 'one two three', 'x\\&y': 'four five' }],
      );
      const tokens = ['tone\x1fa\\1b', 'ttwo\x1fa\\1b', 'tthree\x1fa\\1b', 'tfour\x1fx\\&y', 'tfive\x1fx\\&y'];
      expect(rows[0]!.now).toEqual(expect.arrayContaining(tokens));
      expect(rows[0]!.now.filter((l) => l.startsWith('t'))).toHaveLength(tokens.length);
      // The reference has only the last word of each string under the right field name.
      expect(rows[0]!.before.filter((l) => tokens.includes(l)).sort()).toEqual(['tfive\x1fx\\&y', 'tthree\x1fa\\1b']);
    });

    it('gives the vector of the reference for 400 random documents', async () => {
      expect(await differences(randomDocuments(400, 7))).toEqual([]);
    });

    it('gives the vector of the reference for 400 random documents of ASCII text only', async () => {
      expect(await differences(randomDocuments(400, 11, true))).toEqual([]);
    });

    it('gives the vector of the reference for a document over the 1 MB budget', async () => {
      const huge = Object.fromEntries(
        Array.from({ length: 30 }, (_, i) => [`p${i}`, Array.from({ length: 4000 }, (_, j) => `t${i}x${j}`).join(' ')]),
      );
      expect(await differences([huge])).toEqual([]);
    });

    it('stores that vector when an element is written', async () => {
      const doc = EDGE_CASES[13];
      await db.query(
        `INSERT INTO elements (id, type, data, created, updated) VALUES (gen_random_uuid(), 'Probe', $1, now(), now())`,
        [doc],
      );
      const { rows } = await db.query<{ same: boolean }>(
        `SELECT search = search_document_reference(data) AS same FROM elements WHERE type = 'Probe'`,
      );
      expect(rows).toEqual([{ same: true }]);
    });
  });
}
