// The interpreter of the `{{ … }}` expressions: a tree walk over JSON values that charges every step to a budget.
//
// Semantics where expr-lang is the model: `==` is deep equality and never fails (values of different types are not
// equal); `< <= > >=` need two numbers or two strings, anything else is an error; `&&`, `||`, `!`, `?:` and filter
// predicates need booleans (no truthiness); a missing key of a map is nil, but fetching from nil, indexing an array
// out of range or fetching a name from a list is an error (use `?.` to get nil from nil); `x in nil` is false.
// Choices of our own: `/` and `%` by zero are errors (the result must be JSON), as are results that overflow to
// ±Infinity; `%` needs integers; `null` is a synonym of `nil`; sortBy is stable in both directions and its keys must
// all be numbers or all strings; a map literal's `{` at the start of a predicate is taken as a map (not as the
// closure's braces) when it is `{}` or starts with `key:`, which expr-lang would reject anyway.
import { isPlainObject } from '../../values.js';
import type { Node, NodeOf } from './expression-syntax.js';
import { ExpressionError } from './expression-tokens.js';

/** Evaluation steps per `resolveExpressions` (or `evaluateExpression`) call; each node evaluation is one step. */
export const MAX_STEPS = 1_000_000;
/** JSON values nested deeper than this are refused rather than risking the stack while copying or comparing them. */
export const MAX_VALUE_DEPTH = 1000;
/** Strings cost one step per this many characters when they are built, compared, measured or copied to a result. */
const CHARS_PER_STEP = 64;

export interface Budget {
  remaining: number;
}

export type JsonObject = Record<string, unknown>;

/** `o[key] = value`, except that a key `__proto__` becomes an own property instead of replacing the prototype. */
export function setOwn(o: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  else o[key] = value;
}

function typeName(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (Array.isArray(v)) return 'array';
  if (isPlainObject(v)) return 'map';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number' || typeof v === 'string') return typeof v;
  return 'unsupported value';
}

// ---------------------------------------------------------------------------------------------------------------
// Interpreter

/** The item a predicate is evaluated for: `#` and `#index`. */
interface Frame {
  item: unknown;
  index: number;
}

/** Produced by `?.` on nil and passed up to the end of the chain, which turns it into nil. */
const SHORT_CIRCUIT = Symbol('short-circuit');

export class Interpreter {
  constructor(
    private readonly scope: Readonly<Record<string, unknown>>,
    private readonly budget: Budget,
  ) {}

  private charge(steps: number, pos: number): void {
    this.budget.remaining -= steps;
    if (this.budget.remaining < 0)
      throw new ExpressionError(
        `evaluation needs more than ${MAX_STEPS} steps; use smaller lists or a simpler expression`,
        pos,
      );
  }

  private chargeString(s: string, pos: number): void {
    if (s.length >= CHARS_PER_STEP) this.charge(Math.floor(s.length / CHARS_PER_STEP), pos);
  }

  evaluate(node: Node, frame: Frame | null): unknown {
    this.charge(1, node.pos);
    switch (node.type) {
      case 'literal':
        return node.value;
      case 'name':
        if (node.name === '$env') return this.scope; // expr-lang's map of all variables, for names that aren't identifiers
        if (!Object.hasOwn(this.scope, node.name)) throw new ExpressionError(this.unknownName(node.name), node.pos);
        return this.scope[node.name] ?? null;
      case 'pointer':
        return node.index ? frame!.index : frame!.item;
      case 'member': {
        const object = this.evaluate(node.object, frame);
        if (object === SHORT_CIRCUIT || (node.optional && object === null)) return SHORT_CIRCUIT;
        return this.fetch(object, this.evaluate(node.key, frame), node.pos);
      }
      case 'slice': {
        const object = this.evaluate(node.object, frame);
        if (object === SHORT_CIRCUIT) return SHORT_CIRCUIT;
        const from = node.from ? this.evaluate(node.from, frame) : null;
        const to = node.to ? this.evaluate(node.to, frame) : null;
        return this.slice(object, from, to, node.pos);
      }
      case 'chain': {
        const value = this.evaluate(node.node, frame);
        return value === SHORT_CIRCUIT ? null : value;
      }
      case 'unary':
        return this.unary(node, this.evaluate(node.operand, frame));
      case 'binary':
        return this.binary(node, frame);
      case 'conditional': {
        const test = this.evaluate(node.test, frame);
        if (typeof test !== 'boolean')
          throw new ExpressionError(`the condition of '?:' must be a bool, not ${typeName(test)}`, node.pos);
        return this.evaluate(test ? node.then : node.else, frame);
      }
      case 'array':
        return node.items.map((item) => this.evaluate(item, frame));
      case 'map': {
        const out: JsonObject = {};
        for (const { key, value } of node.entries) {
          const k = this.evaluate(key, frame);
          if (typeof k !== 'string' && typeof k !== 'number')
            throw new ExpressionError(`a map key must be a string or a number, not ${typeName(k)}`, key.pos);
          setOwn(out, String(k), this.evaluate(value, frame));
        }
        return out;
      }
      case 'call':
        return this.call(node, frame);
      case 'closure':
        // Closures are only evaluated per item by the builtins, through `predicate`.
        throw new ExpressionError('a predicate is not a value', node.pos);
    }
  }

