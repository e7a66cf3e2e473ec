// The interpreter of the `{{ … }}` expressions (src/search/language/expression-interpreter.ts) on parsed trees:
// values, operators and builtins, nil rules, and the step budget and value depth that bound a client's expression.
import { describe, expect, it } from 'vitest';
import {
  type Budget,
  Interpreter,
  MAX_STEPS,
  MAX_VALUE_DEPTH,
} from '../../../../src/search/language/expression-interpreter.js';
import { Parser } from '../../../../src/search/language/expression-syntax.js';
import { ExpressionError } from '../../../../src/search/language/expression-tokens.js';

const run = (source: string, scope: Record<string, unknown> = {}, budget: Budget = { remaining: MAX_STEPS }) =>
  new Interpreter(scope, budget).evaluate(new Parser(source).parseAll(), null);
const error = (source: string, scope: Record<string, unknown> = {}): ExpressionError => {
  try {
    run(source, scope);
  } catch (e) {
    expect(e).toBeInstanceOf(ExpressionError);
    return e as ExpressionError;
  }
  throw new Error(`evaluated: ${source}`);
};

describe('expression interpreter', () => {
  it('computes arithmetic, comparisons, logic and conditionals', () => {
    expect(run('1 + 2 * 3 - 4 / 2')).toBe(5);
    expect(run('7 % 3 == 1 && 2 ** 3 == 8')).toBe(true);
    expect(run('"a" + "b"')).toBe('ab');
    expect(run('x > 1 ? "big" : "small"', { x: 3 })).toBe('big');
    expect(run('1 < x < 3', { x: 2 })).toBe(true);
    expect(run('2 in [1, 2] and not ("k" in {j: 1})')).toBe(true);
    expect(run('1..3')).toEqual([1, 2, 3]);
  });

  it('reads members, indexes and slices, and optional chains yield nil', () => {
    const scope = { a: { b: [10, 20, 30] }, none: null };
    expect(run('a.b[1]', scope)).toBe(20);
    expect(run('a.b[-1]', scope)).toBe(30);
    expect(run('a.b[1:]', scope)).toEqual([20, 30]);
    expect(run('none?.x.y', scope)).toBeNull();
    expect(run('none ?? "fallback"', scope)).toBe('fallback');
  });

  it('runs the builtins over lists with predicates', () => {
    const scope = {
      xs: [
        { n: 3, name: 'c' },
        { n: 1, name: 'a' },
        { n: 2, name: 'b' },
      ],
    };
    expect(run('len(xs)', scope)).toBe(3);
    expect(run('map(filter(xs, .n > 1), .name)', scope)).toEqual(['c', 'b']);
    expect(run('first(xs).name', scope)).toBe('c');
    expect(run('map(xs, #index)', scope)).toEqual([0, 1, 2]);
  });

  it('names the problem and its offset when a value does not fit', () => {
    expect(error('nope').message).toMatch(/nope/);
    const condition = error('1 ? 2 : 3');
    expect([condition.message, condition.offset]).toEqual(["the condition of '?:' must be a bool, not number", 2]);
    expect(error('{(x): 2}', { x: [1] }).message).toMatch(/a map key must be a string or a number/);
  });

  it('stops an evaluation beyond its step budget', () => {
    expect(() => run('map(1..100, # * 2)', {}, { remaining: 50 })).toThrow(/more than 1000000 steps/);
    expect(run('map(1..3, # * 2)', {}, { remaining: 50 })).toEqual([2, 4, 6]);
  });

  it('turns results into JSON, refusing values nested beyond MAX_VALUE_DEPTH', () => {
    const interpreter = new Interpreter({}, { remaining: MAX_STEPS });
    expect(interpreter.toJson({ a: [1, { b: null }] }, 0, 0)).toEqual({ a: [1, { b: null }] });
    let deep: unknown = 1;
    for (let i = 0; i <= MAX_VALUE_DEPTH; i++) deep = [deep];
    expect(() => interpreter.toJson(deep, 0, 0)).toThrow(ExpressionError);
  });
});
