// The `{{ … }}` expression language of the search pipeline: pure unit tests of the tokenizer, parser and
// interpreter in src/search/language/expressions.ts (no database).
import { describe, expect, it } from 'vitest';
import { Problem } from '../../../../src/errors.js';
import { MAX_STEPS, MAX_VALUE_DEPTH } from '../../../../src/search/language/expression-interpreter.js';
import { MAX_NESTING, MAX_TREE_DEPTH } from '../../../../src/search/language/expression-syntax.js';
import {
  type ExpressionOptions,
  evaluateExpression,
  isExpression,
  resolveExpressions,
} from '../../../../src/search/language/expressions.js';

const on: ExpressionOptions = { enabled: true, maxLength: 10240 };

const elements = [
  { id: 'a', score: 0.5 },
  { id: 'b', score: 2 },
  { id: 'c', score: 3 },
  { id: 'd', score: 2 },
];
const scope = {
  elements,
  n: 7,
  s: 'text',
  flag: true,
  nothing: null,
  obj: { a: 1, nested: { b: [10, 20, 30] }, 'with space': 'yes' },
  list: [3, 1, 2],
  stepResults: [{ elements: [{ id: 'x', type: 'Data', metadata: { score: 1.5 } }], totalHits: 1, maxScore: 1.5 }],
};

const ev = (source: string, vars: Record<string, unknown> = scope) => evaluateExpression(source, vars, on);

/** The bad-content problem thrown by `fn` (failing the test if it throws anything else or nothing). */
function problemOf(fn: () => unknown): Problem {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    const problem = error as Problem;
    expect(problem.slug).toBe('bad-content');
    expect(problem.status).toBe(400);
    return problem;
  }
  throw new Error('expected a bad-content problem, but nothing was thrown');
}
const fails = (source: string, detail: RegExp, vars: Record<string, unknown> = scope) =>
  expect(problemOf(() => ev(source, vars)).detail).toMatch(detail);

describe('isExpression', () => {
  it('accepts a string that is wholly one {{ … }}, with whitespace inside the braces', () => {
    expect(isExpression('{{x}}')).toBe(true);
    expect(isExpression('{{  map(a, #)  }}')).toBe(true);
    expect(isExpression('{{ {a: {b: 1}} }}')).toBe(true); // inner map literals close braces too
    expect(isExpression('{{ "}}" + \'{{\' }}')).toBe(true); // braces in string literals don't count
    expect(isExpression('{{}}')).toBe(true); // an (empty, invalid) expression: reported, not silently kept
  });

  it('rejects anything else, including text around the braces and two expressions', () => {
    for (const s of [
      'x',
      '',
      '{x}',
      '{{x}',
      '{x}}',
      ' {{x}}',
      '{{x}} ',
      'a {{x}}',
      '{{a}} and {{b}}',
      '{{a}}{{b}}',
      '{{ x }}}',
    ])
      expect(isExpression(s), s).toBe(false);
  });
});

describe('literals', () => {
  it('reads numbers in every notation', () => {
    expect(ev('42')).toBe(42);
    expect(ev('0.5')).toBe(0.5);
    expect(ev('.5')).toBe(0.5);
    expect(ev('1e3')).toBe(1000);
    expect(ev('2.5E-1')).toBe(0.25);
    expect(ev('1_000_000')).toBe(1_000_000);
    expect(ev('0x2A')).toBe(42);
    expect(ev('0o52')).toBe(42);
    expect(ev('0b101010')).toBe(42);
  });

  it('reads double, single and backtick quoted strings with escapes', () => {
    expect(ev('"double"')).toBe('double');
    expect(ev("'single'")).toBe('single');
    expect(ev('"tab\\tnew\\nline \\"q\\" \\\\ \\u00e9 \\x41 \\U0001F600"')).toBe('tab\tnew\nline "q" \\ é A 😀');
    expect(ev("'it\\'s'")).toBe("it's");
    expect(ev('`raw \\n`')).toBe('raw \\n');
  });

  it('reads booleans, nil and null', () => {
    expect(ev('true')).toBe(true);
    expect(ev('false')).toBe(false);
    expect(ev('nil')).toBeNull();
    expect(ev('null')).toBeNull();
  });

  it('builds arrays and maps, with trailing commas and every kind of key', () => {
    expect(ev('[1, "two", [3], nil,]')).toEqual([1, 'two', [3], null]);
    expect(ev('[]')).toEqual([]);
    expect(ev('{a: 1, "b c": 2, 3: "three", (s + "!"): 4, nested: {x: [n]},}')).toEqual({
      a: 1,
      'b c': 2,
      '3': 'three',
      'text!': 4,
      nested: { x: [7] },
    });
    expect(ev('{}')).toEqual({});
  });
});