  private unknownName(name: string): string {
    const names = Object.keys(this.scope);
    const known =
      names.length === 0
        ? 'no names are defined'
        : `known: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''}`;
    return `unknown name '${name}' (${known})`;
  }

  /** `object.key` / `object[key]`: own properties of maps and items of arrays only, never the prototype chain. */
  private fetch(object: unknown, key: unknown, pos: number): unknown {
    if (Array.isArray(object)) {
      if (typeof key !== 'number' || !Number.isInteger(key))
        throw new ExpressionError(`cannot fetch ${describeKey(key)} from array (an index must be an integer)`, pos);
      const index = key < 0 ? object.length + key : key;
      if (index < 0 || index >= object.length)
        throw new ExpressionError(`index out of range: ${key} (array length is ${object.length})`, pos);
      return object[index] ?? null;
    }
    if (isPlainObject(object)) {
      if (typeof key !== 'string')
        throw new ExpressionError(`cannot fetch ${describeKey(key)} from map (a key must be a string)`, pos);
      return Object.hasOwn(object, key) ? (object[key] ?? null) : null;
    }
    throw new ExpressionError(`cannot fetch ${describeKey(key)} from ${typeName(object)}`, pos);
  }

  /** `a[from:to]` on arrays, with expr-lang's clamping of out-of-range bounds. */
  private slice(object: unknown, from: unknown, to: unknown, pos: number): unknown {
    if (!Array.isArray(object)) throw new ExpressionError(`cannot slice ${typeName(object)}`, pos);
    const bound = (v: unknown, fallback: number) => {
      if (v === null) return fallback;
      if (typeof v !== 'number' || !Number.isInteger(v))
        throw new ExpressionError(`slice bounds must be integers, not ${typeName(v)}`, pos);
      return Math.min(Math.max(v < 0 ? object.length + v : v, 0), object.length);
    };
    const start = bound(from, 0);
    const end = Math.max(bound(to, object.length), start);
    this.charge(end - start, pos);
    return object.slice(start, end);
  }

  private unary(node: NodeOf<'unary'>, value: unknown): unknown {
    if (node.op === '!') {
      if (typeof value !== 'boolean')
        throw new ExpressionError(`invalid operation: ! ${typeName(value)} (needs a bool)`, node.pos);
      return !value;
    }
    if (typeof value !== 'number')
      throw new ExpressionError(`invalid operation: ${node.op} ${typeName(value)} (needs a number)`, node.pos);
    return node.op === '-' ? -value : value;
  }

