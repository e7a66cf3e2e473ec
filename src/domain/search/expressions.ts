// The `{{ … }}` expressions of the search pipeline (POST /search). They follow the expr language
// (https://expr-lang.org): a string that is wholly one `{{ … }}` is replaced by the value of the expression, which
// sees the step parameters and `stepResults`.
//
// The source comes from untrusted request bodies, so this module has its own tokenizer, a precedence-climbing parser
// and a tree-walking interpreter (never `eval` or `new Function`), and bounds everything a hostile expression could
// use to hurt the server: source length (config `expression.maxLength`), nesting (parser recursion and tree depth),
// and work (an evaluation step budget per `resolveExpressions` call that also meters long strings, ranges, sorting,
// deep equality and the copying of results). Member access only reads own properties of plain objects and items of
// arrays, so nothing reaches a prototype. Every failure is a 400 `bad-content` naming the offset in the string.
//
// Grammar (lowest precedence first, as in expr-lang's parser):
//   expression  = binary [ "?" expression ":" expression ]
//   binary      = unary { op binary }      ops by precedence: || or (10) · && and (15) ·
//                                          == != < <= > >= in, not in (20, chained: a < b < c is a < b && b < c) ·
//                                          .. (25) · + - (30) · * / % (60) · ** ^ (100, right) · ?? (500, not mixable)
//   unary       = ( "!" | "not" ) binary(50) | ( "-" | "+" ) binary(90) | postfix
//   postfix     = primary { "." name | "?." name | "[" expr "]" | "?.[" expr "]" | "[" [expr] ":" [expr] "]" }
//   primary     = literal | name | name "(" args ")" | "(" expression ")" | "#" | "#index" | "." name (in closures)
//   literal     = number | string | true | false | nil | null | "[" items "]" | "{" key ":" expr, … "}"
// The predicate arguments of filter, map and sortBy are closures (optionally in `{ }`), in which `#` is the current
// item, `#index` its index and `.name` is short for `#.name`.
//
// Semantics where expr-lang is the model: `==` is deep equality and never fails (values of different types are not
// equal); `< <= > >=` need two numbers or two strings, anything else is an error; `&&`, `||`, `!`, `?:` and filter
// predicates need booleans (no truthiness); a missing key of a map is nil, but fetching from nil, indexing an array
// out of range or fetching a name from a list is an error (use `?.` to get nil from nil); `x in nil` is false.
// Choices of our own: `/` and `%` by zero are errors (the result must be JSON), as are results that overflow to
// ±Infinity; `%` needs integers; `null` is a synonym of `nil`; sortBy is stable in both directions and its keys must
// all be numbers or all strings; a map literal's `{` at the start of a predicate is taken as a map (not as the
// closure's braces) when it is `{}` or starts with `key:`, which expr-lang would reject anyway.
import { badContent } from '../../errors.js';
import { isPlainObject } from '../values.js';

export interface ExpressionOptions {
  enabled: boolean;
  maxLength: number;
}

/** Parser recursion (parentheses, brackets, calls, operands of higher precedence) deeper than this is refused. */
export const MAX_NESTING = 64;
/** Depth of the syntax tree; long left-leaning chains like `a.b.c…` or `1 + 2 + 3 …` count here, not in MAX_NESTING. */
export const MAX_TREE_DEPTH = 256;
/** Evaluation steps per `resolveExpressions` (or `evaluateExpression`) call; each node evaluation is one step. */
export const MAX_STEPS = 1_000_000;
/** JSON values nested deeper than this are refused rather than risking the stack while copying or comparing them. */
export const MAX_VALUE_DEPTH = 1000;
/** Strings cost one step per this many characters when they are built, compared, measured or copied to a result. */
const CHARS_PER_STEP = 64;

// ---------------------------------------------------------------------------------------------------------------
// Public API

/** True when `s` is wholly one `{{ … }}` (whitespace inside the braces is allowed, outside it is not). */
export function isExpression(s: string): boolean {
  if (s.length < 4 || !s.startsWith('{{') || !s.endsWith('}}')) return false;
  // "{{a}} and {{b}}" starts and ends like one expression but is two: the inner text must not close the outer
  // braces. Braces inside string literals don't count; an unterminated literal is left for the parser to report.
  const inner = s.slice(2, -2);
  let depth = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === '"' || c === "'" || c === '`') {
      i = endOfQuoted(inner, i);
      if (i < 0) return true;
    } else if (c === '{') depth++;
    else if (c === '}' && --depth < 0) return false;
  }
  return true;
}