describe('operators', () => {
  it('does arithmetic with the usual precedence', () => {
    expect(ev('1 + 2 * 3')).toBe(7);
    expect(ev('(1 + 2) * 3')).toBe(9);
    expect(ev('10 - 4 - 3')).toBe(3); // left associative
    expect(ev('7 / 2')).toBe(3.5);
    expect(ev('7 % 3')).toBe(1);
    expect(ev('-7 % 3')).toBe(-1);
    expect(ev('2 ** 3 ** 2')).toBe(512); // right associative
    expect(ev('2 ^ 10')).toBe(1024);
    expect(ev('-2 ** 2')).toBe(-4); // as in expr-lang, ** binds tighter than unary minus
    expect(ev('-n + +3')).toBe(-4);
    expect(ev('n * 1.5')).toBe(10.5);
  });

  it('concatenates strings with +', () => {
    expect(ev('s + "-" + "more"')).toBe('text-more');
  });

  it('compares numbers and strings', () => {
    expect(ev('[1 < 2, 2 < 2, 2 <= 2, 3 > 2, 2 > 2, 2 >= 2]')).toEqual([true, false, true, true, false, true]);
    expect(ev('["a" < "b", "b" <= "a", "abc" > "abd", "b" >= "b"]')).toEqual([true, false, false, true]);
    expect(ev('1 < 2 < 3')).toBe(true); // chained: 1 < 2 && 2 < 3
    expect(ev('3 > 2 > 2')).toBe(false);
  });

  it('tests deep equality with == and !=; values of different types are never equal', () => {
    expect(ev('n == 7')).toBe(true);
    expect(ev('1 == 1.0')).toBe(true);
    expect(ev('"1" == 1')).toBe(false);
    expect(ev('nil == nil')).toBe(true);
    expect(ev('nothing == nil')).toBe(true);
    expect(ev('[1, [2, {a: 3}]] == [1, [2, {a: 3}]]')).toBe(true);
    expect(ev('{a: 1, b: 2} == {b: 2, a: 1}')).toBe(true);
    expect(ev('{a: 1} == {a: 1, b: nil}')).toBe(false);
    expect(ev('[1, 2] != [2, 1]')).toBe(true);
    expect(ev('obj.nested == {b: [10, 20, 30]}')).toBe(true);
  });

  it('combines booleans with && and, || or, ! not, short-circuiting', () => {
    expect(ev('[true && false, true and true, false || true, false or false, !true, not false]')).toEqual([
      false,
      true,
      true,
      false,
      false,
      true,
    ]);
    expect(ev('!flag || n > 5 && s == "text"')).toBe(true); // && binds tighter than ||
    expect(ev('false && 1 / 0 == 1')).toBe(false); // the right side is never evaluated
    expect(ev('true || unknownName')).toBe(true);
    expect(ev('not (1 > 2)')).toBe(true);
  });

  it('tests membership with in and not in', () => {
    expect(ev('2 in list')).toBe(true);
    expect(ev('5 in list')).toBe(false);
    expect(ev('5 not in list')).toBe(true);
    expect(ev('{a: 1} in [{a: 1}]')).toBe(true);
    expect(ev('"a" in obj')).toBe(true);
    expect(ev('"constructor" in obj')).toBe(false); // own keys only
    expect(ev('1 in nil')).toBe(false);
    expect(ev('"b" in obj and 1 in list')).toBe(false);
  });

  it('chooses with the ternary, right associative', () => {
    expect(ev('n > 5 ? "big" : "small"')).toBe('big');
    expect(ev('n > 10 ? "huge" : n > 5 ? "big" : "small"')).toBe('big');
    expect(ev('flag ? [1] : {a: 1}')).toEqual([1]);
  });

  it('falls back with ?? and short-circuits optional chains with ?.', () => {
    expect(ev('nothing ?? "default"')).toBe('default');
    expect(ev('n ?? "default"')).toBe(7);
    expect(ev('obj.missing ?? 0')).toBe(0);
    expect(ev('nothing?.a.b.c')).toBeNull();
    expect(ev('nothing?.[0]')).toBeNull();
    expect(ev('obj?.nested.b[1]')).toBe(20);
    expect(ev('$env.notAParameter ?? "absent"')).toBe('absent');
  });

  it('builds integer ranges with ..', () => {
    expect(ev('1..4')).toEqual([1, 2, 3, 4]);
    expect(ev('3..1')).toEqual([]);
    expect(ev('len(0..n)')).toBe(8);
  });
});

