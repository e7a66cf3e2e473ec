// The term-level queries of the DSL compiler (src/search/sql/query-dsl-terms.ts) run on an in-memory PGlite with the
// real schema: exact values on ids, keywords, tokens, numbers, dates and file properties, terms lists, prefixes and
// wildcards, exists.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../../src/storage/db.js';
import { migratedDb } from '../../helpers/database.js';
import { dslHits, seed } from '../../helpers/search.js';

describe('query DSL term-level queries', () => {
  let db: Db;
  const id: Record<string, string> = {};
  const names = async (query: unknown) => {
    const byId = new Map(Object.entries(id).map(([name, i]) => [i, name]));
    return (await dslHits(db, query)).map((h) => byId.get(h.id) ?? h.id).sort();
  };

  beforeAll(async () => {
    db = await migratedDb();
    const made = await seed(db, [
      { type: 'Doc', data: { name: 'Alpha Beta', n: 3, tag: 'red' }, at: new Date('2024-01-02T03:04:05.678Z') },
      { type: 'Doc', data: { name: 'alphabet soup', n: 30, tag: 'Red' }, at: new Date('2025-06-01T00:00:00Z') },
      { type: 'Doc', data: { name: 'gamma', n: '3', nested: { tag: 'blue' } } },
      { type: 'Doc', data: { other: true } },
    ]);
    [id.a, id.b, id.c, id.d] = made;
    await db.query(`UPDATE elements SET file = '{"name": "Photo.PNG", "size": 12}'::jsonb WHERE id = $1`, [id.d]);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('finds an id in any case, and nothing for a value that is no id', async () => {
    expect(await names({ term: { _id: id.a!.toUpperCase() } })).toEqual(['a']);
    expect(await names({ ids: { values: [id.b, 'not-an-id', id.c!.toUpperCase()] } })).toEqual(['b', 'c']);
    expect(await names({ term: { _id: 'not-an-id' } })).toEqual([]);
    expect(await names({ terms: { _id: ['x', 'y'] } })).toEqual([]);
  });

  it('matches keywords exactly, or case-insensitively when asked', async () => {
    expect(await names({ term: { 'name.keyword': 'Alpha Beta' } })).toEqual(['a']);
    expect(await names({ term: { 'name.keyword': 'alpha beta' } })).toEqual([]);
    expect(await names({ term: { 'tag.keyword': { value: 'RED', case_insensitive: true } } })).toEqual(['a', 'b']);
    expect(await names({ terms: { 'tag.keyword': ['red', 'blue'] } })).toEqual(['a']);
    expect(await names({ term: { 'nested.tag.keyword': 'blue' } })).toEqual(['c']);
  });

  it('matches a single lower-case token of a text field, and numbers as values (a string spelling one too)', async () => {
    expect(await names({ term: { name: 'alpha' } })).toEqual(['a']);
    expect(await names({ term: { name: 'Alpha' } })).toEqual([]);
    expect(await names({ term: { n: 3 } })).toEqual(['a']);
    expect(await names({ term: { n: '30' } })).toEqual(['b']);
    expect(await names({ terms: { n: [30, 3] } })).toEqual(['a', 'b']);
    expect(await names({ term: { '*': 'gamma' } })).toEqual(['c']);
  });

  it('compares created as the representation shows it (to the second)', async () => {
    expect(await names({ term: { created: '2024-01-02T03:04:05Z' } })).toEqual(['a']);
    expect(await names({ terms: { created: ['2025-06-01T00:00:00+00:00', '1999-01-01T00:00:00Z'] } })).toEqual(['b']);
  });

  it('reads file properties as shown, exactly, case-insensitively or as a pattern', async () => {
    expect(await names({ term: { 'file.size': 12 } })).toEqual(['d']);
    expect(await names({ term: { 'file.size': '12' } })).toEqual(['d']);
    expect(await names({ term: { 'file.name': { value: 'photo.png', case_insensitive: true } } })).toEqual(['d']);
    expect(await names({ terms: { 'file.name': ['Photo.PNG'] } })).toEqual(['d']);
    expect(await names({ wildcard: { 'file.name': 'Photo.*' } })).toEqual(['d']);
    expect(await names({ term: { hasFile: true } })).toEqual(['d']);
  });

  it('finds prefixes and wildcards on tokens, keywords and every field', async () => {
    expect(await names({ prefix: { name: 'alph' } })).toEqual(['a', 'b']);
    expect(await names({ prefix: { 'name.keyword': 'Alpha' } })).toEqual(['a']);
    expect(await names({ prefix: { 'name.keyword': { value: 'ALPHA', case_insensitive: true } } })).toEqual(['a', 'b']);
    expect(await names({ wildcard: { name: 'g?mm*' } })).toEqual(['c']);
    expect(await names({ wildcard: { '*': '*bet' } })).toEqual(['b']);
    expect(await names({ wildcard: { '*': 'bet*' } })).toEqual(['a']);
    expect(await names({ wildcard: { name: 'soup' } })).toEqual(['b']);
  });

  it('finds the elements that have a field', async () => {
    expect(await names({ exists: { field: 'tag' } })).toEqual(['a', 'b']);
    expect(await names({ exists: { field: 'tag.keyword' } })).toEqual(['a', 'b']);
    expect(await names({ exists: { field: 'other' } })).toEqual(['d']);
    expect(await names({ exists: { field: 'file' } })).toEqual(['d']);
    expect(await names({ exists: { field: '*' } })).toEqual(['a', 'b', 'c', 'd']);
    expect(await names({ exists: { field: '_underscore' } })).toEqual([]);
  });

  it('scores a term by its boost', async () => {
    const hits = await dslHits(db, { term: { 'tag.keyword': { value: 'red', boost: 2.5 } } });
    expect(hits).toEqual([{ id: id.a, score: 2.5 }]);
  });
});