  private binary(node: NodeOf<'binary'>, frame: Frame | null): unknown {
    const { op, pos } = node;
    const left = this.evaluate(node.left, frame);
    // The logical operators and `??` only evaluate their right side when needed.
    if (op === '&&' || op === '||') {
      if (typeof left !== 'boolean')
        throw new ExpressionError(`invalid operation: ${typeName(left)} ${op} … (needs bools)`, pos);
      if (left === (op === '||')) return left;
      const right = this.evaluate(node.right, frame);
      if (typeof right !== 'boolean')
        throw new ExpressionError(`invalid operation: bool ${op} ${typeName(right)} (needs bools)`, pos);
      return right;
    }
    if (op === '??') return left === null ? this.evaluate(node.right, frame) : left;
    const right = this.evaluate(node.right, frame);
    switch (op) {
      case '==':
        return this.equal(left, right, 0, pos);
      case '!=':
        return !this.equal(left, right, 0, pos);
      case '<':
        return this.compare(left, right, op, pos) < 0;
      case '<=':
        return this.compare(left, right, op, pos) <= 0;
      case '>':
        return this.compare(left, right, op, pos) > 0;
      case '>=':
        return this.compare(left, right, op, pos) >= 0;
      case 'in':
        return this.contains(right, left, pos);
      case '..': {
        if (!Number.isInteger(left) || !Number.isInteger(right))
          throw new ExpressionError(`invalid operation: ${typeName(left)} .. ${typeName(right)} (needs integers)`, pos);
        const size = Math.max((right as number) - (left as number) + 1, 0);
        this.charge(size, pos); // before allocating, so `1..1e15` fails fast
        return Array.from({ length: size }, (_, i) => (left as number) + i);
      }
      case '+':
        if (typeof left === 'string' && typeof right === 'string') {
          const joined = left + right;
          this.chargeString(joined, pos);
          return joined;
        }
        return this.arithmetic(left, right, op, pos);
      default:
        return this.arithmetic(left, right, op, pos);
    }
  }

  private arithmetic(left: unknown, right: unknown, op: string, pos: number): number {
    if (typeof left !== 'number' || typeof right !== 'number')
      throw new ExpressionError(`invalid operation: ${typeName(left)} ${op} ${typeName(right)}`, pos);
    let result: number;
    switch (op) {
      case '+':
        result = left + right;
        break;
      case '-':
        result = left - right;
        break;
      case '*':
        result = left * right;
        break;
      case '/':
        if (right === 0) throw new ExpressionError('division by zero', pos);
        result = left / right;
        break;
      case '%':
        if (!Number.isInteger(left) || !Number.isInteger(right))
          throw new ExpressionError(`invalid operation: % needs integers, not ${left} % ${right}`, pos);
        if (right === 0) throw new ExpressionError('modulo by zero', pos);
        result = left % right;
        break;
      default: // '**'
        result = left ** right;
    }
    if (!Number.isFinite(result)) throw new ExpressionError(`${left} ${op} ${right} is not a finite number`, pos);
    return Object.is(result, -0) ? 0 : result;
  }

  /** Ordering for `< <= > >=` and sortBy: two numbers or two strings; anything else is an error, as in expr-lang. */
  private compare(a: unknown, b: unknown, op: string, pos: number): number {
    if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
    if (typeof a === 'string' && typeof b === 'string') {
      this.chargeString(a.length < b.length ? a : b, pos);
      return a < b ? -1 : a > b ? 1 : 0;
    }
    throw new ExpressionError(`invalid operation: ${typeName(a)} ${op} ${typeName(b)} (mismatched types)`, pos);
  }

  /** Deep equality: numbers by value, lists item by item, maps by their own keys; different types are never equal. */
  private equal(a: unknown, b: unknown, depth: number, pos: number): boolean {
    this.charge(1, pos);
    if (depth > MAX_VALUE_DEPTH)
      throw new ExpressionError(`cannot compare values nested more than ${MAX_VALUE_DEPTH} levels deep`, pos);
    a ??= null;
    b ??= null;
    if (typeof a === 'string' && typeof b === 'string') {
      this.chargeString(a, pos);
      return a === b;
    }
    if (a === b) return true;
    if (Array.isArray(a) && Array.isArray(b))
      return a.length === b.length && a.every((item, i) => this.equal(item, b[i], depth + 1, pos));
    if (isPlainObject(a) && isPlainObject(b)) {
      const keys = Object.keys(a);
      return (
        keys.length === Object.keys(b).length &&
        keys.every((k) => Object.hasOwn(b, k) && this.equal(a[k], b[k], depth + 1, pos))
      );
    }
    return false;
  }

  /** `needle in haystack`: an equal item of a list, an own key of a map; nothing is in nil. */
  private contains(haystack: unknown, needle: unknown, pos: number): boolean {
    if (haystack === null) return false;
    if (Array.isArray(haystack)) return haystack.some((item) => this.equal(item, needle, 0, pos));
    if (isPlainObject(haystack)) {
      if (typeof needle !== 'string')
        throw new ExpressionError(`cannot use ${typeName(needle)} as a key of a map in 'in'`, pos);
      return Object.hasOwn(haystack, needle);
    }
    throw new ExpressionError(`operator 'in' is not defined on ${typeName(haystack)}`, pos);
  }

