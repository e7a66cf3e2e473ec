// runCypherPaths on both backends, over a small graph built through the real HTTP API: exact paths (ids in path
// order) for each shape of the subset, the caps, and access (a path with an element the caller cannot read is
// dropped, while its owner gets it).
import { beforeAll, describe, expect, it } from 'vitest';
import { runCypherPaths } from '../../src/domain/search/steps.js';
import { Problem } from '../../src/errors.js';
import { MAX_HOPS } from '../../src/search/language/cypher-ast.js';
import { type CypherLimits, MAX_PATHS } from '../../src/search/language/limits.js';
import type { PathIds } from '../../src/search/results.js';
import { sqlSearchEngine } from '../../src/storage/search/search-engine.js';
import { sqlTransactions } from '../../src/storage/transactions.js';
import type { ElementId } from '../../src/values.js';
import { tinyPng } from '../files/fixtures.js';
import { attachFile, createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

async function relate(
  h: Harness,
  token: string,
  type: string,
  start: string,
  end: string,
  data: Record<string, unknown> = {},
): Promise<string> {
  const res = await h.request('POST', '/', { token, body: { type, start, end, data } });
  if (res.status !== 201) throw new Error(`relation ${type}: ${res.status} ${res.text}`);
  return res.headers.get('location')!.slice(1);
}

/** A path from alternating ids: node, relation, node, … */
const path = (...ids: string[]): PathIds => ({
  nodeIds: ids.filter((_, i) => i % 2 === 0) as ElementId[],
  relationIds: ids.filter((_, i) => i % 2 === 1) as ElementId[],
});

/** The default order of results without ORDER BY: shorter paths first, then node ids, then relation ids. */
function inDefaultOrder(paths: PathIds[]): PathIds[] {
  const compare = (a: string[], b: string[]) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
    return a.length - b.length;
  };
  return [...paths].sort(
    (a, b) =>
      a.relationIds.length - b.relationIds.length ||
      compare(a.nodeIds, b.nodeIds) ||
      compare(a.relationIds, b.relationIds),
  );
}

async function refused(promise: Promise<unknown>, detail: RegExp): Promise<void> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Problem);
  expect((error as Problem).slug).toBe('bad-content');
  expect((error as Problem).detail).toMatch(detail);
}

