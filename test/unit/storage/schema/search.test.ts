// The search index's SQL (src/storage/schema/search.ts) on an in-memory PGlite with every migration: the document the
// database files for an element's data, case folding, the bounded edit distances of fuzzy terms and phrase order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyze, fold } from '../../../../src/search/index/analysis.js';
import type { Db } from '../../../../src/storage/db.js';
import { migratedDb } from '../../helpers/database.js';
import { seed } from '../../helpers/search.js';

describe('search index SQL', () => {
  let db: Db;
  beforeAll(async () => {
    db = await migratedDb();
  });
  afterAll(async () => {
    await db?.close();
  });

  const one = async <T>(sql: string, params: unknown[] = []): Promise<T> =>
    Object.values((await db.query<Record<string, T>>(sql, params)).rows[0]!)[0]!;

  it('files tokens, keywords, values, field names and length buckets, and leaves out "_" properties', async () => {
    const data = { name: 'Hello World', n: 3, tags: ['A b'], o: { k: true }, _x: 'hidden' };
    const lexemes = await one<string[]>('SELECT tsvector_to_array(trellis_search_document($1::jsonb))', [data]);
    expect(lexemes.sort()).toEqual(
      [
        'en',
        'ename',
        'eo',
        'eo.k',
        'etags',
        'kA b\x1ftags',
        'kHello World\x1fname',
        'n1name',
        'n1tags',
        'ta\x1ftags',
        'tb\x1ftags',
        'thello\x1fname',
        'tworld\x1fname',
        'v3\x1fn',
        'vtrue\x1fo.k',
      ].sort(),
    );
  });

  it('keeps the stored document of an element (the generated column) equal to the function', async () => {
    const [id] = await seed(db, [{ type: 'Doc', data: { title: 'Grüße aus Köln' } }]);
    const stored = await one<string[]>('SELECT tsvector_to_array(search) FROM elements WHERE id = $1', [id]);
    expect(stored).toContain('tgrüße\x1ftitle');
    expect(stored).toContain('tköln\x1ftitle');
  });

  it('folds case as the service does (analysis.ts), locale-independently', async () => {
    for (const text of ['ÀÉÎ İSTANBUL straße', 'ΣΊΣΥΦΟΣ', 'plain ascii'])
      expect(await one<string>('SELECT trellis_search_fold($1)', [text])).toBe(fold(text));
    expect(analyze('Hello, World!')).toEqual(['hello', 'world']);
  });

  it('computes edit distances up to the bound, with or without transpositions', async () => {
    const distance = (a: string, b: string, max: number, transpositions: boolean) =>
      one<number>('SELECT trellis_search_fuzzy_distance($1, $2, $3, $4)', [a, b, max, transpositions]);
    expect(await distance('kitten', 'sitting', 3, true)).toBe(3);
    expect(await distance('ab', 'ba', 2, true)).toBe(1);
    expect(await distance('ab', 'ba', 2, false)).toBe(2);
    // Beyond the bound the answer is only "above it".
    expect(await distance('abcdef', 'zzzzzz', 2, true)).toBe(3);
  });

  it('finds a phrase in order within its slop, in one field or any', async () => {
    const phrase = (field: string | null, words: string[], slop: number) =>
      one<boolean>('SELECT trellis_search_phrase($1::jsonb, $2, $3, $4)', [
        { t: 'the quick brown fox' },
        field,
        words,
        slop,
      ]);
    expect(await phrase('t', ['quick', 'brown'], 0)).toBe(true);
    expect(await phrase('t', ['quick', 'fox'], 0)).toBe(false);
    expect(await phrase('t', ['quick', 'fox'], 1)).toBe(true);
    expect(await phrase(null, ['fox', 'quick'], 0)).toBe(false);
    expect(await phrase('other', ['quick', 'brown'], 0)).toBe(false);
  });
});