  private call(node: NodeOf<'call'>, frame: Frame | null): unknown {
    const [first, predicate, third] = node.args;
    const value = this.evaluate(first!, frame);
    switch (node.name) {
      case 'len':
        if (Array.isArray(value)) return value.length;
        if (isPlainObject(value)) return Object.keys(value).length;
        if (typeof value === 'string') {
          this.chargeString(value, node.pos);
          let count = 0;
          for (const _ of value) count++; // code points, like expr-lang's rune count
          return count;
        }
        throw new ExpressionError(`invalid argument for len (${typeName(value)})`, node.pos);
      case 'first':
      case 'last':
        if (!Array.isArray(value))
          throw new ExpressionError(`cannot get the ${node.name} element of ${typeName(value)}`, node.pos);
        return (node.name === 'first' ? value[0] : value[value.length - 1]) ?? null;
    }
    const list = this.list(value, node.name, first!.pos);
    switch (node.name) {
      case 'filter':
        return list.filter((item, index) => {
          const keep = this.predicate(predicate!, item, index);
          if (typeof keep !== 'boolean')
            throw new ExpressionError(
              `the predicate of filter must give a bool, not ${typeName(keep)}`,
              predicate!.pos,
            );
          return keep;
        });
      case 'map':
        return list.map((item, index) => this.predicate(predicate!, item, index));
      default: {
        // sortBy: compute each key once, then a stable sort of the positions (equal keys keep their order).
        const order = third ? this.evaluate(third, frame) : 'asc';
        if (order !== 'asc' && order !== 'desc')
          throw new ExpressionError(
            `the order of sortBy must be "asc" or "desc", not ${JSON.stringify(order) ?? typeName(order)}`,
            third!.pos,
          );
        const keys = list.map((item, index) => this.predicate(predicate!, item, index));
        const sign = order === 'asc' ? 1 : -1;
        const positions = keys.map((_, i) => i);
        positions.sort((a, b) => {
          this.charge(1, node.pos);
          return sign * this.compare(keys[a], keys[b], 'sortBy', predicate!.pos);
        });
        return positions.map((i) => list[i]);
      }
    }
  }

  private list(value: unknown, name: string, pos: number): unknown[] {
    if (!Array.isArray(value))
      throw new ExpressionError(`${name} needs an array as its first argument, not ${typeName(value)}`, pos);
    return value;
  }

  private predicate(closure: Node, item: unknown, index: number): unknown {
    if (closure.type !== 'closure') throw new ExpressionError('expected a predicate', closure.pos);
    this.charge(1, closure.pos);
    const value = this.evaluate(closure.body, { item: item ?? null, index });
    return value === SHORT_CIRCUIT ? null : value;
  }

  /** The result as a plain JSON value: a fresh copy (so callers never alias the scope), nil as `null`. */
  toJson(value: unknown, depth: number, pos: number): unknown {
    this.charge(1, pos);
    if (depth > MAX_VALUE_DEPTH)
      throw new ExpressionError(`the result is nested more than ${MAX_VALUE_DEPTH} levels deep`, pos);
    if (value === null || value === undefined || value === SHORT_CIRCUIT) return null;
    if (typeof value === 'boolean') return value;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new ExpressionError('the result is not a finite number', pos);
      return value;
    }
    if (typeof value === 'string') {
      this.chargeString(value, pos);
      return value;
    }
    if (Array.isArray(value)) return value.map((item) => this.toJson(item, depth + 1, pos));
    if (isPlainObject(value)) {
      const out: JsonObject = {};
      for (const [key, item] of Object.entries(value))
        if (item !== undefined) setOwn(out, key, this.toJson(item, depth + 1, pos));
      return out;
    }
    throw new ExpressionError(`the result contains a value that is not JSON (${typeof value})`, pos);
  }
}

function describeKey(key: unknown): string {
  return typeof key === 'string' ? `'${key}'` : typeof key === 'number' ? String(key) : typeName(key);
}