describe('member access and indexing', () => {
  it('reads fields, keys and items, with negative indexes from the end', () => {
    expect(ev('obj.a')).toBe(1);
    expect(ev('obj["a"]')).toBe(1);
    expect(ev('obj["with space"]')).toBe('yes');
    expect(ev('obj.nested.b[0]')).toBe(10);
    expect(ev('obj.nested.b[-1]')).toBe(30);
    expect(ev('obj["nested"]["b"][n - 6]')).toBe(20);
    expect(ev('[1, 2, 3][-3]')).toBe(1);
    expect(ev('{x: 1}.x')).toBe(1);
  });

  it('yields nil for a missing key, like expr-lang', () => {
    expect(ev('obj.missing')).toBeNull();
    expect(ev('obj["missing"]')).toBeNull();
  });

  it('slices arrays, clamping the bounds', () => {
    expect(ev('list[1:]')).toEqual([1, 2]);
    expect(ev('list[:2]')).toEqual([3, 1]);
    expect(ev('list[:-1]')).toEqual([3, 1]);
    expect(ev('list[-2:10]')).toEqual([1, 2]);
    expect(ev('list[2:1]')).toEqual([]);
    expect(ev('list[:]')).toEqual([3, 1, 2]);
  });

  it('reads the whole scope through $env (for names that are not identifiers)', () => {
    expect(evaluateExpression('$env["odd name"]', { 'odd name': 5 }, on)).toBe(5);
  });

  it('reads stepResults like any parameter', () => {
    expect(ev('stepResults[0].elements')).toEqual([{ id: 'x', type: 'Data', metadata: { score: 1.5 } }]);
    expect(ev('map(stepResults[0].elements, .metadata.score)')).toEqual([1.5]);
  });
});

