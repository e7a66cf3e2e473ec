// Cypher queries compiled to one statement (src/search/sql/cypher-statement.ts) and run on an in-memory PGlite with
// the real schema: paths in path order, direction, variable length, UNWIND, ORDER BY / SKIP / LIMIT, DISTINCT, READ
// on every node, and the 400s of the caps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../../../src/errors.js';
import type { Db } from '../../../../src/storage/db.js';
import { migratedDb } from '../../helpers/database.js';
import { cypherPaths, seed, seedUser } from '../../helpers/search.js';

describe('Cypher statement', () => {
  let db: Db;
  let user: string;
  let stranger: string;
  // a -KNOWS-> b -KNOWS-> c, a -LIKES-> c; hidden (not readable by user) <-KNOWS- c
  let a: string, b: string, c: string, hidden: string, ab: string, bc: string, ac: string, ch: string;

  beforeAll(async () => {
    db = await migratedDb();
    user = await seedUser(db);
    stranger = await seedUser(db);
    [a, b, c] = await seed(
      db,
      [
        { type: 'Person', data: { name: 'ann', age: 30 } },
        { type: 'Person', data: { name: 'bob', age: 20 } },
        { type: 'Person', data: { name: 'cid', age: 40 } },
      ],
      user,
    );
    [hidden] = await seed(db, [{ type: 'Person', data: { name: 'hid' } }], stranger);
    [ab, bc, ac, ch] = await seed(db, [
      { type: 'KNOWS', start: a, end: b },
      { type: 'KNOWS', start: b, end: c },
      { type: 'LIKES', start: a, end: c },
      { type: 'KNOWS', start: c, end: hidden },
    ]);
  });
  afterAll(async () => {
    await db?.close();
  });

  const paths = async (query: string, parameters: Record<string, unknown> = {}, who = () => user) =>
    (await cypherPaths(db, who(), query, parameters)).paths.map((p) => [...p.nodeIds, '|', ...p.relationIds]);

  it('returns each path as its node ids and relation ids in path order', async () => {
    expect(await paths("MATCH p = (x {name: 'ann'})-[:KNOWS]->(y) RETURN p")).toEqual([[a, b, '|', ab]]);
    expect(await paths("MATCH p = (x)<-[:KNOWS]-(y {name: 'ann'}) RETURN p")).toEqual([[b, a, '|', ab]]);
  });

  it('walks variable-length relations, shorter paths first', async () => {
    expect(await paths("MATCH p = (x {name: 'ann'})-[:KNOWS*1..2]->(y) RETURN p")).toEqual([
      [a, b, '|', ab],
      [a, b, c, '|', ab, bc],
    ]);
  });

  it('checks READ on every node: a path through an element the caller cannot read is left out', async () => {
    expect(await paths("MATCH p = (x {name: 'cid'})-[:KNOWS]->(y) RETURN p")).toEqual([]);
    expect(await paths("MATCH p = (x {name: 'cid'})-[:KNOWS]->(y) RETURN p", {}, () => stranger)).toEqual([]);
    expect(
      await paths('MATCH p = (x)-[:KNOWS]->(y) WHERE y.id = $id RETURN p', { id: hidden }, () => stranger),
    ).toEqual([]);
    expect(ch).toBeDefined();
  });

  it('starts from UNWIND values, in their order', async () => {
    const found = await paths('UNWIND $ids AS i MATCH p = (x)-->(y) WHERE x.id = i RETURN p', { ids: [b, a] });
    // The UNWIND order first; within one value, by node ids.
    expect(found[0]).toEqual([b, c, '|', bc]);
    expect(found.slice(1)).toEqual(
      [
        [a, b, '|', ab],
        [a, c, '|', ac],
      ].sort((x, y) => (x[1]! < y[1]! ? -1 : 1)),
    );
  });

  it('orders, skips and limits', async () => {
    const q = 'MATCH p = (x:Person)-->(y) RETURN p ORDER BY y.age DESC, x.age SKIP $skip LIMIT 2';
    expect(await paths(q, { skip: 0 })).toEqual([
      [b, c, '|', bc],
      [a, c, '|', ac],
    ]);
    expect(await paths(q, { skip: 2 })).toEqual([[a, b, '|', ab]]);
  });

  it('refuses what it cannot run with a 400 naming the problem', async () => {
    await expect(paths('MATCH p = (x) RETURN p SKIP $n', { n: -1 })).rejects.toThrow(/SKIP must be a non-negative/);
    await expect(
      paths('UNWIND $l AS i MATCH p = (x) RETURN p', { l: Array.from({ length: 10_001 }, () => 1) }),
    ).rejects.toThrow(Problem);
    const few = { maxPaths: 2, maxExplored: 100 };
    await expect(cypherPaths(db, user, 'MATCH p = (x:Person) RETURN p', {}, few)).rejects.toThrow(
      /matches more than 2 paths, the limit without LIMIT/,
    );
    await expect(
      cypherPaths(db, user, 'MATCH p = (x)-[*1..3]-(y) RETURN p LIMIT 1', {}, { maxPaths: 100, maxExplored: 2 }),
    ).rejects.toThrow(/explores more than 2 partial paths/);
  });
});