/**
 * Deep copy of a JSON value in which every string that is wholly one `{{ … }}` is replaced by the expression's value
 * (any JSON type). Other strings are kept as they are: in particular a string with text around a `{{ }}` is NOT
 * interpolated, because an expression's value is typically a list or an object, which has no sensible place inside
 * a string, and keeping such strings verbatim means data that merely contains braces is never evaluated by accident.
 * Object keys are never evaluated. All expressions of one call share one step budget.
 */
export function resolveExpressions(value: unknown, scope: Readonly<Record<string, unknown>>, options: ExpressionOptions): unknown {
  const budget: Budget = { remaining: MAX_STEPS };
  const path: (string | number)[] = [];
  const copy = (v: unknown): unknown => {
    if (path.length > MAX_VALUE_DEPTH) throw badContent(`The value is nested more than ${MAX_VALUE_DEPTH} levels deep.`);
    if (typeof v === 'string') return isExpression(v) ? evaluate(v.slice(2, -2), scope, options, budget, 2, path) : v;
    if (Array.isArray(v))
      return v.map((item, i) => {
        path.push(i);
        const out = copy(item);
        path.pop();
        return out;
      });
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(v)) {
        path.push(key);
        setOwn(out, key, copy(item));
        path.pop();
      }
      return out;
    }
    return v === undefined ? null : v;
  };
  return copy(value);
}

/** Evaluates the source between the braces and returns a plain JSON value (nil is `null`). */
export function evaluateExpression(source: string, scope: Readonly<Record<string, unknown>>, options: ExpressionOptions): unknown {
  return evaluate(source, scope, options, { remaining: MAX_STEPS }, 0, []);
}

// ---------------------------------------------------------------------------------------------------------------
// Errors, budget, helpers

/** A failure at an offset of the expression source; turned into a `bad-content` problem at the API boundary. */
class ExpressionError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

interface Budget {
  remaining: number;
}

function evaluate(
  source: string,
  scope: Readonly<Record<string, unknown>>,
  options: ExpressionOptions,
  budget: Budget,
  base: number,
  path: readonly (string | number)[],
): unknown {
  const where = path.length > 0 ? ` in ${describePath(path)}` : '';
  if (!options.enabled) throw badContent(`Expressions are disabled on this server (expression.enabled is false); found one${where}.`);
  if (source.length > options.maxLength)
    throw badContent(`The expression${where} is ${source.length} characters long; at most ${options.maxLength} are allowed (expression.maxLength).`);
  try {
    const tree = new Parser(source).parseAll();
    const interpreter = new Interpreter(scope, budget);
    return interpreter.toJson(interpreter.evaluate(tree, null), 0, 0);
  } catch (error) {
    if (error instanceof ExpressionError) throw badContent(`Invalid expression${where} at offset ${base + error.offset}: ${error.message}.`);
    // Our limits should keep the stack and string/array sizes in check; this is the last line of defence.
    if (error instanceof RangeError) throw badContent(`The expression${where} exceeds an internal limit (${error.message}).`);
    throw error;
  }
}

