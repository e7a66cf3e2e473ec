// The Cypher subset's parser: accepted shapes and their AST, and every refusal as a 400 `bad-content` that names
// the problem and its offset. Pure: no database.
import { describe, expect, it } from 'vitest';
import { Problem } from '../../src/errors.js';
import { type Expr, MAX_HOPS } from '../../src/search/language/cypher-ast.js';
import { MAX_QUERY_LENGTH, parseCypher } from '../../src/search/language/cypher-parse.js';
import { tokenize } from '../../src/search/language/cypher-tokens.js';

/** The refusal of `query`: a bad-content Problem whose detail carries an offset; returns the detail. */
function refusal(query: string): string {
  try {
    parseCypher(query);
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    const problem = error as Problem;
    expect(problem.slug).toBe('bad-content');
    expect(problem.status).toBe(400);
    expect(problem.detail).toMatch(/^Invalid Cypher query at offset \d+: /);
    return problem.detail;
  }
  throw new Error(`accepted: ${query}`);
}

const offsetOf = (detail: string) => Number(/offset (\d+)/.exec(detail)![1]);

describe('cypher parser: accepted shapes', () => {
  it('parses the reference UNWIND example', () => {
    const q = parseCypher(
      'UNWIND $stepResults[0].elements AS element MATCH path=((plant:Plant)-[:IS_MEMBER_OF*..]->(:Taxon)) WHERE plant.id = element.id RETURN path',
    );
    expect(q.unwind).toMatchObject({
      variable: 'element',
      expr: {
        kind: 'property',
        key: 'elements',
        object: {
          kind: 'index',
          object: { kind: 'parameter', name: 'stepResults' },
          index: { kind: 'literal', value: 0 },
        },
      },
    });
    expect(q.patterns).toHaveLength(1);
    expect(q.patterns[0]).toMatchObject({
      pathVariable: 'path',
      nodes: [
        { variable: 'plant', labels: ['Plant'], properties: [] },
        { variable: null, labels: ['Taxon'], properties: [] },
      ],
      relations: [{ variable: null, types: ['IS_MEMBER_OF'], direction: 'out', length: { min: 1, max: null } }],
    });
    expect(q.where).toMatchObject({
      kind: 'comparison',
      op: '=',
      left: { kind: 'property', key: 'id', object: { kind: 'variable', name: 'plant' } },
      right: { kind: 'property', key: 'id', object: { kind: 'variable', name: 'element' } },
    });
    expect(q).toMatchObject({ returns: 'path', distinct: false, orderBy: [], skip: null, limit: null });
    expect(Object.fromEntries(q.variables)).toEqual({ element: 'unwind', plant: 'node', path: 'path' });
  });

  it('parses the reference IN $param example with LIMIT', () => {
    const q = parseCypher(
      'MATCH path=((:Plant)-[:IS_MEMBER_OF*..]->(t:Taxon)) WHERE t.name IN $taxonNames RETURN path LIMIT 5',
    );
    expect(q.where).toMatchObject({
      kind: 'in',
      left: { kind: 'property', key: 'name' },
      right: { kind: 'parameter', name: 'taxonNames' },
    });
    expect(q.limit).toMatchObject({ kind: 'literal', value: 5 });
  });

  it.each([
    ['', null],
    ['*', { min: 1, max: null }],
    ['*..', { min: 1, max: null }],
    ['*..3', { min: 1, max: 3 }],
    ['*2..', { min: 2, max: null }],
    ['*1..3', { min: 1, max: 3 }],
    ['*2', { min: 2, max: 2 }],
    ['*0..2', { min: 0, max: 2 }],
    [' * 1 .. 3 ', { min: 1, max: 3 }],
    [`*${MAX_HOPS}`, { min: MAX_HOPS, max: MAX_HOPS }],
  ])('relation length [:R%s]', (length, expected) => {
    const q = parseCypher(`MATCH p = (a)-[:R${length}]->(b) RETURN p`);
    expect(q.patterns[0]!.relations[0]!.length).toEqual(expected);
  });

  it.each([
    ['(a)-->(b)', 'out'],
    ['(a)<--(b)', 'in'],
    ['(a)--(b)', 'both'],
    ['(a)-[r]->(b)', 'out'],
    ['(a)<-[r]-(b)', 'in'],
    ['(a)-[r]-(b)', 'both'],
    ['(a)<-->(b)', 'both'],
    ['(a) - [ r : T ] -> (b)', 'out'],
  ])('direction of %s', (pattern, direction) => {
    expect(parseCypher(`MATCH p=${pattern} RETURN p`).patterns[0]!.relations[0]!.direction).toBe(direction);
  });

  it('parses types and labels with alternatives, property maps, longer chains and several patterns', () => {
    const q = parseCypher(
      "MATCH p = (a:Plant|Tree {name: 'Lily', count: 3})-[r:IS_MEMBER_OF|:RELATED_TO {weight: $w}]->(b)<-[:X*1..2]-(c:Taxon), (c)-[:Y]->(d) RETURN p",
    );
    const [first, second] = q.patterns;
    expect(first).toMatchObject({
      nodes: [
        {
          variable: 'a',
          labels: ['Plant', 'Tree'],
          properties: [
            { key: 'name', value: { kind: 'literal', value: 'Lily' } },
            { key: 'count', value: { kind: 'literal', value: 3 } },
          ],
        },
        { variable: 'b', labels: [] },
        { variable: 'c', labels: ['Taxon'] },
      ],
      relations: [
        {
          variable: 'r',
          types: ['IS_MEMBER_OF', 'RELATED_TO'],
          direction: 'out',
          length: null,
          properties: [{ key: 'weight', value: { kind: 'parameter', name: 'w' } }],
        },
        { variable: null, types: ['X'], direction: 'in', length: { min: 1, max: 2 } },
      ],
    });
    expect(second).toMatchObject({
      pathVariable: null,
      nodes: [{ variable: 'c' }, { variable: 'd' }],
      relations: [{ types: ['Y'] }],
    });
    expect(Object.fromEntries(q.variables)).toEqual({
      a: 'node',
      b: 'node',
      c: 'node',
      d: 'node',
      r: 'relation',
      p: 'path',
    });
  });

  it('binds a variable-length relation variable as a list, and accepts a single-node path', () => {
    expect(parseCypher('MATCH p=(a)-[r:R*]->(b) RETURN p').variables.get('r')).toBe('relations');
    expect(parseCypher('MATCH p=(a:Plant) RETURN p').patterns[0]).toMatchObject({
      nodes: [{ variable: 'a' }],
      relations: [],
    });
    expect(parseCypher('MATCH p=((((a)))) RETURN p').patterns[0]!.nodes).toHaveLength(1);
  });

  it('reads keywords in any case, DISTINCT, ORDER BY, SKIP, LIMIT, a trailing semicolon and comments', () => {
    const q = parseCypher(`match p = (a)-[:R]->(b) // a comment
      where a.x = 1 /* another */ return DISTINCT p Order By a.name DESC, b.rank asc, b.n SkIp $skip LiMiT 2;`);
    expect(q).toMatchObject({
      distinct: true,
      returns: 'p',
      orderBy: [
        { expr: { kind: 'property', key: 'name' }, descending: true },
        { expr: { kind: 'property', key: 'rank' }, descending: false },
        { expr: { kind: 'property', key: 'n' }, descending: false },
      ],
      skip: { kind: 'parameter', name: 'skip' },
      limit: { kind: 'literal', value: 2 },
    });
  });

  it('gives WHERE the precedence OR < XOR < AND < NOT < comparison < predicates', () => {
    const q = parseCypher('MATCH p=(a)-->(b) WHERE a.x = 1 OR a.y = 2 XOR NOT a.z AND b.w IS NOT NULL RETURN p');
    expect(q.where).toMatchObject({
      kind: 'logical',
      op: 'OR',
      left: { kind: 'comparison', op: '=' },
      right: {
        kind: 'logical',
        op: 'XOR',
        left: { kind: 'comparison' },
        right: {
          kind: 'logical',
          op: 'AND',
          left: { kind: 'not', operand: { kind: 'property', key: 'z' } },
          right: { kind: 'is-null', negated: true },
        },
      },
    });
  });

  it('parses every comparison and predicate', () => {
    const where = (condition: string): Expr => parseCypher(`MATCH p=(a)-->(b) WHERE ${condition} RETURN p`).where!;
    for (const op of ['=', '<>', '<', '<=', '>', '>='])
      expect(where(`a.n ${op} 3`)).toMatchObject({ kind: 'comparison', op });
    expect(where('a.n != 3')).toMatchObject({ kind: 'comparison', op: '<>' });
    expect(where("a.name STARTS WITH 'Li'")).toMatchObject({ kind: 'string-match', op: 'STARTS WITH' });
    expect(where("a.name ends with 'ly'")).toMatchObject({ kind: 'string-match', op: 'ENDS WITH' });
    expect(where("a.name CONTAINS 'il'")).toMatchObject({ kind: 'string-match', op: 'CONTAINS' });
    expect(where('a.name IS NULL')).toMatchObject({ kind: 'is-null', negated: false });
    expect(where('a.n IN [1, 2.5, -3, "x", true, null, [1]]')).toMatchObject({
      kind: 'in',
      right: {
        kind: 'list',
        items: [
          { value: 1 },
          { value: 2.5 },
          { value: -3 },
          { value: 'x' },
          { value: true },
          { value: null },
          { kind: 'list', items: [{ value: 1 }] },
        ],
      },
    });
    expect(where('a:Plant|Tree')).toMatchObject({ kind: 'has-label', variable: 'a', labels: ['Plant', 'Tree'] });
    expect(where('a = b')).toMatchObject({
      kind: 'comparison',
      left: { kind: 'variable', name: 'a' },
      right: { kind: 'variable', name: 'b' },
    });
    expect(where('a.x<-1')).toMatchObject({ kind: 'comparison', op: '<', right: { kind: 'literal', value: -1 } });
    expect(where('$p.list[-1]["k"] = a.`odd key`')).toMatchObject({
      left: {
        kind: 'index',
        index: { value: 'k' },
        object: { kind: 'index', index: { value: -1 }, object: { kind: 'property', key: 'list' } },
      },
      right: { kind: 'property', key: 'odd key' },
    });
  });

  it('reads string escapes, backtick names and numbers', () => {
    const q = parseCypher(
      'MATCH `my path` = (`a b`:`Odd Label`)-->(c) WHERE `a b`.x = \'it\\\'s \\u00e9\\n\' AND c.y = "q\\"" AND c.z = 1.5e2 RETURN `my path`',
    );
    expect(q.returns).toBe('my path');
    expect(q.patterns[0]!.nodes[0]).toMatchObject({ variable: 'a b', labels: ['Odd Label'] });
    const conditions = q.where as Extract<Expr, { kind: 'logical' }>;
    expect(conditions.left).toMatchObject({
      left: { right: { value: "it's é\n" } },
      right: { right: { value: 'q"' } },
    });
    expect(conditions.right).toMatchObject({ right: { value: 150 } });
  });

  it('tokenizes 1..3 as a range, not as numbers with fractions', () => {
    expect(tokenize('*1..3').map((t) => ('text' in t ? t.text : t.type))).toEqual(['*', '1', '..', '3', 'eof']);
  });

  it('accepts the UNWIND variable in property maps, and literal lists and maps', () => {
    const q = parseCypher(
      "UNWIND [{id: 1, tags: ['a']}] AS e MATCH p=(a {id: e.id})-->(b) WHERE b.x IN e.tags RETURN p",
    );
    expect(q.unwind!.expr).toMatchObject({
      kind: 'list',
      items: [
        {
          kind: 'map',
          entries: [
            { key: 'id', value: { value: 1 } },
            { key: 'tags', value: { kind: 'list' } },
          ],
        },
      ],
    });
    expect(q.patterns[0]!.nodes[0]!.properties[0]!.value).toMatchObject({ kind: 'property', key: 'id' });
  });

  it('keeps clause keywords out of expressions unless quoted', () => {
    expect(refusal('MATCH p=(n)-->(m) WHERE n.x = limit RETURN p')).toMatch(/expected an expression but found 'limit'/);
    expect(parseCypher('MATCH p=(`limit`)-->(m) WHERE `limit`.x = 1 RETURN p').variables.get('limit')).toBe('node');
    // property keys may be keywords
    expect(parseCypher('MATCH p=(n)-->(m) WHERE n.order = 1 AND n.limit = 2 RETURN p').where).toMatchObject({
      left: { left: { key: 'order' } },
    });
  });
});

