// Cypher expressions compiled to SQL (src/search/sql/cypher-expressions.ts), through WHERE conditions of queries run
// on an in-memory PGlite with the real schema, and constants evaluated without the database: Cypher's null rules,
// ids compared as UUIDs in any case, times as shown, IN lists, string predicates, ordering between types.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCypher } from '../../../../src/search/language/cypher-parse.js';
import { evalConstant } from '../../../../src/search/sql/cypher-expressions.js';
import type { Db } from '../../../../src/storage/db.js';
import { migratedDb } from '../../helpers/database.js';
import { cypherPaths, seed, seedUser } from '../../helpers/search.js';

describe('Cypher expressions', () => {
  let db: Db;
  let user: string;
  const id: Record<string, string> = {};

  beforeAll(async () => {
    db = await migratedDb();
    user = await seedUser(db);
    [id.ann, id.bob, id.cid] = await seed(
      db,
      [
        { type: 'Person', data: { name: 'Ann', age: 30, tags: ['x', 'y'] }, at: new Date('2024-01-02T03:04:05.678Z') },
        { type: 'Person', data: { name: 'bob', age: '20', nick: null } },
        { type: 'Person', data: { name: 'cid', age: 40.5 } },
      ],
      user,
    );
  });
  afterAll(async () => {
    await db?.close();
  });

  const where = async (condition: string, parameters: Record<string, unknown> = {}) => {
    const byId = new Map(Object.entries(id).map(([name, i]) => [i, name]));
    const { paths } = await cypherPaths(db, user, `MATCH p = (n:Person) WHERE ${condition} RETURN p`, parameters);
    return paths.map((p) => byId.get(p.nodeIds[0]!)).sort();
  };

  it('compares ids as UUIDs in any case; a value that is no UUID equals no id', async () => {
    expect(await where('n.id = $id', { id: id.ann!.toUpperCase() })).toEqual(['ann']);
    expect(await where('n.id <> $id', { id: id.ann })).toEqual(['bob', 'cid']);
    expect(await where('n.id = $id', { id: 'nope' })).toEqual([]);
    expect(await where('n.id <> $id', { id: 42 })).toEqual(['ann', 'bob', 'cid']);
    expect(await where('n.id IN $ids', { ids: [id.bob!.toUpperCase(), 'x', null, id.cid] })).toEqual(['bob', 'cid']);
  });

  it('compares numbers with numbers and strings with strings only (ordering across types is null)', async () => {
    expect(await where('n.age > 25')).toEqual(['ann', 'cid']);
    expect(await where("n.age > '1'")).toEqual(['bob']);
    expect(await where('n.age = 40.5')).toEqual(['cid']);
  });

  it('follows null rules: a missing or null property equals nothing, IS NULL finds it', async () => {
    expect(await where('n.nick = null')).toEqual([]);
    expect(await where('n.nick IS NULL')).toEqual(['ann', 'bob', 'cid']);
    expect(await where('n.tags IS NOT NULL')).toEqual(['ann']);
    expect(await where('NOT n.missing = 1')).toEqual([]);
  });

  it('reads created as the representation shows it', async () => {
    expect(await where("n.created = '2024-01-02T03:04:05+00:00'")).toEqual(['ann']);
    expect(await where("n.created < '2024-01-03'")).toEqual(['ann']);
  });

  it('matches string predicates and list membership', async () => {
    expect(await where("n.name STARTS WITH 'b'")).toEqual(['bob']);
    expect(await where("n.name ENDS WITH 'id' OR n.name CONTAINS 'nn'")).toEqual(['ann', 'cid']);
    expect(await where("'y' IN n.tags")).toEqual(['ann']);
    expect(await where('n.name IN $names', { names: ['Ann', 'cid'] })).toEqual(['ann', 'cid']);
  });

  it('evaluates constant expressions without the database', () => {
    const constantOf = (expr: string, parameters: Record<string, unknown> = {}) =>
      evalConstant(parseCypher(`UNWIND ${expr} AS i MATCH p = (n) RETURN p`).unwind!.expr, parameters);
    expect(constantOf('$n', { n: 3 })).toBe(3);
    expect(constantOf("[1, $x, {a: $y, b: 'c'}, null]", { x: 'two', y: [3] })).toEqual([
      1,
      'two',
      { a: [3], b: 'c' },
      null,
    ]);
    expect(constantOf('$m.k', { m: { k: 'v' } })).toBe('v');
    expect(() => constantOf('$missing')).toThrow(/missing/);
  });
});