function describePath(path: readonly (string | number)[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out === '' ? 'the value' : out;
}

type JsonObject = Record<string, unknown>;

/** `o[key] = value`, except that a key `__proto__` becomes an own property instead of replacing the prototype. */
function setOwn(o: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
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

/** Index just past the closing quote of the literal opening at `start`, or -1 when it is not closed. */
function endOfQuoted(s: string, start: number): number {
  const quote = s[start];
  for (let i = start + 1; i < s.length; i++) {
    if (s[i] === '\\' && quote !== '`') i++;
    else if (s[i] === quote) return i;
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------------------------
// Tokenizer

type TokenKind = 'number' | 'string' | 'name' | 'punct' | 'eof';

interface Token {
  kind: TokenKind;
  /** The source text (for strings: the decoded value). */
  text: string;
  number?: number;
  pos: number;
}

// Longest first, so that `**` wins over `*` and `?.` over `?`.
const PUNCTUATION = ['**', '==', '!=', '<=', '>=', '&&', '||', '??', '?.', '..', '+', '-', '*', '/', '%', '^', '<', '>', '!', '?', ':', ',', '.', '(', ')', '[', ']', '{', '}', '#'];
const NUMBER = /0[xX][0-9a-fA-F](?:_?[0-9a-fA-F])*|0[oO][0-7](?:_?[0-7])*|0[bB][01](?:_?[01])*|(?:\d(?:_?\d)*(?:\.\d(?:_?\d)*)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?/y;
const NAME = /[\p{L}_$][\p{L}\p{N}_$]*/uy;
const NAME_CHAR = /[\p{L}\p{N}_$]/u;
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', v: '\v', a: '\x07', '0': '\0', '\\': '\\', "'": "'", '"': '"', '`': '`', '/': '/' };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = /[\d.]/.test(c) ? NUMBER.exec(source) : null;
    if (number) {
      const text = number[0];
      if (NAME_CHAR.test(source[i + text.length] ?? ''))
        throw new ExpressionError(`invalid number literal '${text}${source[i + text.length]}'`, i);
      const value = Number(text.replaceAll('_', ''));
      if (!Number.isFinite(value)) throw new ExpressionError(`number literal '${text}' is too large`, i);
      tokens.push({ kind: 'number', text, number: value, pos: i });
      i += text.length;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      const end = endOfQuoted(source, i);
      if (end < 0) throw new ExpressionError('unterminated string literal', i);
      const raw = source.slice(i + 1, end);
      tokens.push({ kind: 'string', text: c === '`' ? raw : unescape(raw, i + 1), pos: i });
      i = end + 1;
      continue;
    }
    NAME.lastIndex = i;
    const name = NAME.exec(source);
    if (name) {
      tokens.push({ kind: 'name', text: name[0], pos: i });
      i += name[0].length;
      continue;
    }
    // `a ?.5 : 1` is a conditional with the number .5, not optional chaining.
    const punct = PUNCTUATION.find((p) => source.startsWith(p, i) && !(p === '?.' && /\d/.test(source[i + 2] ?? '')));
    if (!punct) throw new ExpressionError(`unexpected character '${c}'${c === '=' ? " (comparison is '==')" : ''}`, i);
    tokens.push({ kind: 'punct', text: punct, pos: i });
    i += punct.length;
  }
  tokens.push({ kind: 'eof', text: 'end of expression', pos: source.length });
  return tokens;
}

function unescape(raw: string, offset: number): string {
  if (!raw.includes('\\')) return raw;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== '\\') {
      out += raw[i];
      continue;
    }
    const e = raw[++i] ?? '';
    const hexLength = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
    if (hexLength > 0) {
      const hex = raw.slice(i + 1, i + 1 + hexLength);
      const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === hexLength ? parseInt(hex, 16) : NaN;
      if (!(code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) throw new ExpressionError(`invalid escape sequence '\\${e}${hex}'`, offset + i - 1);
      out += String.fromCodePoint(code);
      i += hexLength;
    } else if (Object.hasOwn(ESCAPES, e)) out += ESCAPES[e];
    else throw new ExpressionError(`unknown escape sequence '\\${e}'`, offset + i - 1);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Syntax tree and parser

type Node =
  | { type: 'literal'; value: unknown; pos: number; depth: number }
  | { type: 'name'; name: string; pos: number; depth: number }
  | { type: 'pointer'; index: boolean; pos: number; depth: number }
  | { type: 'member'; object: Node; key: Node; optional: boolean; pos: number; depth: number }
  | { type: 'slice'; object: Node; from: Node | null; to: Node | null; pos: number; depth: number }
  /** Ends an optional chain `a?.b.c`: when `a` is nil the whole chain is nil. */
  | { type: 'chain'; node: Node; pos: number; depth: number }
  | { type: 'unary'; op: string; operand: Node; pos: number; depth: number }
  | { type: 'binary'; op: string; left: Node; right: Node; pos: number; depth: number }
  | { type: 'conditional'; test: Node; then: Node; else: Node; pos: number; depth: number }
  | { type: 'array'; items: Node[]; pos: number; depth: number }
  | { type: 'map'; entries: { key: Node; value: Node }[]; pos: number; depth: number }
  | { type: 'call'; name: string; args: Node[]; pos: number; depth: number }
  | { type: 'closure'; body: Node; pos: number; depth: number };

type NodeOf<T extends Node['type']> = Extract<Node, { type: T }>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

const BINARY: Record<string, { precedence: number; right?: boolean }> = {
  '||': { precedence: 10 },
  '&&': { precedence: 15 },
  '==': { precedence: 20 },
  '!=': { precedence: 20 },
  '<': { precedence: 20 },
  '<=': { precedence: 20 },
  '>': { precedence: 20 },
  '>=': { precedence: 20 },
  in: { precedence: 20 },
  '..': { precedence: 25 },
  '+': { precedence: 30 },
  '-': { precedence: 30 },
  '*': { precedence: 60 },
  '/': { precedence: 60 },
  '%': { precedence: 60 },
  '**': { precedence: 100, right: true },
  '??': { precedence: 500 },
};
const ALIASES: Record<string, string> = { or: '||', and: '&&', '^': '**' };
const COMPARISON = 20;
const KEYWORDS = new Set(['true', 'false', 'nil', 'null', 'and', 'or', 'not', 'in']);

/** The builtins and the kind of each argument; `closure` arguments are predicates evaluated per item. */
const BUILTINS: Record<string, { args: ('value' | 'closure')[]; required: number }> = {
  filter: { args: ['value', 'closure'], required: 2 },
  map: { args: ['value', 'closure'], required: 2 },
  sortBy: { args: ['value', 'closure', 'value'], required: 2 },
  len: { args: ['value'], required: 1 },
  first: { args: ['value'], required: 1 },
  last: { args: ['value'], required: 1 },
};

class Parser {
  private readonly tokens: Token[];
  private at = 0;
  private nesting = 0;
  /** How many predicates enclose the current position: `#` and `.name` are only valid inside one. */
  private closures = 0;

  constructor(source: string) {
    this.tokens = tokenize(source);
  }

  parseAll(): Node {
    if (this.peek().kind === 'eof') throw new ExpressionError('empty expression', 0);
    const node = this.expression(0);
    if (this.peek().kind !== 'eof') throw this.unexpected();
    return node;
  }

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.at + ahead, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const token = this.peek();
    if (token.kind !== 'eof') this.at++;
    return token;
  }

  private is(text: string, ahead = 0): boolean {
    const token = this.peek(ahead);
    return (token.kind === 'punct' || token.kind === 'name') && token.text === text;
  }

  private expect(text: string): Token {
    if (!this.is(text)) throw this.unexpected(`expected '${text}'`);
    return this.next();
  }

  private unexpected(hint?: string): ExpressionError {
    const token = this.peek();
    const what = token.kind === 'eof' ? 'unexpected end of expression' : `unexpected ${token.kind === 'string' ? 'string' : `'${token.text}'`}`;
    return new ExpressionError(hint ? `${what}, ${hint}` : what, token.pos);
  }

  /** Builds a node, computing its depth from its children and refusing trees too deep to evaluate safely. */
  private node<T extends Node>(fields: DistributiveOmit<T, 'depth'>, ...children: (Node | null)[]): T {
    const depth = 1 + children.reduce((max, c) => Math.max(max, c?.depth ?? 0), 0);
    if (depth > MAX_TREE_DEPTH) throw new ExpressionError(`expression is nested more than ${MAX_TREE_DEPTH} levels deep`, fields.pos);
    return { ...fields, depth } as unknown as T;
  }

  /** The binary operator at the current token (aliases resolved), or null. `not in` is handled by the caller. */
  private binaryOperator(): string | null {
    const token = this.peek();
    if (token.kind !== 'punct' && token.kind !== 'name') return null;
    // Own properties only: a name like `constructor` must not find Object.prototype's.
    const op = Object.hasOwn(ALIASES, token.text) ? ALIASES[token.text]! : token.text;
    return Object.hasOwn(BINARY, op) && (token.kind === 'punct' || op === 'in' || token.text !== op) ? op : null;
  }

  private expression(minPrecedence: number): Node {
    if (++this.nesting > MAX_NESTING) throw new ExpressionError(`expression is nested more than ${MAX_NESTING} levels deep`, this.peek().pos);
    let left = this.unary();
    let previous = '';
    for (;;) {
      const token = this.peek();
      const negated = this.is('not') && this.is('in', 1);
      if (this.is('not') && !negated) throw this.unexpected("'not' here must be followed by 'in'");
      const op = negated ? 'in' : this.binaryOperator();
      if (op === null || BINARY[op]!.precedence < minPrecedence) break;
      if (previous === '??' && op !== '??') throw new ExpressionError(`'${token.text}' and '??' cannot be mixed; add parentheses`, token.pos);
      this.next();
      if (negated) this.next();
      if (BINARY[op]!.precedence === COMPARISON) left = this.comparisonChain(left, op, negated, token.pos);
      else {
        const { precedence, right } = BINARY[op]!;
        const operand = this.expression(right ? precedence : precedence + 1);
        left = this.node({ type: 'binary', op, left, right: operand, pos: token.pos }, left, operand);
      }
      previous = op;
    }
    if (minPrecedence === 0 && this.is('?')) {
      const pos = this.next().pos;
      const then = this.expression(0);
      this.expect(':');
      const otherwise = this.expression(0);
      left = this.node({ type: 'conditional', test: left, then, else: otherwise, pos }, left, then, otherwise);
    }
    this.nesting--;
    return left;
  }

  /** `a < b <= c` means `a < b && b <= c`, as in expr-lang. */
  private comparisonChain(left: Node, op: string, negated: boolean, pos: number): Node {
    let root: Node | null = null;
    for (;;) {
      const right = this.expression(COMPARISON + 1);
      let comparison: Node = this.node({ type: 'binary', op, left, right, pos }, left, right);
      if (negated) comparison = this.node({ type: 'unary', op: '!', operand: comparison, pos }, comparison);
      root = root === null ? comparison : this.node({ type: 'binary', op: '&&', left: root, right: comparison, pos }, root, comparison);
      left = right;
      const next = this.peek();
      negated = this.is('not') && this.is('in', 1);
      const nextOp = negated ? 'in' : this.binaryOperator();
      if (nextOp === null || BINARY[nextOp]!.precedence !== COMPARISON) return root;
      this.next();
      if (negated) this.next();
      op = nextOp;
      pos = next.pos;
    }
  }

  private unary(): Node {
    const token = this.peek();
    if (this.is('!') || this.is('not') || this.is('-') || this.is('+')) {
      this.next();
      const logical = token.text === '!' || token.text === 'not';
      const operand = this.expression(logical ? 50 : 90);
      return this.postfix(this.node({ type: 'unary', op: logical ? '!' : token.text, operand, pos: token.pos }, operand));
    }
    if (this.is('(')) {
      this.next();
      const inner = this.expression(0);
      this.expect(')');
      return this.postfix(inner);
    }
    if (this.is('#') || this.is('.')) {
      if (this.closures === 0) throw new ExpressionError(`'${token.text}' can only be used inside the predicate of filter, map or sortBy`, token.pos);
      let index = false;
      if (this.is('#')) {
        this.next();
        // `#index` is the index of the current item; the name must follow `#` directly.
        const name = this.peek();
        if (name.kind === 'name' && name.pos === token.pos + 1 && !KEYWORDS.has(name.text)) {
          if (name.text !== 'index') throw new ExpressionError(`unknown pointer '#${name.text}' (only '#' and '#index' exist)`, token.pos);
          this.next();
          index = true;
        }
      }
      // For `.name` the `.` is left in place: the postfix loop reads it as a member access on the current item.
      return this.postfix(this.node({ type: 'pointer', index, pos: token.pos }));
    }
    return this.postfix(this.primary());
  }

  private primary(): Node {
    const token = this.peek();
    const { pos, text } = token;
    if (token.kind === 'number' || token.kind === 'string') {
      this.next();
      return this.node({ type: 'literal', value: token.kind === 'number' ? token.number : text, pos });
    }
    if (token.kind === 'name') {
      if (KEYWORDS.has(text) && !['true', 'false', 'nil', 'null'].includes(text)) throw this.unexpected();
      this.next();
      if (text === 'true' || text === 'false') return this.node({ type: 'literal', value: text === 'true', pos });
      if (text === 'nil' || text === 'null') return this.node({ type: 'literal', value: null, pos });
      if (this.is('(')) return this.call(token);
      return this.node({ type: 'name', name: text, pos });
    }
    if (!this.is('[') && !this.is('{')) throw this.unexpected();
    this.next();
    return text === '[' ? this.arrayLiteral(pos) : this.mapLiteral(pos);
  }

  private postfix(node: Node): Node {
    let optionalChain = false;
    for (;;) {
      const token = this.peek();
      const optional = this.is('?.');
      if (optional && this.is('[', 1)) this.next(); // `a?.[i]`: continue with the bracket below
      if (this.is('.') || (optional && !this.is('['))) {
        this.next();
        // Keywords are fine as property names (`x.in`, `x.nil`), as in expr-lang.
        if (this.peek().kind !== 'name') throw this.unexpected('expected a property name');
        const name = this.next();
        const key = this.node<NodeOf<'literal'>>({ type: 'literal', value: name.text, pos: name.pos });
        node = this.node({ type: 'member', object: node, key, optional, pos: name.pos }, node);
      } else if (this.is('[')) {
        this.next();
        if (++this.nesting > MAX_NESTING) throw new ExpressionError(`expression is nested more than ${MAX_NESTING} levels deep`, token.pos);
        const from = this.is(':') ? null : this.expression(0);
        if (this.is(':')) {
          this.next();
          const to = this.is(']') ? null : this.expression(0);
          node = this.node({ type: 'slice', object: node, from, to, pos: token.pos }, node, from, to);
        } else {
          node = this.node({ type: 'member', object: node, key: from!, optional, pos: token.pos }, node, from);
        }
        this.nesting--;
        this.expect(']');
      } else break;
      optionalChain ||= optional;
    }
    return optionalChain ? this.node({ type: 'chain', node, pos: node.pos }, node) : node;
  }

  private call(name: Token): Node {
    const builtin = Object.hasOwn(BUILTINS, name.text) ? BUILTINS[name.text] : undefined;
    if (!builtin) throw new ExpressionError(`unknown function '${name.text}' (known: ${Object.keys(BUILTINS).join(', ')})`, name.pos);
    this.expect('(');
    const args: Node[] = [];
    while (!this.is(')')) {
      if (args.length > 0) {
        this.expect(',');
        if (this.is(')')) break; // trailing comma
      }
      const kind = builtin.args[args.length];
      if (kind === undefined) throw new ExpressionError(`${name.text} takes at most ${builtin.args.length} arguments`, this.peek().pos);
      args.push(kind === 'closure' ? this.closure() : this.expression(0));
    }
    this.expect(')');
    if (args.length < builtin.required) throw new ExpressionError(`${name.text} needs ${builtin.required === builtin.args.length ? '' : 'at least '}${builtin.required} argument${builtin.required === 1 ? '' : 's'}`, name.pos);
    return this.node({ type: 'call', name: name.text, args, pos: name.pos }, ...args);
  }

  /** A predicate, optionally wrapped in `{ }` (expr-lang's closure braces); `{}` and `{key: …}` remain map literals. */
  private closure(): Node {
    const pos = this.peek().pos;
    const braced = this.is('{') && !this.is('}', 1) && !(['name', 'string', 'number'].includes(this.peek(1).kind) && this.is(':', 2));
    if (braced) this.next();
    this.closures++;
    const body = this.expression(0);
    this.closures--;
    if (braced) this.expect('}');
    return this.node({ type: 'closure', body, pos }, body);
  }

  private arrayLiteral(pos: number): Node {
    const items: Node[] = [];
    while (!this.is(']')) {
      if (items.length > 0) {
        this.expect(',');
        if (this.is(']')) break; // trailing comma
      }
      items.push(this.expression(0));
    }
    this.expect(']');
    return this.node({ type: 'array', items, pos }, ...items);
  }

  /** `{a: 1, "b c": 2, 3: 4, (expr): 5}`: names, strings and numbers are keys as written; `(expr)` is computed. */
  private mapLiteral(pos: number): Node {
    const entries: { key: Node; value: Node }[] = [];
    while (!this.is('}')) {
      if (entries.length > 0) {
        this.expect(',');
        if (this.is('}')) break; // trailing comma
      }
      const token = this.peek();
      let key: Node;
      if (token.kind === 'name' || token.kind === 'string' || token.kind === 'number') {
        this.next();
        key = this.node({ type: 'literal', value: token.text, pos: token.pos });
      } else if (this.is('(')) {
        this.next();
        key = this.expression(0);
        this.expect(')');
      } else throw this.unexpected('a map key must be a name, a string, a number or a parenthesised expression');
      this.expect(':');
      entries.push({ key, value: this.expression(0) });
    }
    this.expect('}');
    return this.node({ type: 'map', entries, pos }, ...entries.flatMap((e) => [e.key, e.value]));
  }
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

class Interpreter {
  constructor(
    private readonly scope: Readonly<Record<string, unknown>>,
    private readonly budget: Budget,
  ) {}

  private charge(steps: number, pos: number): void {
    this.budget.remaining -= steps;
    if (this.budget.remaining < 0) throw new ExpressionError(`evaluation needs more than ${MAX_STEPS} steps; use smaller lists or a simpler expression`, pos);
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
        if (typeof test !== 'boolean') throw new ExpressionError(`the condition of '?:' must be a bool, not ${typeName(test)}`, node.pos);
        return this.evaluate(test ? node.then : node.else, frame);
      }
      case 'array':
        return node.items.map((item) => this.evaluate(item, frame));
      case 'map': {
        const out: JsonObject = {};
        for (const { key, value } of node.entries) {
          const k = this.evaluate(key, frame);
          if (typeof k !== 'string' && typeof k !== 'number') throw new ExpressionError(`a map key must be a string or a number, not ${typeName(k)}`, key.pos);
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
    const known = names.length === 0 ? 'no names are defined' : `known: ${names.slice(0, 10).join(', ')}${names.length > 10 ? ', …' : ''}`;
    return `unknown name '${name}' (${known})`;
  }

  /** `object.key` / `object[key]`: own properties of maps and items of arrays only, never the prototype chain. */
  private fetch(object: unknown, key: unknown, pos: number): unknown {
    if (Array.isArray(object)) {
      if (typeof key !== 'number' || !Number.isInteger(key)) throw new ExpressionError(`cannot fetch ${describeKey(key)} from array (an index must be an integer)`, pos);
      const index = key < 0 ? object.length + key : key;
      if (index < 0 || index >= object.length) throw new ExpressionError(`index out of range: ${key} (array length is ${object.length})`, pos);
      return object[index] ?? null;
    }
    if (isPlainObject(object)) {
      if (typeof key !== 'string') throw new ExpressionError(`cannot fetch ${describeKey(key)} from map (a key must be a string)`, pos);
      return Object.hasOwn(object, key) ? (object[key] ?? null) : null;
    }
    throw new ExpressionError(`cannot fetch ${describeKey(key)} from ${typeName(object)}`, pos);
  }

  /** `a[from:to]` on arrays, with expr-lang's clamping of out-of-range bounds. */
  private slice(object: unknown, from: unknown, to: unknown, pos: number): unknown {
    if (!Array.isArray(object)) throw new ExpressionError(`cannot slice ${typeName(object)}`, pos);
    const bound = (v: unknown, fallback: number) => {
      if (v === null) return fallback;
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new ExpressionError(`slice bounds must be integers, not ${typeName(v)}`, pos);
      return Math.min(Math.max(v < 0 ? object.length + v : v, 0), object.length);
    };
    const start = bound(from, 0);
    const end = Math.max(bound(to, object.length), start);
    this.charge(end - start, pos);
    return object.slice(start, end);
  }

  private unary(node: NodeOf<'unary'>, value: unknown): unknown {
    if (node.op === '!') {
      if (typeof value !== 'boolean') throw new ExpressionError(`invalid operation: ! ${typeName(value)} (needs a bool)`, node.pos);
      return !value;
    }
    if (typeof value !== 'number') throw new ExpressionError(`invalid operation: ${node.op} ${typeName(value)} (needs a number)`, node.pos);
    return node.op === '-' ? -value : value;
  }

  private binary(node: NodeOf<'binary'>, frame: Frame | null): unknown {
    const { op, pos } = node;
    const left = this.evaluate(node.left, frame);
    // The logical operators and `??` only evaluate their right side when needed.
    if (op === '&&' || op === '||') {
      if (typeof left !== 'boolean') throw new ExpressionError(`invalid operation: ${typeName(left)} ${op} … (needs bools)`, pos);
      if (left === (op === '||')) return left;
      const right = this.evaluate(node.right, frame);
      if (typeof right !== 'boolean') throw new ExpressionError(`invalid operation: bool ${op} ${typeName(right)} (needs bools)`, pos);
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
        if (!Number.isInteger(left) || !Number.isInteger(right)) throw new ExpressionError(`invalid operation: ${typeName(left)} .. ${typeName(right)} (needs integers)`, pos);
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
    if (typeof left !== 'number' || typeof right !== 'number') throw new ExpressionError(`invalid operation: ${typeName(left)} ${op} ${typeName(right)}`, pos);
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
        if (!Number.isInteger(left) || !Number.isInteger(right)) throw new ExpressionError(`invalid operation: % needs integers, not ${left} % ${right}`, pos);
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
    if (depth > MAX_VALUE_DEPTH) throw new ExpressionError(`cannot compare values nested more than ${MAX_VALUE_DEPTH} levels deep`, pos);
    a ??= null;
    b ??= null;
    if (typeof a === 'string' && typeof b === 'string') {
      this.chargeString(a, pos);
      return a === b;
    }
    if (a === b) return true;
    if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => this.equal(item, b[i], depth + 1, pos));
    if (isPlainObject(a) && isPlainObject(b)) {
      const keys = Object.keys(a);
      return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && this.equal(a[k], b[k], depth + 1, pos));
    }
    return false;
  }

  /** `needle in haystack`: an equal item of a list, an own key of a map; nothing is in nil. */
  private contains(haystack: unknown, needle: unknown, pos: number): boolean {
    if (haystack === null) return false;
    if (Array.isArray(haystack)) return haystack.some((item) => this.equal(item, needle, 0, pos));
    if (isPlainObject(haystack)) {
      if (typeof needle !== 'string') throw new ExpressionError(`cannot use ${typeName(needle)} as a key of a map in 'in'`, pos);
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
        if (!Array.isArray(value)) throw new ExpressionError(`cannot get the ${node.name} element of ${typeName(value)}`, node.pos);
        return (node.name === 'first' ? value[0] : value[value.length - 1]) ?? null;
    }
    const list = this.list(value, node.name, first!.pos);
    switch (node.name) {
      case 'filter':
        return list.filter((item, index) => {
          const keep = this.predicate(predicate!, item, index);
          if (typeof keep !== 'boolean') throw new ExpressionError(`the predicate of filter must give a bool, not ${typeName(keep)}`, predicate!.pos);
          return keep;
        });
      case 'map':
        return list.map((item, index) => this.predicate(predicate!, item, index));
      default: {
        // sortBy: compute each key once, then a stable sort of the positions (equal keys keep their order).
        const order = third ? this.evaluate(third, frame) : 'asc';
        if (order !== 'asc' && order !== 'desc') throw new ExpressionError(`the order of sortBy must be "asc" or "desc", not ${JSON.stringify(order) ?? typeName(order)}`, third!.pos);
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
    if (!Array.isArray(value)) throw new ExpressionError(`${name} needs an array as its first argument, not ${typeName(value)}`, pos);
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
    if (depth > MAX_VALUE_DEPTH) throw new ExpressionError(`the result is nested more than ${MAX_VALUE_DEPTH} levels deep`, pos);
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
      for (const [key, item] of Object.entries(value)) if (item !== undefined) setOwn(out, key, this.toJson(item, depth + 1, pos));
      return out;
    }
    throw new ExpressionError(`the result contains a value that is not JSON (${typeof value})`, pos);
  }
}

function describeKey(key: unknown): string {
  return typeof key === 'string' ? `'${key}'` : typeof key === 'number' ? String(key) : typeName(key);
}