describe('builtins and closures', () => {
  it('runs the reference example: ids with score > 1, best first', () => {
    expect(ev('map(sortBy(filter(elements, #.score > 1.0), .score, "desc"), #.id)')).toEqual(['c', 'b', 'd']);
  });

  it('filters by a predicate', () => {
    expect(ev('filter(list, # > 1)')).toEqual([3, 2]);
    expect(ev('filter(elements, .id in ["a", "c"])')).toEqual([elements[0], elements[2]]);
    expect(ev('filter([], 1 / 0 == 1)')).toEqual([]); // the predicate is never evaluated
  });

  it('maps by an expression, with #index as the position', () => {
    expect(ev('map(list, # * 10)')).toEqual([30, 10, 20]);
    expect(ev('map(list, #index)')).toEqual([0, 1, 2]);
    expect(ev('map(elements, {id: .id, rank: #index + 1})')).toEqual([
      { id: 'a', rank: 1 },
      { id: 'b', rank: 2 },
      { id: 'c', rank: 3 },
      { id: 'd', rank: 4 },
    ]);
  });

  it('accepts the predicate in closure braces', () => {
    expect(ev('filter(list, {# >= 2})')).toEqual([3, 2]);
    expect(ev('map(elements, {.id})')).toEqual(['a', 'b', 'c', 'd']);
  });

  it('treats .field as #.field', () => {
    expect(ev('map(elements, .id)')).toEqual(ev('map(elements, #.id)'));
    expect(ev('map(elements, .score * 2)')).toEqual([1, 4, 6, 4]);
    expect(ev('map([{a: {b: 1}}], .a.b)')).toEqual([1]);
    expect(ev('map([{a: {b: 1}}], #["a"]["b"])')).toEqual([1]);
  });

  it('sorts by a key, ascending by default, stable in both directions', () => {
    expect(ev('sortBy(list, #)')).toEqual([1, 2, 3]);
    expect(ev('sortBy(list, #, "desc")')).toEqual([3, 2, 1]);
    // b and d share a score: both directions keep their input order.
    expect(ev('map(sortBy(elements, .score), .id)')).toEqual(['a', 'b', 'd', 'c']);
    expect(ev('map(sortBy(elements, .score, "asc"), .id)')).toEqual(['a', 'b', 'd', 'c']);
    expect(ev('map(sortBy(elements, .score, "desc"), .id)')).toEqual(['c', 'b', 'd', 'a']);
    expect(ev('sortBy(["pear", "apple", "fig"], #)')).toEqual(['apple', 'fig', 'pear']);
    expect(ev('sortBy(["pear", "apple", "fig"], len(#))')).toEqual(['fig', 'pear', 'apple']);
    expect(ev('sortBy([], nil < 1)')).toEqual([]);
  });

  it('nests closures: # is the innermost item', () => {
    expect(ev('map([[1, 2], [3]], map(#, # * 10))')).toEqual([[10, 20], [30]]);
    expect(ev('filter([[1, 2], [3], []], len(filter(#, # > 1)) > 0)')).toEqual([[1, 2], [3]]);
    expect(ev('map([{xs: [{v: 1}, {v: 2}]}], map(.xs, .v))')).toEqual([[1, 2]]);
    expect(ev('map(1..2, map(1..2, #index))')).toEqual([
      [0, 1],
      [0, 1],
    ]);
  });

  it('measures with len and picks with first and last', () => {
    expect(ev('len(list)')).toBe(3);
    expect(ev('len(obj)')).toBe(3);
    expect(ev('len("héllo 😀")')).toBe(7); // code points
    expect(ev('len([])')).toBe(0);
    expect(ev('first(list)')).toBe(3);
    expect(ev('last(list)')).toBe(2);
    expect(ev('first([])')).toBeNull();
    expect(ev('last([])')).toBeNull();
  });
});