describeBackends('cypher paths', (h) => {
  let alice: User;
  let bob: User;
  // Plants and taxa: lily -> liliales -> monocots -> angiosperms, rose -> rosales -> angiosperms (IS_MEMBER_OF),
  // lily -RELATED_TO-> rose.
  let lily: string, rose: string, liliales: string, monocots: string, rosales: string, angiosperms: string;
  let lilyIn: string, lilialesIn: string, monocotsIn: string, roseIn: string, rosalesIn: string, related: string;
  // A cycle c1 -> c2 -> c3 -> c1 (NEXT).
  let c1: string, c2: string, c3: string, n12: string, n23: string, n31: string;
  // A node with a relation to itself, and one with characters that quoting would have to survive.
  let loop: string, self: string, odd: string;
  // A chain of MAX_HOPS + 2 nodes (LINK), for the depth cap.
  const chain: string[] = [];
  const links: string[] = [];

  const run = (user: User, query: string, parameters: Record<string, unknown> = {}, limits?: CypherLimits) =>
    runCypherPaths(sqlSearchEngine(), sqlTransactions(h().db).direct, user.id, query, parameters, limits).then(
      (out) => out.paths,
    );

  beforeAll(async () => {
    alice = await userWithToken(h(), 'alice@cypher.dev');
    bob = await userWithToken(h(), 'bob@cypher.dev');
    const t = alice.token;
    const node = (type: string, data: Record<string, unknown>) => createElement(h(), t, { type, data });
    lily = await node('Plant', { name: 'Lily', count: 5, tags: ['white'] });
    rose = await node('Plant', { name: 'Rose', count: 2, color: null });
    liliales = await node('Taxon', { name: 'Liliales', rank: 'order' });
    monocots = await node('Taxon', { name: 'Monocots', rank: 'clade' });
    rosales = await node('Taxon', { name: 'Rosales', rank: 'order' });
    angiosperms = await node('Taxon', { name: 'Angiosperms', rank: 'clade' });
    lilyIn = await relate(h(), t, 'IS_MEMBER_OF', lily, liliales, { since: 1753 });
    lilialesIn = await relate(h(), t, 'IS_MEMBER_OF', liliales, monocots);
    monocotsIn = await relate(h(), t, 'IS_MEMBER_OF', monocots, angiosperms);
    roseIn = await relate(h(), t, 'IS_MEMBER_OF', rose, rosales, { since: 1820 });
    rosalesIn = await relate(h(), t, 'IS_MEMBER_OF', rosales, angiosperms);
    related = await relate(h(), t, 'RELATED_TO', lily, rose);
    c1 = await node('Cycle', { name: 'c1' });
    c2 = await node('Cycle', { name: 'c2' });
    c3 = await node('Cycle', { name: 'c3' });
    n12 = await relate(h(), t, 'NEXT', c1, c2);
    n23 = await relate(h(), t, 'NEXT', c2, c3);
    n31 = await relate(h(), t, 'NEXT', c3, c1);
    odd = await node('Odd-Type', { 'odd key': `he said "hi", \\ {x} 'y'` });
    loop = await node('Loop', {});
    self = await relate(h(), t, 'SELF', loop, loop);
    for (let i = 0; i < MAX_HOPS + 2; i++) chain.push(await node('Link', { i }));
    for (let i = 0; i + 1 < chain.length; i++) links.push(await relate(h(), t, 'LINK', chain[i]!, chain[i + 1]!));
  });

  describe('patterns', () => {
    it('matches fixed-length paths, in path order', async () => {
      expect(await run(alice, 'MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t:Taxon) RETURN p')).toEqual(
        inDefaultOrder([path(lily, lilyIn, liliales), path(rose, roseIn, rosales)]),
      );
      expect(
        await run(alice, "MATCH p=(a:Plant {name: 'Lily'})-[:IS_MEMBER_OF]->(:Taxon)-[:IS_MEMBER_OF]->(t) RETURN p"),
      ).toEqual([path(lily, lilyIn, liliales, lilialesIn, monocots)]);
      expect(await run(alice, "MATCH p=(a:Plant {name: 'Lily'}) RETURN p")).toEqual([path(lily)]);
    });

    it('matches variable-length paths within their bounds', async () => {
      const fromLily = (length: string) =>
        run(alice, `MATCH p=(a:Plant)-[:IS_MEMBER_OF${length}]->(t) WHERE a.name = 'Lily' RETURN p`);
      const one = path(lily, lilyIn, liliales);
      const two = path(lily, lilyIn, liliales, lilialesIn, monocots);
      const three = path(lily, lilyIn, liliales, lilialesIn, monocots, monocotsIn, angiosperms);
      expect(await fromLily('*')).toEqual([one, two, three]);
      expect(await fromLily('*..')).toEqual([one, two, three]);
      expect(await fromLily('*..2')).toEqual([one, two]);
      expect(await fromLily('*2..')).toEqual([two, three]);
      expect(await fromLily('*2..3')).toEqual([two, three]);
      expect(await fromLily('*2')).toEqual([two]);
      expect(await fromLily('*0..1')).toEqual([path(lily), one]);
      expect(await fromLily('*0')).toEqual([path(lily)]);
      expect(await fromLily('*4..')).toEqual([]);
    });

    it('follows directions, and returns paths in pattern order whichever end the walk starts from', async () => {
      expect(await run(alice, "MATCH p=(t:Taxon {name: 'Liliales'})<-[:IS_MEMBER_OF]-(x) RETURN p")).toEqual([
        path(liliales, lilyIn, lily),
      ]);
      expect(await run(alice, "MATCH p=(t:Taxon {name: 'Liliales'})-[:IS_MEMBER_OF]->(x) RETURN p")).toEqual([
        path(liliales, lilialesIn, monocots),
      ]);
      expect(await run(alice, "MATCH p=(t:Taxon {name: 'Liliales'})-[:IS_MEMBER_OF]-(x) RETURN p")).toEqual(
        inDefaultOrder([path(liliales, lilyIn, lily), path(liliales, lilialesIn, monocots)]),
      );
      // The conditions are on the last node: the walk starts there and goes backwards; the paths read forwards.
      expect(await run(alice, "MATCH p=(x)-[:IS_MEMBER_OF*]->(t:Taxon) WHERE t.name = 'Monocots' RETURN p")).toEqual([
        path(liliales, lilialesIn, monocots),
        path(lily, lilyIn, liliales, lilialesIn, monocots),
      ]);
      expect(
        await run(alice, 'MATCH p=(t:Taxon)<-[:IS_MEMBER_OF*2..3]-(x:Plant) WHERE t.id = $id RETURN p', {
          id: angiosperms,
        }),
      ).toEqual([
        path(angiosperms, rosalesIn, rosales, roseIn, rose),
        path(angiosperms, monocotsIn, monocots, lilialesIn, liliales, lilyIn, lily),
      ]);
    });

    it('matches several relation types, and any type', async () => {
      expect(await run(alice, "MATCH p=(a:Plant {name: 'Lily'})-[:RELATED_TO|IS_MEMBER_OF]->(b) RETURN p")).toEqual(
        inDefaultOrder([path(lily, lilyIn, liliales), path(lily, related, rose)]),
      );
      expect(
        await run(
          alice,
          "MATCH p=(a:Plant {name: 'Lily'})-[:RELATED_TO]->(:Plant)-[:IS_MEMBER_OF|:NONE]->(t:Taxon) RETURN p",
        ),
      ).toEqual([path(lily, related, rose, roseIn, rosales)]);
      // Any type: also the OWNS and CREATED relations from alice (a User node), so restrict the far end's label.
      expect(await run(alice, "MATCH p=(a:Plant {name: 'Lily'})-[r]-(b:Plant|Taxon) RETURN p")).toEqual(
        inDefaultOrder([path(lily, lilyIn, liliales), path(lily, related, rose)]),
      );
      expect(await run(alice, "MATCH p=(u:User)-[:OWNS]->(a:Plant {name: 'Lily'}) RETURN p")).toHaveLength(1);
    });

    it('joins several patterns on shared variables, with relations unique across them', async () => {
      expect(
        await run(
          alice,
          "MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t), (t)-[:IS_MEMBER_OF]->(u:Taxon {name: 'Monocots'}) RETURN p",
        ),
      ).toEqual([path(lily, lilyIn, liliales)]);
      // Both patterns could use the same relation; isomorphism forbids it within one MATCH.
      expect(
        await run(alice, "MATCH p=(a {name: 'c1'})-[:NEXT]->(b), q=(x)-[:NEXT]->(y {name: 'c2'}) RETURN p"),
      ).toEqual([]);
      expect(
        await run(alice, "MATCH p=(a {name: 'c1'})-[:NEXT]->(b), q=(x)-[:NEXT]->(y {name: 'c3'}) RETURN q"),
      ).toEqual([path(c2, n23, c3)]);
    });
  });

  describe('WHERE', () => {
    it('filters on data properties (as JSON: numbers numerically, strings as strings), id, created and labels', async () => {
      const plants = (where: string, parameters: Record<string, unknown> = {}) =>
        run(alice, `MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t) WHERE ${where} RETURN p`, parameters).then((paths) =>
          paths.map((x) => x.nodeIds[0]),
        );
      expect(await plants('a.count > 3')).toEqual([lily]);
      expect(await plants('a.count >= 2.0 AND a.count <= 2')).toEqual([rose]);
      expect(await plants('a.count = 5.0')).toEqual([lily]);
      expect(await plants("a.count = '5'")).toEqual([]); // a string is not a number
      expect(await plants("a.count > 'a'")).toEqual([]); // ordering across types is null
      expect(await plants("NOT a.count > 'a'")).toEqual([]); // …and NOT null is null
      expect(await plants("a.name < 'M'")).toEqual([lily]);
      expect(await plants("a.name STARTS WITH 'Li' OR a.name ENDS WITH 'se'")).toEqual(
        inDefaultOrder([path(lily), path(rose)]).map((x) => x.nodeIds[0]),
      );
      expect(await plants("a.name CONTAINS 'os'")).toEqual([rose]);
      expect(await plants("a.name CONTAINS 'os' XOR a.count = 2")).toEqual([]);
      expect(await plants('a.color IS NULL AND a.missing IS NULL AND a.name IS NOT NULL')).toEqual(
        inDefaultOrder([path(lily), path(rose)]).map((x) => x.nodeIds[0]),
      );
      expect(await plants("a.tags = ['white']")).toEqual([lily]);
      expect(await plants('a.id = $id', { id: rose })).toEqual([rose]);
      expect(await plants('a.id = $id', { id: rose.toUpperCase() })).toEqual([rose]);
      expect(await plants("a.id = 'not-a-uuid'")).toEqual([]);
      expect(await plants('a.id <> $id', { id: rose })).toEqual([lily]);
      expect(await plants('a = $x', { x: null })).toEqual([]);
      expect(
        await plants(
          "t:Taxon AND t.rank = 'order' AND a.created >= '2000-01-01T00:00:00Z' AND a.updated < '2999-01-01'",
        ),
      ).toHaveLength(2);
      expect(await plants("a.created < '2000-01-01'")).toEqual([]);
      expect(await plants('$flag', { flag: false })).toEqual([]);
    });

    it('compares created and updated as the element shows them (whole seconds), so a value read back finds it', async () => {
      // Mid-second, so that the stored time has a fraction the representation does not show.
      h().clock.advance((1500 - (h().clock.now().getTime() % 1000)) / 1000);
      const fern = await createElement(h(), alice.token, { type: 'Fern', data: { name: 'Fern' } });
      const shown = (await h().request('GET', `/${fern}`, { token: alice.token })).json.data as {
        created: string;
        updated: string;
      };
      const ferns = (where: string) =>
        run(alice, `MATCH p=(a:Fern) WHERE ${where} RETURN p`, { t: shown.created }).then((paths) =>
          paths.map((x) => x.nodeIds[0]),
        );
      expect(await ferns('a.created = $t')).toEqual([fern]);
      expect(await ferns('a.created <= $t')).toEqual([fern]);
      expect(await ferns('a.created > $t')).toEqual([]);
      expect(await ferns(`a.updated = '${shown.updated}'`)).toEqual([fern]);
      expect((await h().request('DELETE', `/${fern}`, { token: alice.token })).status).toBe(204);
    });

    it('sees hasFile and file as the element shows them in data', async () => {
      const moss = await createElement(h(), alice.token, { type: 'Moss', data: { name: 'With file' } });
      const bare = await createElement(h(), alice.token, { type: 'Moss', data: { name: 'Without' } });
      const png = tinyPng();
      await attachFile(h(), alice.token, moss, png, 'm.png');
      const mosses = (where: string) =>
        run(alice, `MATCH p=(a:Moss) WHERE ${where} RETURN p`).then((paths) => paths.map((x) => x.nodeIds[0]));
      expect(await mosses('a.hasFile = true')).toEqual([moss]);
      expect(await mosses('a.hasFile IS NULL')).toEqual([bare]);
      expect(await mosses("a.file.mimeType = 'image/png' AND a.file.extension = 'png'")).toEqual([moss]);
      expect(await mosses(`a.file.contentLength = ${png.length}`)).toEqual([moss]);
      expect(await mosses('a.file IS NULL')).toEqual([bare]);
      for (const id of [moss, bare])
        expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
    });

    it('filters on relation properties and compares variables with each other', async () => {
      const since = (where: string) =>
        run(alice, `MATCH p=(a:Plant)-[r:IS_MEMBER_OF]->(t) WHERE ${where} RETURN p`).then((paths) =>
          paths.map((x) => x.nodeIds[0]),
        );
      expect(await since('r.since < 1800')).toEqual([lily]);
      expect(await since('r.since > a.count AND r.id IS NOT NULL')).toHaveLength(2);
      expect(await run(alice, 'MATCH p=(a:Plant)-[:IS_MEMBER_OF {since: 1820}]->(t) RETURN p')).toEqual([
        path(rose, roseIn, rosales),
      ]);
      // the cycle back to its start: the same node at both ends
      expect(await run(alice, "MATCH p=(a:Cycle {name: 'c1'})-[:NEXT*]->(b) WHERE a = b RETURN p")).toEqual([
        path(c1, n12, c2, n23, c3, n31, c1),
      ]);
      expect(await run(alice, "MATCH p=(a:Cycle {name: 'c1'})-[:NEXT*]->(a) RETURN p")).toEqual([
        path(c1, n12, c2, n23, c3, n31, c1),
      ]);
    });

    it('takes IN $param (the reference example) and lists', async () => {
      const reference =
        'MATCH path=((:Plant)-[:IS_MEMBER_OF*..]->(t:Taxon)) WHERE t.name IN $taxonNames RETURN path LIMIT 5';
      expect(await run(alice, reference, { taxonNames: ['Liliales'] })).toEqual([path(lily, lilyIn, liliales)]);
      expect(await run(alice, reference, { taxonNames: ['Liliales', 'Rosales', 7, null] })).toEqual(
        inDefaultOrder([path(lily, lilyIn, liliales), path(rose, roseIn, rosales)]),
      );
      expect(await run(alice, reference, { taxonNames: [] })).toEqual([]);
      expect(
        await run(alice, 'MATCH p=(a:Plant)-->(t:Taxon) WHERE a.id IN $ids RETURN p', { ids: [rose, 'junk', 3] }),
      ).toEqual([path(rose, roseIn, rosales)]);
      expect(
        await run(alice, "MATCH p=(a:Plant)-->(t:Taxon) WHERE a.count IN [1, 2, 3] AND 'white' IN a.tags RETURN p"),
      ).toEqual([]);
      expect(await run(alice, "MATCH p=(a:Plant)-->(t:Taxon) WHERE 'white' IN a.tags RETURN p")).toEqual([
        path(lily, lilyIn, liliales),
      ]);
      const strange = `he said "hi", \\ {x} 'y'`;
      expect(await run(alice, 'MATCH p=(a:`Odd-Type`) WHERE a.`odd key` IN $v RETURN p', { v: [strange] })).toEqual([
        path(odd),
      ]);
      expect(
        await run(alice, "MATCH p=(a:`Odd-Type` {`odd key`: 'he said \"hi\", \\\\ {x} \\'y\\''}) RETURN p"),
      ).toEqual([path(odd)]);
    });

    it('refuses a missing parameter and type errors with 400', async () => {
      await refused(run(alice, 'MATCH p=(a:Plant)-->(t) WHERE a.name = $nope RETURN p'), /parameter \$nope is missing/);
      await refused(
        run(alice, 'MATCH p=(a:Plant)-->(t) WHERE a.name IN $x RETURN p', { x: 'Lily' }),
        /IN needs a list/,
      );
      await refused(run(alice, 'MATCH p=(a:Plant)-->(t) WHERE $x RETURN p', { x: 3 }), /expected a boolean/);
      await refused(
        run(alice, 'MATCH p=(a:Plant)-->(t) RETURN p LIMIT $n', { n: -1 }),
        /LIMIT must be a non-negative integer/,
      );
      await refused(
        run(alice, 'MATCH p=(a:Plant)-->(t) WHERE a.id = $r.id RETURN p', { r: [1] }),
        /cannot read property 'id' of a list/,
      );
      await refused(run(alice, 'MATCH (a:Plant)-->(t) DETACH DELETE a'), /DETACH is not supported/);
    });
  });

  describe('UNWIND, ORDER BY, SKIP, LIMIT, DISTINCT', () => {
    const reference =
      'UNWIND $stepResults[0].elements AS element MATCH path=((plant:Plant)-[:IS_MEMBER_OF*..]->(:Taxon)) WHERE plant.id = element.id RETURN path';
    const lilyPaths = () => [
      path(lily, lilyIn, liliales),
      path(lily, lilyIn, liliales, lilialesIn, monocots),
      path(lily, lilyIn, liliales, lilialesIn, monocots, monocotsIn, angiosperms),
    ];
    const rosePaths = () => [path(rose, roseIn, rosales), path(rose, roseIn, rosales, rosalesIn, angiosperms)];

    it('runs the reference UNWIND example, in the order of the list', async () => {
      const hits = (ids: string[]) => ({
        stepResults: [
          {
            elements: ids.map((id) => ({ id, type: 'Plant', metadata: { score: 1 } })),
            totalHits: ids.length,
            maxScore: 1,
          },
        ],
      });
      expect(await run(alice, reference, hits([lily]))).toEqual(lilyPaths());
      expect(await run(alice, reference, hits([rose, lily]))).toEqual([...rosePaths(), ...lilyPaths()]);
      expect(await run(alice, reference, hits([lily, rose]))).toEqual([...lilyPaths(), ...rosePaths()]);
      expect(await run(alice, reference, hits([]))).toEqual([]);
      expect(await run(alice, reference, hits([rose.toUpperCase()]))).toEqual(rosePaths());
      // the same comparison outside the start of the walk, and its negation
      expect(
        await run(alice, 'UNWIND $ids AS id MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t) WHERE t.id = id RETURN p', {
          ids: [rosales.toUpperCase(), 'junk'],
        }),
      ).toEqual([path(rose, roseIn, rosales)]);
      expect(
        await run(alice, 'UNWIND $ids AS id MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t) WHERE NOT t.id = id RETURN p', {
          ids: ['junk'],
        }),
      ).toHaveLength(2);
      expect(
        await run(alice, reference, { stepResults: [{ elements: [{ id: 'junk' }, { nope: 1 }, null, 5] }] }),
      ).toEqual([]);
      await refused(run(alice, reference, {}), /parameter \$stepResults is missing/);
      // the UNWIND variable as a string, in a property map, and filtering the UNWIND rows on their own
      expect(
        await run(alice, 'UNWIND $ids AS id MATCH p=(a {id: id})-[:IS_MEMBER_OF]->(t) RETURN p', { ids: [rose, lily] }),
      ).toEqual([path(rose, roseIn, rosales), path(lily, lilyIn, liliales)]);
      expect(
        await run(
          alice,
          'UNWIND $rows AS row MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t) WHERE row.keep AND a.name = row.name RETURN p',
          {
            rows: [
              { name: 'Rose', keep: false },
              { name: 'Lily', keep: true },
            ],
          },
        ),
      ).toEqual([path(lily, lilyIn, liliales)]);
      // UNWIND null: no rows; a single value: one row
      expect(
        await run(alice, 'UNWIND $x AS id MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t) WHERE a.id = id RETURN p', {
          x: null,
        }),
      ).toEqual([]);
      expect(
        await run(alice, 'UNWIND $x AS id MATCH p=(a:Plant)-[:IS_MEMBER_OF]->(t) WHERE a.id = id RETURN p', {
          x: rose,
        }),
      ).toEqual([path(rose, roseIn, rosales)]);
    });

    it('orders, skips and limits', async () => {
      const all = [...lilyPaths(), ...rosePaths()];
      const query = (tail: string) =>
        run(alice, `MATCH p=(a:Plant)-[:IS_MEMBER_OF*]->(t:Taxon) RETURN p ${tail}`, { two: 2 });
      expect(await query('')).toEqual(inDefaultOrder(all));
      expect(await query('ORDER BY a.name DESC')).toEqual([...rosePaths(), ...lilyPaths()]);
      expect(await query('ORDER BY t.name, a.name')).toEqual([all[2], all[4], all[0], all[1], all[3]]); // Angiosperms (Lily, Rose), Liliales, Monocots, Rosales
      expect(await query('ORDER BY a.name DESC SKIP 1 LIMIT $two')).toEqual([rosePaths()[1], lilyPaths()[0]]);
      expect(await query('ORDER BY a.name SKIP 4')).toEqual([rosePaths()[1]]);
      expect(await query('SKIP 5')).toEqual([]);
      expect(await query('LIMIT 0')).toEqual([]);
      expect(await query('ORDER BY t.missing, a.count DESC LIMIT 1')).toEqual([lilyPaths()[0]]);
    });

    it('returns duplicates from several UNWIND rows, and one of each with DISTINCT', async () => {
      const query = (distinct: string) =>
        `UNWIND [1, 2, 3] AS x MATCH p=(a:Plant {name: 'Lily'})-[:IS_MEMBER_OF]->(b) RETURN ${distinct} p`;
      expect(await run(alice, query(''))).toEqual([
        path(lily, lilyIn, liliales),
        path(lily, lilyIn, liliales),
        path(lily, lilyIn, liliales),
      ]);
      expect(await run(alice, query('DISTINCT'))).toEqual([path(lily, lilyIn, liliales)]);
      expect(
        await run(
          alice,
          `UNWIND [$a, $b, $a] AS id MATCH p=(n:Plant {id: id})-[:IS_MEMBER_OF]->(t) RETURN DISTINCT p`,
          { a: rose, b: lily },
        ),
      ).toEqual([path(rose, roseIn, rosales), path(lily, lilyIn, liliales)]);
    });
  });

  describe('walks', () => {
    it('uses each relation at most once on a cycle (nodes may repeat)', async () => {
      expect(await run(alice, "MATCH p=(a:Cycle {name: 'c1'})-[:NEXT*]->(b) RETURN p")).toEqual([
        path(c1, n12, c2),
        path(c1, n12, c2, n23, c3),
        path(c1, n12, c2, n23, c3, n31, c1),
      ]);
      // undirected: three hops each way round, never a fourth
      const both = await run(alice, "MATCH p=(a:Cycle {name: 'c1'})-[:NEXT*]-(b) RETURN p");
      expect(both).toHaveLength(6);
      expect(both.map((x) => x.relationIds.length)).toEqual([1, 1, 2, 2, 3, 3]);
      for (const x of both) expect(new Set(x.relationIds).size).toBe(x.relationIds.length);
      expect(both.filter((x) => x.relationIds.length === 3).map((x) => x.nodeIds.at(-1))).toEqual([c1, c1]);
    });

    it('starts from the relations of the first type when nothing binds either end', async () => {
      expect(await run(alice, 'MATCH p=(a)-[:NEXT]->(b) RETURN p')).toEqual(
        inDefaultOrder([path(c1, n12, c2), path(c2, n23, c3), path(c3, n31, c1)]),
      );
      expect(await run(alice, 'MATCH p=(a)<-[:NEXT]-(b) RETURN p')).toEqual(
        inDefaultOrder([path(c2, n12, c1), path(c3, n23, c2), path(c1, n31, c3)]),
      );
      expect(await run(alice, 'MATCH p=(a)-[:NEXT]-(b) RETURN p')).toHaveLength(6);
    });

    it('finds a self-loop once, in either direction', async () => {
      expect(await run(alice, 'MATCH p=(a:Loop)-[:SELF]->(b) RETURN p')).toEqual([path(loop, self, loop)]);
      expect(await run(alice, 'MATCH p=(a:Loop)-[:SELF]-(b) RETURN p')).toEqual([path(loop, self, loop)]);
      expect(await run(alice, 'MATCH p=(a:Loop)-[:SELF*]-(b) RETURN p')).toEqual([path(loop, self, loop)]);
    });

    it(`stops unbounded lengths at ${MAX_HOPS} relations`, async () => {
      const paths = await run(alice, 'MATCH p=(a:Link)-[:LINK*]->(b) WHERE a.id = $head RETURN p', { head: chain[0] });
      expect(paths).toHaveLength(MAX_HOPS);
      expect(paths.at(-1)).toEqual({ nodeIds: chain.slice(0, MAX_HOPS + 1), relationIds: links.slice(0, MAX_HOPS) });
      expect(
        await run(alice, `MATCH p=(a:Link)-[:LINK*${MAX_HOPS}]->(b) WHERE a.id = $head RETURN p`, { head: chain[0] }),
      ).toHaveLength(1);
      // from the other end, backwards, the same cap
      expect(
        await run(alice, 'MATCH p=(a:Link)-[:LINK*..]->(b) WHERE b.id = $tail RETURN p', { tail: chain.at(-1) }),
      ).toHaveLength(MAX_HOPS);
      await refused(
        run(alice, `MATCH p=(a:Link)-[:LINK*1..${MAX_HOPS + 1}]->(b) RETURN p`),
        new RegExp(`above ${MAX_HOPS}`),
      );
    });

    it('answers hostile but valid expressions: comparisons with null, long lists and maps, long XOR chains', async () => {
      const lilyOnly = [path(lily)];
      // null: no comparison holds (a bound value left unused was a 500: "could not determine data type").
      for (const q of [
        'MATCH p=(a:Plant) WHERE a.name = null RETURN p',
        'MATCH p=(a:Plant {name: null}) RETURN p',
        'MATCH p=(a:Plant) WHERE a.name < $p RETURN p',
        'MATCH p=(a:Plant {name: $p}) RETURN p',
        'MATCH p=(a:Plant) WHERE a.name IN null RETURN p',
        'MATCH p=(a:Plant)-[r:IS_MEMBER_OF {since: null}]->(t) RETURN p',
      ])
        expect(await run(alice, q, { p: null }), q).toEqual([]);
      // Lists and maps of more than 100 computed items (PostgreSQL's limit of function arguments).
      const names = Array.from({ length: 250 }, () => 'a.name').join(', ');
      expect(await run(alice, `MATCH p=(a:Plant) WHERE 'Lily' IN [${names}] RETURN p`)).toEqual(lilyOnly);
      const entries = Array.from({ length: 120 }, (_, i) => `k${i}: a.name`).join(', ');
      const expected = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`k${i}`, 'Lily']));
      expect(await run(alice, `MATCH p=(a:Plant) WHERE {${entries}} = $m RETURN p`, { m: expected })).toEqual(lilyOnly);
      // 600 XORs: a chain as deep as it was long broke PGlite's stack; balanced, it is 10 levels.
      const xor = Array.from({ length: 601 }, () => "a.name = 'Lily'").join(' XOR ');
      expect(await run(alice, `MATCH p=(a:Plant) WHERE ${xor} RETURN p`)).toEqual(lilyOnly);
      // U+0000 and unpaired surrogates are no stored text: 400, not a failed statement.
      await refused(run(alice, "MATCH p=(a:Plant) WHERE a.name = '\\u0000' RETURN p"), /U\+0000/);
      await refused(run(alice, 'MATCH p=(a:Plant) WHERE a.name = $p RETURN p', { p: 'x\ud800' }), /unpaired surrogate/);
      expect(await run(alice, "MATCH p=(a:Plant {name: 'Lily'}) RETURN p")).toEqual(lilyOnly); // the session is sound
    });

    it(`refuses queries over the caps with 400 (at most ${MAX_PATHS} matches returned, a bounded exploration)`, async () => {
      const all = 'MATCH p=(a:Cycle)-[:NEXT*]->(b) RETURN p';
      expect(await run(alice, all, {}, { maxPaths: 9, maxExplored: 100 })).toHaveLength(9);
      await refused(
        run(alice, all, {}, { maxPaths: 8, maxExplored: 100 }),
        /matches more than 8 paths, the limit without LIMIT\. Add a LIMIT/,
      );
      // With a LIMIT every match is still found and ordered, but only the page comes back: up to maxExplored matches.
      const ordered = await run(alice, all, {}, { maxPaths: 100, maxExplored: 100 });
      expect(await run(alice, `${all} LIMIT 2`, {}, { maxPaths: 8, maxExplored: 100 })).toEqual(ordered.slice(0, 2));
      expect(await run(alice, `${all} SKIP 7 LIMIT 5`, {}, { maxPaths: 1, maxExplored: 100 })).toEqual(
        ordered.slice(7),
      );
      await refused(
        run(alice, `${all} LIMIT 1`, {}, { maxPaths: 4, maxExplored: 8 }),
        /explores more than 8 partial paths/,
      );
      await refused(
        run(alice, `${all} LIMIT 1`, {}, { maxPaths: 100, maxExplored: 10 }),
        /explores more than 10 partial paths/,
      );
      // the real caps: 3 paths x 3,334 UNWIND rows
      const many = Array.from({ length: Math.ceil((MAX_PATHS + 1) / 3) }, (_, i) => i);
      const unwound = 'UNWIND $many AS x MATCH p=(a:Cycle)-[:NEXT]->(b) RETURN p';
      await refused(
        run(alice, unwound, { many }),
        new RegExp(`matches more than ${MAX_PATHS} paths, the limit without LIMIT`),
      );
      expect(await run(alice, `${unwound} LIMIT 1`, { many })).toHaveLength(1);
      expect(
        await run(alice, 'UNWIND $many AS x MATCH p=(a:Cycle)-[:NEXT]->(b) RETURN DISTINCT p LIMIT 5', {
          many: many.slice(0, 3000),
        }),
      ).toHaveLength(3);
    });
  });

  describe('access', () => {
    it('drops a path with any element the caller cannot read, and returns it to its owner', async () => {
      const query = 'MATCH p=(a:Plant)-[:IS_MEMBER_OF*]->(t:Taxon) WHERE a.id = $lily RETURN p';
      const all = lilyPaths();
      expect(await run(alice, query, { lily })).toEqual(all);
      expect(await run(bob, query, { lily })).toEqual([]);
      // bob may read lily, liliales and angiosperms, not monocots: only the path that avoids monocots is his
      for (const id of [lily, liliales, angiosperms]) await relate(h(), alice.token, 'HAS_READ_ACCESS', bob.id, id);
      expect(await run(bob, query, { lily })).toEqual([all[0]]);
      expect(await run(bob, "MATCH p=(a:Plant)-[:IS_MEMBER_OF*]->(t:Taxon {name: 'Angiosperms'}) RETURN p")).toEqual(
        [],
      );
      expect(await run(alice, "MATCH p=(a:Plant)-[:IS_MEMBER_OF*]->(t:Taxon {name: 'Angiosperms'}) RETURN p")).toEqual(
        inDefaultOrder([all[2], rosePathsToAngiosperms()]),
      );
      // an unreadable start is no start, even when bound by id
      expect(await run(bob, 'MATCH p=(a)-[:IS_MEMBER_OF]->(t) WHERE a.id = $id RETURN p', { id: rose })).toEqual([]);
      expect(await run(bob, 'MATCH p=(a) WHERE a.id IN $ids RETURN p', { ids: [rose, lily] })).toEqual([path(lily)]);
    });

    function lilyPaths() {
      return [
        path(lily, lilyIn, liliales),
        path(lily, lilyIn, liliales, lilialesIn, monocots),
        path(lily, lilyIn, liliales, lilialesIn, monocots, monocotsIn, angiosperms),
      ];
    }
    function rosePathsToAngiosperms() {
      return path(rose, roseIn, rosales, rosalesIn, angiosperms);
    }
  });
});
