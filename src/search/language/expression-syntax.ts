// The syntax of the `{{ … }}` expressions: a precedence-climbing parser of their tokens (expression-tokens.ts) into a
// tree.
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

import { ExpressionError, type Token, tokenize } from './expression-tokens.js';

/** Parser recursion (parentheses, brackets, calls, operands of higher precedence) deeper than this is refused. */
export const MAX_NESTING = 64;
/** Depth of the syntax tree; long left-leaning chains like `a.b.c…` or `1 + 2 + 3 …` count here, not in MAX_NESTING. */
export const MAX_TREE_DEPTH = 256;

export type Node =
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

export type NodeOf<T extends Node['type']> = Extract<Node, { type: T }>;
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

export class Parser {
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
    const what =
      token.kind === 'eof'
        ? 'unexpected end of expression'
        : `unexpected ${token.kind === 'string' ? 'string' : `'${token.text}'`}`;
    return new ExpressionError(hint ? `${what}, ${hint}` : what, token.pos);
  }

  /** Builds a node, computing its depth from its children and refusing trees too deep to evaluate safely. */
  private node<T extends Node>(fields: DistributiveOmit<T, 'depth'>, ...children: (Node | null)[]): T {
    const depth = 1 + children.reduce((max, c) => Math.max(max, c?.depth ?? 0), 0);
    if (depth > MAX_TREE_DEPTH)
      throw new ExpressionError(`expression is nested more than ${MAX_TREE_DEPTH} levels deep`, fields.pos);
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
    if (++this.nesting > MAX_NESTING)
      throw new ExpressionError(`expression is nested more than ${MAX_NESTING} levels deep`, this.peek().pos);
    let left = this.unary();
    let previous = '';
    for (;;) {
      const token = this.peek();
      const negated = this.is('not') && this.is('in', 1);
      if (this.is('not') && !negated) throw this.unexpected("'not' here must be followed by 'in'");
      const op = negated ? 'in' : this.binaryOperator();
      if (op === null || BINARY[op]!.precedence < minPrecedence) break;
      if (previous === '??' && op !== '??')
        throw new ExpressionError(`'${token.text}' and '??' cannot be mixed; add parentheses`, token.pos);
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
      root =
        root === null
          ? comparison
          : this.node({ type: 'binary', op: '&&', left: root, right: comparison, pos }, root, comparison);
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
      return this.postfix(
        this.node({ type: 'unary', op: logical ? '!' : token.text, operand, pos: token.pos }, operand),
      );
    }
    if (this.is('(')) {
      this.next();
      const inner = this.expression(0);
      this.expect(')');
      return this.postfix(inner);
    }
    if (this.is('#') || this.is('.')) {
      if (this.closures === 0)
        throw new ExpressionError(
          `'${token.text}' can only be used inside the predicate of filter, map or sortBy`,
          token.pos,
        );
      let index = false;
      if (this.is('#')) {
        this.next();
        // `#index` is the index of the current item; the name must follow `#` directly.
        const name = this.peek();
        if (name.kind === 'name' && name.pos === token.pos + 1 && !KEYWORDS.has(name.text)) {
          if (name.text !== 'index')
            throw new ExpressionError(`unknown pointer '#${name.text}' (only '#' and '#index' exist)`, token.pos);
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
        if (++this.nesting > MAX_NESTING)
          throw new ExpressionError(`expression is nested more than ${MAX_NESTING} levels deep`, token.pos);
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
    if (!builtin)
      throw new ExpressionError(
        `unknown function '${name.text}' (known: ${Object.keys(BUILTINS).join(', ')})`,
        name.pos,
      );
    this.expect('(');
    const args: Node[] = [];
    while (!this.is(')')) {
      if (args.length > 0) {
        this.expect(',');
        if (this.is(')')) break; // trailing comma
      }
      const kind = builtin.args[args.length];
      if (kind === undefined)
        throw new ExpressionError(`${name.text} takes at most ${builtin.args.length} arguments`, this.peek().pos);
      args.push(kind === 'closure' ? this.closure() : this.expression(0));
    }
    this.expect(')');
    if (args.length < builtin.required)
      throw new ExpressionError(
        `${name.text} needs ${builtin.required === builtin.args.length ? '' : 'at least '}${builtin.required} argument${builtin.required === 1 ? '' : 's'}`,
        name.pos,
      );
    return this.node({ type: 'call', name: name.text, args, pos: name.pos }, ...args);
  }

  /** A predicate, optionally wrapped in `{ }` (expr-lang's closure braces); `{}` and `{key: …}` remain map literals. */
  private closure(): Node {
    const pos = this.peek().pos;
    const braced =
      this.is('{') &&
      !this.is('}', 1) &&
      !(['name', 'string', 'number'].includes(this.peek(1).kind) && this.is(':', 2));
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