describe('resolveExpressions', () => {
  it('replaces expression strings anywhere in a nested value and keeps everything else', () => {
    const query = {
      bool: {
        must: [
          { terms: { _id: '{{ map(filter(elements, .score > 1), .id) }}' } },
          { match: { name: 'plain {{text}}' } },
        ],
        minimum_should_match: 1,
        boost: '{{ n * 2 }}',
        flags: [true, null, 1.5, '{{ flag }}', '{{s}} ', 'x'],
      },
      '{{ s }}': 'keys are never evaluated',
    };
    expect(resolveExpressions(query, scope, on)).toEqual({
      bool: {
        must: [{ terms: { _id: ['b', 'c', 'd'] } }, { match: { name: 'plain {{text}}' } }],
        minimum_should_match: 1,
        boost: 14,
        flags: [true, null, 1.5, true, '{{s}} ', 'x'],
      },
      '{{ s }}': 'keys are never evaluated',
    });
  });

  it('replaces a whole parameter, and works on a bare string', () => {
    const ids = ['0b0a1f5e-0000-4000-8000-000000000001', '0b0a1f5e-0000-4000-8000-000000000002'];
    expect(resolveExpressions({ terms: { _id: '{{someElementIds}}' } }, { someElementIds: ids }, on)).toEqual({
      terms: { _id: ids },
    });
    expect(resolveExpressions('{{stepResults[0].elements}}', scope, on)).toEqual(scope.stepResults[0]!.elements);
    expect(resolveExpressions('no expression', scope, on)).toBe('no expression');
    expect(resolveExpressions(null, scope, on)).toBeNull();
  });

  it('returns fresh copies that never alias the input or the scope', () => {
    const input = { a: ['{{ obj }}'], b: { c: 1 } };
    const out = resolveExpressions(input, scope, on) as { a: [{ a: number }]; b: { c: number } };
    out.a[0].a = 99;
    out.b.c = 99;
    expect(scope.obj.a).toBe(1);
    expect(input.b.c).toBe(1);
  });

  it('keeps a __proto__ key of the input as an own property, without touching prototypes', () => {
    const input = JSON.parse('{"__proto__": {"polluted": "{{ n }}"}, "x": 1}');
    const out = resolveExpressions(input, scope, on) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":7},"x":1}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('leaves strings alone when expressions are disabled, and refuses the first expression', () => {
    const off = { enabled: false, maxLength: 10240 };
    expect(resolveExpressions({ a: 'plain', b: [1] }, scope, off)).toEqual({ a: 'plain', b: [1] });
    expect(problemOf(() => resolveExpressions({ a: ['{{ n }}'] }, scope, off)).detail).toMatch(/disabled.*a\[0\]/);
    expect(problemOf(() => evaluateExpression('n', scope, off)).detail).toMatch(/disabled/);
  });

  it('names where a failing expression is and the offset in that string', () => {
    const problem = problemOf(() =>
      resolveExpressions({ query: { terms: { _id: ['ok', '{{ 1 + nope }}'] } } }, scope, on),
    );
    expect(problem.detail).toMatch(/in query\.terms\._id\[1\] at offset 7: unknown name 'nope'/);
  });
});

