// The plan of a Cypher query (src/search/sql/cypher-plan.ts), from parsed queries: where WHERE's conditions are
// checked, where each walk starts (ids from WHERE or UNWIND, relation types, nothing) and which end it starts from.
import { describe, expect, it } from 'vitest';
import { MAX_HOPS } from '../../../../src/search/language/cypher-ast.js';
import { parseCypher } from '../../../../src/search/language/cypher-parse.js';
import { CypherPlan, variablesOf } from '../../../../src/search/sql/cypher-plan.js';

const A = '0b6a6a7e-1c1d-4f55-9c4e-3d1b2a3c4d5e';
const B = '7d0c9a52-8b1e-4c3f-a1d2-e3f4a5b6c7d8';

const planOf = (query: string, parameters: Record<string, unknown> = {}) => {
  const parsed = parseCypher(query);
  const plan = new CypherPlan(parsed, parameters);
  const walks = parsed.patterns.map((pattern, i) => plan.walk(pattern, i));
  return { parsed, plan, walks };
};

describe('Cypher plan', () => {
  it('files each condition under the one variable it reads, the others for complete matches', () => {
    const { plan } = planOf(
      "MATCH p = (a:Person {name: 'x'})-[r:KNOWS]->(b) WHERE a.age > 3 AND r.since = 1 AND a.name = b.name RETURN p",
    );
    const { node, relation, rest, unwind } = plan.conjuncts;
    expect([...node.keys()]).toEqual(['a']);
    expect(node.get('a')!.map((e) => e.kind)).toEqual(['comparison', 'comparison']);
    expect([...relation.keys()]).toEqual(['r']);
    expect(rest.map((e) => [...variablesOf(e)].sort())).toEqual([['a', 'b']]);
    expect(unwind).toEqual([]);
  });

  it('starts from ids bound in WHERE, in lower case, leaving out values that are no UUIDs', () => {
    const { plan, walks } = planOf('MATCH p = (a)-->(b) WHERE b.id IN $ids RETURN p', {
      ids: [A.toUpperCase(), 'nope', 7, B],
    });
    expect(walks[0]!.reversed).toBe(true);
    expect(walks[0]!.slots.map((s) => s.name)).toEqual(['b', 'a']);
    expect(walks[0]!.segments[1]!.direction).toBe('in');
    expect(plan.start(walks[0]!)).toEqual({ kind: 'ids', ids: [A, B] });
    const equal = planOf('MATCH p = (a) WHERE a.id = $id RETURN p', { id: 'not-a-uuid' });
    expect(equal.plan.start(equal.walks[0]!)).toEqual({ kind: 'ids', ids: [] });
  });

  it('starts from the UNWIND value when an id equals an expression of it', () => {
    const { plan, walks } = planOf('UNWIND $ids AS x MATCH p = (a)-[:R]->(b) WHERE b.id = x RETURN p', { ids: [A] });
    expect(plan.unwindVariable).toBe('x');
    expect(walks[0]!.reversed).toBe(true);
    expect(plan.start(walks[0]!)).toMatchObject({ kind: 'unwind', expr: { kind: 'variable', name: 'x' } });
  });

  it('starts from the ends of relations of the first type when nothing binds the first node', () => {
    const { plan, walks } = planOf('MATCH p = (a)-[:KNOWS|LIKES]-(b) RETURN p');
    expect(plan.start(walks[0]!)).toEqual({ kind: 'relations', types: ['KNOWS', 'LIKES'], direction: 'both' });
    const labelled = planOf('MATCH p = (a:Person)-[:KNOWS]->(b) RETURN p');
    expect(labelled.plan.start(labelled.walks[0]!)).toBeNull();
    expect(labelled.walks[0]!.reversed).toBe(false);
  });

  it('gives variable-length segments their bounds, at most MAX_HOPS without an upper one', () => {
    const { walks } = planOf('MATCH p = (a)-[*2..]->(b)-[:R*0..3]->(c)-[s]->(d) RETURN p');
    const [, first, second, third] = walks[0]!.segments;
    expect([first!.min, first!.max, first!.variable]).toEqual([2, MAX_HOPS, null]);
    expect([second!.min, second!.max, second!.types]).toEqual([0, 3, ['R']]);
    expect([third!.min, third!.max, third!.variable]).toEqual([1, 1, 's']);
    // Anonymous nodes and segments get names no variable can have.
    expect(first!.name.startsWith('\u0000')).toBe(true);
  });
});