describe('cypher parser: refusals (400 bad-content with an offset)', () => {
  it.each([
    ['CREATE (n:Plant) RETURN n', /CREATE is not supported/, 0],
    ['MATCH (n) DETACH DELETE n', /DETACH is not supported/, 10],
    ['MATCH p=(n) DELETE n', /DELETE is not supported/, 12],
    ['MATCH p=(n) SET n.x = 1 RETURN p', /SET is not supported/, 12],
    ['MATCH p=(n) REMOVE n.x RETURN p', /REMOVE is not supported/, 12],
    ['MERGE (n:Plant) RETURN n', /MERGE is not supported/, 0],
    ['MATCH p=(n) FOREACH (x IN [1] | SET n.x = x) RETURN p', /FOREACH is not supported/, 12],
    ['CALL db.labels()', /CALL/, 0],
    ['MATCH p=(n) CALL { RETURN 1 } RETURN p', /CALL/, 12],
    ['OPTIONAL MATCH p=(n) RETURN p', /OPTIONAL MATCH is not supported/, 0],
    ['MATCH p=(n) OPTIONAL MATCH q=(m) RETURN p', /OPTIONAL MATCH is not supported/, 12],
    ['MATCH p=(n) WITH p RETURN p', /WITH is not supported/, 12],
    ['MATCH p=(n) MATCH q=(m) RETURN p', /only one MATCH clause/, 12],
    ['UNWIND [1] AS x UNWIND [2] AS y MATCH p=(n) RETURN p', /only one UNWIND/, 16],
    ['MATCH p=(n) RETURN p UNION MATCH p=(n) RETURN p', /expected the end of the query but found 'UNION'/, 21],
    ['RETURN 1', /expected MATCH or UNWIND but found 'RETURN'/, 0],
    ['', /expected MATCH or UNWIND but found the end of the query/, 0],
  ])('refuses clauses outside the subset: %s', (query, message, offset) => {
    const detail = refusal(query);
    expect(detail).toMatch(message);
    expect(offsetOf(detail)).toBe(offset);
  });

  it.each([
    ['MATCH p=(n)-->(m) RETURN length(p)', /functions are not supported \(length/],
    ['MATCH p=(n)-->(m) WHERE size(n.x) > 1 RETURN p', /functions are not supported \(size/],
    ['MATCH p=(n)-->(m) WHERE exists(n.x) RETURN p', /functions are not supported/],
    ['MATCH p=(n)-->(m) WHERE EXISTS { MATCH (n)-->() } RETURN p', /subqueries \(EXISTS \{ … \}\) are not supported/],
    ['MATCH p=(n)-->(m) WHERE COUNT { (n)-->() } > 1 RETURN p', /subqueries/],
    ['MATCH p = shortestPath((a)-[*]-(b)) RETURN p', /shortestPath/],
    ['MATCH p=(n)-->(m) RETURN p, n', /several RETURN items are not supported/],
    ['MATCH p=(n)-->(m) RETURN *', /RETURN \* is not supported/],
    ['MATCH p=(n)-->(m) RETURN n', /RETURN must name a path variable.*'n' is a node/],
    ['MATCH p=(n)-[r]->(m) RETURN r', /'r' is a relation/],
    ['MATCH (n)-->(m) RETURN q', /RETURN names 'q', which MATCH does not bind/],
    ['MATCH p=(n)-->(m) RETURN n.name', /RETURN must name a path variable/],
    ['MATCH p=(n)-->(m) WHERE n.x + 1 > 2 RETURN p', /arithmetic \('\+'\) is not supported/],
    ['MATCH p=(n)-->(m) WHERE n.x > -n.y RETURN p', /arithmetic is not supported/],
    ["MATCH p=(n)-->(m) WHERE n.name =~ 'L.*' RETURN p", /regular expressions/],
    ['MATCH p=(n)-->(m) WHERE n.x IN [x IN $l | x] RETURN p', /list comprehensions are not supported/],
    ['MATCH p=(n)-->(m) WHERE (n)-->(m) RETURN p', /pattern expressions in WHERE are not supported/],
    ['MATCH p=(n)-->(m) WHERE CASE WHEN true THEN true END RETURN p', /CASE expressions are not supported/],
    ['MATCH p=(n)-->(m) WHERE n.x < 1 < 2 RETURN p', /chained comparisons/],
    ['MATCH p=(n)-->(m) WHERE n.list[1..2] = 1 RETURN p', /list slices/],
    ['MATCH p=((n)-->(m)){1,3} RETURN p', /quantified path patterns/],
    ['MATCH p=(n WHERE n.x = 1)-->(m) RETURN p', /WHERE inside a node pattern/],
  ])('refuses expressions and return items outside the subset: %s', (query, message) => {
    expect(refusal(query)).toMatch(message);
  });

  it.each([
    ['MATCH p=(n)-[:R*3..1]->(m) RETURN p', /upper bound below its lower bound/],
    [`MATCH p=(n)-[:R*1..${MAX_HOPS + 1}]->(m) RETURN p`, new RegExp(`above ${MAX_HOPS}`)],
    [`MATCH p=(n)-[:R*${MAX_HOPS + 8}]->(m) RETURN p`, new RegExp(`above ${MAX_HOPS}`)],
    ['MATCH p=(n)-[:R*20..]->(m)-[:R*20..]->(o) RETURN p', new RegExp(`more than ${MAX_HOPS} relations`)],
    ['MATCH p=(n)-[:R*1.5]->(m) RETURN p', /non-negative integer/],
    ['MATCH p=(n:A:B)-->(m) RETURN p', /exactly one type/],
    ['MATCH p=(n)-[:A:B]->(m) RETURN p', /exactly one type/],
    ['MATCH p=(n)-->(m) WHERE n:A:B RETURN p', /exactly one type/],
    ['MATCH p=(n)-[n]->(m) RETURN p', /'n' is already bound as a node/],
    ['MATCH p=(n)-[r]->(m)-[r]->(o) RETURN p', /'r' is bound twice/],
    ['MATCH p=(n)-->(m), p=(m)-->(o) RETURN p', /'p' is bound twice/],
    ['MATCH p=(p)-->(m) RETURN p', /already bound as a node/],
    ['UNWIND [1] AS n MATCH p=(n)-->(m) RETURN p', /'n' is already bound as a unwind/],
    ['MATCH p=(n)-->(m) WHERE x.name = 1 RETURN p', /variable 'x' is not defined/],
    ['MATCH p=(n)-->(m) WHERE p IS NULL RETURN p', /path variable 'p' can only be returned/],
    ['MATCH p=(n)-[r*]->(m) WHERE r.weight = 1 RETURN p', /'r' is a variable-length relation/],
    ['MATCH p=(n)-->(m) RETURN p ORDER BY q.x', /variable 'q' is not defined/],
    ['MATCH p=(n)-->(m) WHERE n[0] = 1 RETURN p', /'n' cannot be indexed/],
    ['MATCH p=(n {name: m.name})-->(m) RETURN p', /the value of property 'name' must be a literal or a parameter/],
    ['UNWIND n.list AS x MATCH p=(n)-->(m) RETURN p', /the UNWIND list must be a literal or a parameter/],
    ['MATCH p=(n)-->(m) RETURN p LIMIT n.x', /LIMIT must be a literal or a parameter/],
    ['MATCH p=(n)-->(m) RETURN p SKIP 1 + 1', /arithmetic/],
  ])('refuses what the subset cannot honour: %s', (query, message) => {
    expect(refusal(query)).toMatch(message);
  });

  it.each([
    ["MATCH p=(n)-->(m) WHERE n.name = 'open RETURN p", /unterminated string literal/, 33],
    ['MATCH p=(n)-->(m) WHERE n.name = `x RETURN p', /unterminated `quoted name`/, 33],
    ['MATCH p=(n)-->(m) /* RETURN p', /unterminated comment/, 18],
    ['MATCH p=(n)-->(m) WHERE n.x = 1 # RETURN p', /unexpected character '#'/, 32],
    ["MATCH p=(n)-->(m) WHERE n.x = '\\q' RETURN p", /unknown escape sequence/, 31],
    ['MATCH p=(n)-->(m) WHERE n.x = 12abc RETURN p', /malformed number/, 30],
    ['MATCH p=(n)-->(m) WHERE n.x = $ RETURN p', /'\$' must be followed by a parameter name/, 30],
    ['MATCH p=(n)-->(m RETURN p', /expected '\)' but found 'RETURN'/, 17],
    ['MATCH p=(n)->(m) RETURN p', /expected '-' but found '>'/, 12],
    ['MATCH p=(n)-[:R->(m) RETURN p', /expected '\]' but found '-'/, 15],
    ['MATCH p=(n)-->(m) WHERE RETURN p', /expected an expression but found 'RETURN'/, 24],
    ['MATCH p=(n)-->(m) WHERE n.x IS 1 RETURN p', /expected NULL or NOT NULL/, 31],
    ['MATCH p=(n)-->(m) RETURN p ORDER p', /expected BY/, 33],
    ['UNWIND [1] x MATCH p=(n) RETURN p', /expected AS/, 11],
  ])('refuses malformed queries with the offset of the problem: %s', (query, message, offset) => {
    const detail = refusal(query);
    expect(detail).toMatch(message);
    expect(offsetOf(detail)).toBe(offset);
  });

  it('refuses queries too long or nested too deeply for the parser (400, never a stack overflow)', () => {
    expect(refusal(`MATCH p=(a)-->(b) WHERE a.x = '${'x'.repeat(MAX_QUERY_LENGTH)}' RETURN p`)).toMatch(/longer than/);
    expect(refusal(`MATCH p=(a)-->(b) WHERE ${'('.repeat(1000)}a.x = 1${')'.repeat(1000)} RETURN p`)).toMatch(
      /nested more than 64 levels/,
    );
    expect(refusal(`MATCH p=(a)-->(b) WHERE ${'NOT '.repeat(1000)}a.x = 1 RETURN p`)).toMatch(
      /nested more than 64 levels/,
    );
    expect(refusal(`MATCH p=(a)-->(b) WHERE a.x IN ${'['.repeat(1000)}${']'.repeat(1000)} RETURN p`)).toMatch(
      /nested more than 64 levels/,
    );
    expect(refusal(`MATCH p=${'('.repeat(1000)}(a)${')'.repeat(1000)} RETURN p`)).toMatch(/nested more than 64 levels/);
    // long but flat is fine
    const many = Array.from({ length: 400 }, (_, i) => `a.x <> ${i}`).join(' AND ');
    expect(parseCypher(`MATCH p=(a)-->(b) WHERE ${many} RETURN p`).where).toMatchObject({ kind: 'logical', op: 'AND' });
  });
});