describe('errors: every failure is a 400 bad-content naming the offset', () => {
  it('reports syntax errors', () => {
    fails('', /offset 0: empty expression/);
    fails('   ', /empty expression/);
    fails('1 +', /offset 3: unexpected end of expression/);
    fails('(1 + 2', /expected '\)'/);
    fails('[1, 2', /unexpected end/);
    fails('{a 1}', /expected ':'/);
    fails('1 2', /offset 2: unexpected '2'/);
    fails('a = 1', /offset 2: unexpected character '='.*'=='/);
    fails('"open', /offset 0: unterminated string/);
    fails('"bad \\q"', /offset 5: unknown escape sequence '\\q'/);
    fails('"\\uD800"', /invalid escape sequence/);
    fails('12abc', /invalid number literal/);
    fails('1e999', /too large/);
    fails('obj.', /expected a property name/);
    fails('n not 1', /'not' here must be followed by 'in'/);
    fails('and', /offset 0: unexpected 'and'/);
    fails('nothing ?? 1 + 2', /'\+' and '\?\?' cannot be mixed/);
    fails('1 ? 2', /expected ':'/);
  });

  it('reports unknown names and functions', () => {
    fails('n + missing', /offset 4: unknown name 'missing' \(known: elements, n, s/);
    fails('constructor', /unknown name 'constructor'/);
    fails('toString()', /unknown function 'toString'/);
    fails('missingFn(1)', /offset 0: unknown function 'missingFn'/);
  });

  it('reports misuse of builtins and closures', () => {
    fails('filter(n, # > 1)', /offset 7: filter needs an array as its first argument, not number/);
    fails('map(obj, #)', /map needs an array.*not map/);
    fails('sortBy(nothing, #)', /sortBy needs an array.*not nil/);
    fails('filter(list, #)', /predicate of filter must give a bool, not number/);
    fails('sortBy(list, #, "up")', /order of sortBy must be "asc" or "desc", not "up"/);
    fails('sortBy([1, "a"], #)', /invalid operation: .* sortBy .* \(mismatched types\)/);
    fails('sortBy([1, nil], #)', /mismatched types/);
    fails('filter(list)', /filter needs 2 arguments/);
    fails('sortBy(list, #, "asc", 1)', /sortBy takes at most 3 arguments/);
    fails('len()', /len needs 1 argument/);
    fails('len(5)', /invalid argument for len \(number\)/);
    fails('first(obj)', /cannot get the first element of map/);
    fails('# + 1', /offset 0: '#' can only be used inside the predicate/);
    fails('.id', /'\.' can only be used inside the predicate/);
    fails('map(list, #foo)', /unknown pointer '#foo'/);
  });

  it('reports operations on the wrong types', () => {
    fails('1 < "2"', /offset 2: invalid operation: number < string \(mismatched types\)/);
    fails('nil >= 1', /invalid operation: nil >= number/);
    fails('[1] < [2]', /invalid operation: array < array/);
    fails('"a" - "b"', /invalid operation: string - string/);
    fails('[1] + [2]', /invalid operation: array \+ array/);
    fails('1 + "a"', /invalid operation: number \+ string/);
    fails('-s', /invalid operation: - string/);
    fails('!n', /invalid operation: ! number/);
    fails('n && true', /needs bools/);
    fails('false || 1', /needs bools/);
    fails('1 || true', /needs bools/);
    fails('n ? 1 : 2', /condition of '\?:' must be a bool, not number/);
    fails('1 in "abc"', /operator 'in' is not defined on string/);
    fails('1 in obj', /cannot use number as a key of a map/);
    fails('1.5 .. 3', /needs integers/);
    fails('5.5 % 2', /% needs integers/);
    fails('{(list): 1}', /a map key must be a string or a number, not array/);
  });

  it('reports arithmetic that has no JSON result', () => {
    fails('n / 0', /offset 2: division by zero/);
    fails('n % 0', /modulo by zero/);
    fails('10 ** 400', /not a finite number/);
  });

  it('reports bad member access and indexing', () => {
    fails('nothing.a', /offset 8: cannot fetch 'a' from nil/);
    fails('obj.missing.deeper', /cannot fetch 'deeper' from nil/);
    fails('n.a', /cannot fetch 'a' from number/);
    fails('list.length', /cannot fetch 'length' from array/);
    fails('list[3]', /index out of range: 3 \(array length is 3\)/);
    fails('list[-4]', /index out of range/);
    fails('list[0.5]', /an index must be an integer/);
    fails('obj[1]', /a key must be a string/);
    fails('s[0]', /cannot fetch 0 from string/);
    fails('s[0:1]', /cannot slice string/);
  });

  it('refuses expressions longer than maxLength', () => {
    const short = { enabled: true, maxLength: 10 };
    expect(evaluateExpression('1 + 2 + 34', {}, short)).toBe(37);
    expect(problemOf(() => evaluateExpression('1 + 2 + 345', {}, short)).detail).toMatch(
      /11 characters long; at most 10/,
    );
    // Through resolveExpressions the characters between the braces count.
    expect(resolveExpressions('{{1 + 2 + 34}}', {}, short)).toBe(37);
    expect(problemOf(() => resolveExpressions({ q: '{{ 1 + 2 + 34 }}' }, {}, short)).detail).toMatch(
      /expression in q is 12 characters long/,
    );
  });
});

describe('security', () => {
  it('never reaches prototypes through member access or indexing', () => {
    expect(ev('obj.__proto__')).toBeNull();
    expect(ev('obj.constructor')).toBeNull();
    expect(ev('obj["constructor"]')).toBeNull();
    expect(ev('obj.prototype')).toBeNull();
    expect(ev('obj.toString')).toBeNull();
    expect(ev('obj.__proto__?.polluted')).toBeNull();
    expect(ev('{}.constructor')).toBeNull();
    expect(ev('$env.constructor')).toBeNull();
    fails('obj.constructor.constructor', /cannot fetch 'constructor' from nil/);
    fails('list.constructor', /cannot fetch 'constructor' from array/);
    fails('"".constructor', /cannot fetch 'constructor' from string/);
    fails('obj.constructor("return process")()', /unexpected '\('/);
  });

  it('builds maps whose __proto__ key is data, not a prototype', () => {
    const out = ev('{__proto__: {polluted: 1}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // A JSON parameter with an own __proto__ key is readable as data.
    expect(evaluateExpression('p.__proto__.x', { p: JSON.parse('{"__proto__": {"x": 1}}') }, on)).toBe(1);
  });

  it('returns plain JSON values only', () => {
    expect(JSON.stringify(ev('[nil, obj.missing, nothing?.x]'))).toBe('[null,null,null]');
    expect(evaluateExpression('x', { x: undefined }, on)).toBeNull();
    expect(evaluateExpression('o', { o: { a: undefined, b: 1 } }, on)).toEqual({ b: 1 });
    fails('f', /not JSON \(function\)/, { f: () => 1 });
  });

  it('stops a hostile expression with the step budget', () => {
    const started = Date.now();
    fails('map(1..1000, map(1..1000, #))', new RegExp(`needs more than ${MAX_STEPS} steps`));
    fails('len(1..100000000000000)', /needs more than/); // charged before allocating
    fails('sortBy(map(1..200000, -#), #)', /needs more than/);
    expect(Date.now() - started).toBeLessThan(5000);
    // Large but affordable work is fine.
    expect(ev('len(map(1..100000, # + 1))')).toBe(100000);
  });

  it('shares the budget between all the expressions of one resolveExpressions call', () => {
    const each = '{{ len(map(1..150000, #)) }}'; // ~450,000 steps
    expect(resolveExpressions([each, each], {}, on)).toEqual([150000, 150000]);
    expect(problemOf(() => resolveExpressions([each, each, each], {}, on)).detail).toMatch(
      /in \[2\] at offset \d+: .*needs more than/,
    );
  });

  it('meters long strings when they are built, compared and copied', () => {
    const big = 'x'.repeat(1_000_000);
    fails('len(map(1..1000, big + big))', /needs more than/, { big });
    fails('len(filter(1..100000, big == big))', /needs more than/, { big });
    fails('map(1..100000, big)', /needs more than/, { big });
  });

  it('refuses nesting deeper than the limits', () => {
    const parens = (k: number) => `${'('.repeat(k)}1${')'.repeat(k)}`;
    expect(ev(parens(MAX_NESTING - 2))).toBe(1);
    fails(parens(MAX_NESTING + 1), new RegExp(`nested more than ${MAX_NESTING} levels`));
    fails(`${'!'.repeat(MAX_NESTING + 1)}true`, /nested more than/);
    fails('['.repeat(MAX_NESTING + 1) + ']'.repeat(MAX_NESTING + 1), /nested more than/);
    // Long left-leaning chains don't recurse in the parser but make a deep tree.
    expect(ev(Array(100).fill('1').join(' + '))).toBe(100);
    fails(
      Array(MAX_TREE_DEPTH + 2)
        .fill('1')
        .join(' + '),
      new RegExp(`nested more than ${MAX_TREE_DEPTH} levels`),
    );
    fails(`obj${'.a'.repeat(MAX_TREE_DEPTH + 1)}`, /nested more than/);
  });

  it('refuses values nested deeper than the limit instead of overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < MAX_VALUE_DEPTH + 5; i++) deep = [deep];
    expect(problemOf(() => resolveExpressions(deep, {}, on)).detail).toMatch(/nested more than/);
    fails('deep', /nested more than/, { deep });
    fails('deep == copy', /nested more than/, { deep, copy: structuredClone(deep) });
    expect(evaluateExpression('deep == deep', { deep }, on)).toBe(true); // the same value needs no walk
  });
});
