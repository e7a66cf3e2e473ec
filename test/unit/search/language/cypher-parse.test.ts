// The Cypher subset's query and pattern parser (src/search/language/cypher-parse.ts): the parsed clauses, patterns and
// bound variables, and the 400s for what the subset leaves out, with their messages and offsets.
import { describe, expect, it } from 'vitest';
import { Problem } from '../../../../src/errors.js';
import { MAX_HOPS } from '../../../../src/search/language/cypher-ast.js';
import { MAX_QUERY_LENGTH, parseCypher } from '../../../../src/search/language/cypher-parse.js';

const refusal = (query: string): string => {
  try {
    parseCypher(query);
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    return (error as Problem).detail ?? '';
  }
  throw new Error(`parsed: ${query}`);
};

describe('Cypher query parser', () => {
  it('reads every clause of the subset and binds its variables', () => {
    const q = parseCypher(
      'UNWIND $ids AS i MATCH p = (a:Person)-[r:KNOWS*1..3]->(b), q = (b)<--(c) WHERE a.id = i RETURN DISTINCT p ORDER BY a.name DESC SKIP 1 LIMIT 2',
    );
    expect(q.unwind).toMatchObject({ variable: 'i', expr: { kind: 'parameter', name: 'ids' } });
    expect(q.patterns.map((p) => p.pathVariable)).toEqual(['p', 'q']);
    expect(q.patterns[0]!.nodes.map((n) => [n.variable, n.labels])).toEqual([
      ['a', ['Person']],
      ['b', []],
    ]);
    expect(q.patterns[0]!.relations[0]).toMatchObject({
      variable: 'r',
      types: ['KNOWS'],
      direction: 'out',
      length: { min: 1, max: 3 },
    });
    expect(q.patterns[1]!.relations[0]).toMatchObject({ variable: null, types: [], direction: 'in', length: null });
    expect([q.returns, q.distinct, q.orderBy.map((o) => o.descending)]).toEqual(['p', true, [true]]);
    expect([q.skip, q.limit]).toMatchObject([
      { kind: 'literal', value: 1 },
      { kind: 'literal', value: 2 },
    ]);
    expect(Object.fromEntries(q.variables)).toEqual({
      i: 'unwind',
      a: 'node',
      b: 'node',
      r: 'relations',
      p: 'path',
      c: 'node',
      q: 'path',
    });
  });

  it('reads keywords in any case, type alternatives and open-ended lengths', () => {
    expect(parseCypher('match p = (a) return p limit 1').limit).toMatchObject({ value: 1 });
    expect(parseCypher('MATCH p = (a)-[:A|B]-(b) RETURN p').patterns[0]!.relations[0]).toMatchObject({
      types: ['A', 'B'],
      direction: 'both',
    });
    expect(parseCypher('MATCH p = (a)-[*0..]->(b) RETURN p').patterns[0]!.relations[0]!.length).toEqual({
      min: 0,
      max: null,
    });
  });

  it('refuses what the subset leaves out, naming it and where', () => {
    expect(refusal('CREATE (a) RETURN a')).toBe(
      'Invalid Cypher query at offset 0: CREATE is not supported: only read-only path queries are',
    );
    expect(refusal('OPTIONAL MATCH p = (a) RETURN p')).toBe(
      'Invalid Cypher query at offset 0: OPTIONAL MATCH is not supported',
    );
    expect(refusal('MATCH (a) RETURN a')).toBe(
      "Invalid Cypher query at offset 17: RETURN must name a path variable (MATCH path = (…) … RETURN path); 'a' is a node",
    );
    expect(refusal('MATCH p = (a) RETURN p, p')).toBe(
      'Invalid Cypher query at offset 22: several RETURN items are not supported: return one path variable',
    );
    expect(refusal('MATCH p = (a)-[*..99]->(b) RETURN p')).toBe(
      `Invalid Cypher query at offset 13: a relation length above ${MAX_HOPS} is not supported (paths have at most ${MAX_HOPS} relations)`,
    );
  });

  it('refuses a query longer than MAX_QUERY_LENGTH before reading it', () => {
    const long = `MATCH p = (a) WHERE a.x = '${'x'.repeat(MAX_QUERY_LENGTH)}' RETURN p`;
    expect(refusal(long)).toBe(
      `Invalid Cypher query at offset ${MAX_QUERY_LENGTH}: the query is longer than ${MAX_QUERY_LENGTH} characters`,
    );
  });
});
