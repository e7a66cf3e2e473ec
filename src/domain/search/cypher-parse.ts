// The Cypher subset of the `cypher-path-subset` search step: a hand-written tokenizer and recursive-descent parser
// (the only Cypher parser on npm is an 86 MB pre-release) for read-only path queries of the shape
//
//   [UNWIND <expr> AS <name>] MATCH <pattern>[, <pattern>…] [WHERE <condition>]
//   RETURN [DISTINCT] <pathVariable> [ORDER BY <expr> [ASC|DESC], …] [SKIP <n>] [LIMIT <n>]
//
// It produces a typed, already validated AST (variables bound and of the right kind, the returned item a named
// path, constant positions constant): the SQL compiler (src/storage/queries/cypher.ts) can then trust it. Everything
// else (writes, CALL, subqueries, OPTIONAL MATCH, WITH, functions, arithmetic, several return items, …) is refused
// with a 400 `bad-content` whose detail names the problem and its offset in the query. Keywords are
// case-insensitive; variable names, labels, types and property keys are case-sensitive, as in Cypher.
import { badContent } from '../../errors.js';

/**
 * The longest path, in relations, the service walks. Unbounded lengths (`*`, `*..`, `*2..`) stop there; an explicit
 * bound above it is refused, since it could not be honoured.
 */
export const MAX_HOPS = 32;

/** Guards for a recursive-descent parser fed by clients: a longer query or deeper nesting is a 400, not a stack overflow. */
export const MAX_QUERY_LENGTH = 16_384;
const MAX_NESTING = 64;

export type Direction = 'out' | 'in' | 'both';

export interface PropertyEntry {
  offset: number;
  key: string;
  /** A constant expression (literals and parameters only). */
  value: Expr;
}

export interface NodePattern {
  offset: number;
  variable: string | null;
  /** Alternatives (`:A|B`): the element's `type` must be one of them. Empty: any node. */
  labels: string[];
  properties: PropertyEntry[];
}

export interface RelPattern {
  offset: number;
  variable: string | null;
  /** Alternatives (`:A|B`): the element's `type` must be one of them. Empty: any relation. */
  types: string[];
  /** Relative to the pattern's reading order: `out` is `-[]->`, `in` is `<-[]-`, `both` is `-[]-`. */
  direction: Direction;
  /** Null: exactly one relation (no `*`). Otherwise the bounds; `max` null means unbounded (capped at MAX_HOPS). */
  length: { min: number; max: number | null } | null;
  properties: PropertyEntry[];
}

export interface Pattern {
  offset: number;
  pathVariable: string | null;
  /** nodes.length === relations.length + 1; relations[i] joins nodes[i] and nodes[i + 1]. */
  nodes: NodePattern[];
  relations: RelPattern[];
}

export type ComparisonOp = '=' | '<>' | '<' | '<=' | '>' | '>=';
export type StringOp = 'STARTS WITH' | 'ENDS WITH' | 'CONTAINS';

export type Expr =
  | { kind: 'literal'; offset: number; value: null | boolean | number | string }
  | { kind: 'parameter'; offset: number; name: string }
  | { kind: 'variable'; offset: number; name: string }
  | { kind: 'property'; offset: number; object: Expr; key: string }
  | { kind: 'index'; offset: number; object: Expr; index: Expr }
  | { kind: 'list'; offset: number; items: Expr[] }
  | { kind: 'map'; offset: number; entries: { key: string; value: Expr }[] }
  | { kind: 'not'; offset: number; operand: Expr }
  | { kind: 'logical'; offset: number; op: 'AND' | 'OR' | 'XOR'; left: Expr; right: Expr }
  | { kind: 'comparison'; offset: number; op: ComparisonOp; left: Expr; right: Expr }
  | { kind: 'in'; offset: number; left: Expr; right: Expr }
  | { kind: 'string-match'; offset: number; op: StringOp; left: Expr; right: Expr }
  | { kind: 'is-null'; offset: number; operand: Expr; negated: boolean }
  | { kind: 'has-label'; offset: number; variable: string; labels: string[] };

export interface SortItem {
  expr: Expr;
  descending: boolean;
}

/** What a variable stands for. `relations`: the list bound by a variable-length relation (`-[r*]->`). */
export type VariableKind = 'node' | 'relation' | 'relations' | 'path' | 'unwind';

export interface CypherQuery {
  unwind: { offset: number; expr: Expr; variable: string } | null;
  patterns: Pattern[];
  where: Expr | null;
  distinct: boolean;
  /** The returned path variable. */
  returns: string;
  returnsOffset: number;
  orderBy: SortItem[];
  /** Constant expressions (integer literals or parameters). */
  skip: Expr | null;
  limit: Expr | null;
  variables: ReadonlyMap<string, VariableKind>;
}

/** The one error shape of this module: a 400 `bad-content` naming the problem and where it is. */
export function cypherError(offset: number, message: string) {
  return badContent(`Invalid Cypher query at offset ${offset}: ${message}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Tokenizer

type Token =
  | { type: 'ident'; offset: number; text: string; quoted: boolean }
  | { type: 'number'; offset: number; text: string; value: number; integer: boolean }
  | { type: 'string'; offset: number; value: string }
  | { type: 'param'; offset: number; name: string }
  | { type: 'punct'; offset: number; text: string }
  | { type: 'eof'; offset: number };

// Longest first. `-`, `<` and `>` stay single characters: the parser composes arrows (`<-`, `->`, `--`) from them,
// which keeps `a.x<-1` (a comparison) and `(a)<-[r]-(b)` (a pattern) both readable.
const PUNCTUATION = ['..', '<>', '<=', '>=', '!=', '=~', '(', ')', '[', ']', '{', '}', ',', ':', '.', '*', '|', '=', '<', '>', '-', '+', '/', '%', '^', ';', '!', '&', '?', '~'];
const IDENT_START = /[A-Za-z_\u00C0-\uFFFF]/;
const IDENT_PART = /[A-Za-z0-9_\u00C0-\uFFFF]/;

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (source.startsWith('//', i)) {
      const end = source.indexOf('\n', i);
      i = end === -1 ? source.length : end + 1;
      continue;
    }
    if (source.startsWith('/*', i)) {
      const end = source.indexOf('*/', i + 2);
      if (end === -1) throw cypherError(i, 'unterminated comment');
      i = end + 2;
      continue;
    }
    const start = i;
    if (IDENT_START.test(c)) {
      while (i < source.length && IDENT_PART.test(source[i]!)) i++;
      tokens.push({ type: 'ident', offset: start, text: source.slice(start, i), quoted: false });
    } else if (c === '`') {
      const [text, next] = readQuotedName(source, i);
      tokens.push({ type: 'ident', offset: start, text, quoted: true });
      i = next;
    } else if (/[0-9]/.test(c)) {
      while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      let integer = true;
      // `1..3` is 1, `..`, 3: a dot only starts a fraction when a digit follows it.
      if (source[i] === '.' && /[0-9]/.test(source[i + 1] ?? '')) {
        integer = false;
        i++;
        while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      }
      if (/[eE]/.test(source[i] ?? '') && /[0-9]/.test(source[i + 1] === '-' || source[i + 1] === '+' ? (source[i + 2] ?? '') : (source[i + 1] ?? ''))) {
        integer = false;
        i += source[i + 1] === '-' || source[i + 1] === '+' ? 2 : 1;
        while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      }
      if (i < source.length && IDENT_PART.test(source[i]!)) throw cypherError(start, `malformed number '${source.slice(start, i + 1)}'`);
      const text = source.slice(start, i);
      const value = Number(text);
      if (integer && !Number.isSafeInteger(value)) throw cypherError(start, `integer ${text} is too large`);
      tokens.push({ type: 'number', offset: start, text, value, integer });
    } else if (c === "'" || c === '"') {
      const [value, next] = readString(source, i);
      tokens.push({ type: 'string', offset: start, value });
      i = next;
    } else if (c === '$') {
      i++;
      let name: string;
      if (source[i] === '`') {
        [name, i] = readQuotedName(source, i);
      } else {
        const from = i;
        while (i < source.length && IDENT_PART.test(source[i]!)) i++;
        name = source.slice(from, i);
      }
      if (name === '') throw cypherError(start, "'$' must be followed by a parameter name");
      tokens.push({ type: 'param', offset: start, name });
    } else {
      const text = PUNCTUATION.find((p) => source.startsWith(p, i));
      if (text === undefined) throw cypherError(start, `unexpected character '${c}'`);
      tokens.push({ type: 'punct', offset: start, text });
      i += text.length;
    }
  }
  tokens.push({ type: 'eof', offset: source.length });
  return tokens;
}

function readQuotedName(source: string, open: number): [string, number] {
  let text = '';
  let i = open + 1;
  for (;;) {
    if (i >= source.length) throw cypherError(open, 'unterminated `quoted name`');
    if (source[i] === '`') {
      if (source[i + 1] === '`') {
        text += '`';
        i += 2;
        continue;
      }
      break;
    }
    text += source[i++];
  }
  if (text === '') throw cypherError(open, 'empty `quoted name`');
  return [text, i + 1];
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '\\': '\\', "'": "'", '"': '"' };

function readString(source: string, open: number): [string, number] {
  const quote = source[open];
  let value = '';
  let i = open + 1;
  for (;;) {
    if (i >= source.length) throw cypherError(open, 'unterminated string literal');
    const c = source[i]!;
    if (c === quote) return [value, i + 1];
    if (c === '\\') {
      const e = source[i + 1] ?? '';
      if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(source.slice(i + 2, i + 6))) {
        value += String.fromCharCode(parseInt(source.slice(i + 2, i + 6), 16));
        i += 6;
        continue;
      }
      if (!(e in ESCAPES)) throw cypherError(i, `unknown escape sequence '\\${e}'`);
      value += ESCAPES[e];
      i += 2;
      continue;
    }
    value += c;
    i++;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Parser

/** Clauses and keywords outside the subset, with the reason given for refusing them. */
const WRITE_CLAUSES = new Set(['CREATE', 'MERGE', 'SET', 'DELETE', 'DETACH', 'REMOVE', 'FOREACH', 'INSERT', 'LOAD', 'DROP', 'ALTER', 'GRANT', 'DENY', 'REVOKE', 'TERMINATE']);

function refusal(word: string): string {
  const upper = word.toUpperCase();
  if (WRITE_CLAUSES.has(upper)) return `${upper} is not supported: only read-only path queries are`;
  if (upper === 'CALL') return 'CALL (procedures and subqueries) is not supported';
  if (upper === 'OPTIONAL') return 'OPTIONAL MATCH is not supported';
  return 'WITH is not supported';
}

/** Words that end or continue a clause, so never a variable where an expression is expected (quote them: `as`). */
const RESERVED = new Set(['MATCH', 'WHERE', 'RETURN', 'UNWIND', 'AS', 'ORDER', 'BY', 'SKIP', 'LIMIT', 'AND', 'OR', 'XOR', 'NOT', 'IN', 'IS', 'DISTINCT', 'STARTS', 'ENDS', 'CONTAINS', 'ASC', 'DESC', 'ASCENDING', 'DESCENDING', 'UNION']);

class Parser {
  private pos = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  /** Runs a nested parse (parentheses, lists, maps, NOT), refusing nesting deeper than MAX_NESTING. */
  private nested<T>(offset: number, parse: () => T): T {
    if (++this.depth > MAX_NESTING) throw cypherError(offset, `the query is nested more than ${MAX_NESTING} levels deep`);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private get token(): Token {
    return this.tokens[this.pos]!;
  }
  private peek(ahead = 1): Token {
    return this.tokens[Math.min(this.pos + ahead, this.tokens.length - 1)]!;
  }
  private next(): Token {
    const t = this.token;
    if (t.type !== 'eof') this.pos++;
    return t;
  }

  private isKeyword(word: string, t: Token = this.token): boolean {
    return t.type === 'ident' && !t.quoted && t.text.toUpperCase() === word;
  }
  private acceptKeyword(word: string): boolean {
    if (!this.isKeyword(word)) return false;
    this.pos++;
    return true;
  }
  private isPunct(text: string, t: Token = this.token): boolean {
    return t.type === 'punct' && t.text === text;
  }
  private acceptPunct(text: string): boolean {
    if (!this.isPunct(text)) return false;
    this.pos++;
    return true;
  }
  private expectPunct(text: string): void {
    if (!this.acceptPunct(text)) throw this.unexpected(`'${text}'`);
  }

  /** "expected X but found Y", or the reason a clause keyword is refused when Y is one. */
  unexpected(expected: string, t: Token = this.token): Error {
    if (t.type === 'ident' && !t.quoted) {
      const upper = t.text.toUpperCase();
      if (WRITE_CLAUSES.has(upper) || upper === 'CALL' || upper === 'OPTIONAL' || upper === 'WITH') return cypherError(t.offset, refusal(upper));
    }
    return cypherError(t.offset, `expected ${expected} but found ${describe(t)}`);
  }

  parseQuery(): Omit<CypherQuery, 'variables'> {
    let unwind: CypherQuery['unwind'] = null;
    if (this.isKeyword('UNWIND')) {
      const offset = this.next().offset;
      const expr = this.parseExpr();
      if (!this.acceptKeyword('AS')) throw this.unexpected('AS');
      unwind = { offset, expr, variable: this.parseName('a variable name') };
      if (this.isKeyword('UNWIND')) throw cypherError(this.token.offset, 'only one UNWIND is supported');
    }
    if (!this.acceptKeyword('MATCH')) throw this.unexpected(unwind ? 'MATCH' : 'MATCH or UNWIND');
    const patterns = [this.parsePattern()];
    while (this.acceptPunct(',')) patterns.push(this.parsePattern());
    if (this.isKeyword('MATCH')) throw cypherError(this.token.offset, 'only one MATCH clause is supported (separate patterns with commas)');
    let where: Expr | null = null;
    if (this.acceptKeyword('WHERE')) where = this.parseExpr();
    if (!this.isKeyword('RETURN')) throw this.unexpected(where ? 'RETURN' : 'WHERE or RETURN');
    this.next();
    const distinct = this.acceptKeyword('DISTINCT');
    if (this.isPunct('*')) throw cypherError(this.token.offset, 'RETURN * is not supported: return one path variable');
    const item = this.parseExpr();
    if (item.kind !== 'variable') throw cypherError(item.offset, 'RETURN must name a path variable (MATCH path = (…) … RETURN path)');
    if (this.acceptKeyword('AS')) this.parseName('an alias');
    if (this.isPunct(',')) throw cypherError(this.token.offset, 'several RETURN items are not supported: return one path variable');
    const orderBy: SortItem[] = [];
    if (this.acceptKeyword('ORDER')) {
      if (!this.acceptKeyword('BY')) throw this.unexpected('BY');
      do {
        const expr = this.parseExpr();
        let descending = false;
        if (this.acceptKeyword('DESC') || this.acceptKeyword('DESCENDING')) descending = true;
        else if (!this.acceptKeyword('ASC')) this.acceptKeyword('ASCENDING');
        orderBy.push({ expr, descending });
      } while (this.acceptPunct(','));
    }
    let skip: Expr | null = null;
    let limit: Expr | null = null;
    if (this.acceptKeyword('SKIP') || this.acceptKeyword('OFFSET')) skip = this.parseExpr();
    if (this.acceptKeyword('LIMIT')) limit = this.parseExpr();
    this.acceptPunct(';');
    if (this.token.type !== 'eof') throw this.unexpected('the end of the query');
    return { unwind, patterns, where, distinct, returns: item.name, returnsOffset: item.offset, orderBy, skip, limit };
  }

  private parseName(what: string): string {
    const t = this.token;
    if (t.type !== 'ident') throw this.unexpected(what);
    this.pos++;
    return t.text;
  }

  private parsePattern(): Pattern {
    const offset = this.token.offset;
    let pathVariable: string | null = null;
    if (this.token.type === 'ident' && this.isPunct('=', this.peek())) {
      pathVariable = this.parseName('a path variable');
      this.next();
    } else if (this.token.type === 'ident' && this.isPunct('(', this.peek())) {
      throw cypherError(this.token.offset, `${this.token.text}(…) is not supported: functions such as shortestPath are not part of the subset`);
    }
    const { nodes, relations } = this.parsePatternElement();
    return { offset, pathVariable, nodes, relations };
  }

  private parsePatternElement(): Pick<Pattern, 'nodes' | 'relations'> {
    // `((a)-->(b))`: parentheses around a whole pattern (a node pattern never starts with a parenthesis).
    if (this.isPunct('(') && this.isPunct('(', this.peek())) {
      const offset = this.next().offset;
      const inner = this.nested(offset, () => this.parsePatternElement());
      this.expectPunct(')');
      if (this.isPunct('{') || this.isPunct('+') || this.isPunct('*'))
        throw cypherError(this.token.offset, 'quantified path patterns are not supported (use a variable-length relation, -[:TYPE*1..3]->)');
      return inner;
    }
    const nodes = [this.parseNode()];
    const relations: RelPattern[] = [];
    while (this.isPunct('-') || this.isPunct('<')) {
      relations.push(this.parseRelation());
      nodes.push(this.parseNode());
    }
    return { nodes, relations };
  }

  private parseNode(): NodePattern {
    const offset = this.token.offset;
    if (!this.isPunct('(')) throw this.unexpected("a node pattern '('");
    this.next();
    let variable: string | null = null;
    if (this.token.type === 'ident') variable = this.parseName('a variable');
    const labels = this.parseLabels('node');
    const properties = this.isPunct('{') ? this.parseProperties() : [];
    if (this.isKeyword('WHERE')) throw cypherError(this.token.offset, 'WHERE inside a node pattern is not supported (use the WHERE clause)');
    this.expectPunct(')');
    return { offset, variable, labels, properties };
  }

  /** `:A`, `:A|B`, `:A|:B` (alternatives). A node has one type, so `:A:B` is refused rather than never matching. */
  private parseLabels(what: 'node' | 'relation'): string[] {
    if (!this.acceptPunct(':')) return [];
    const labels = [this.parseName(what === 'node' ? 'a label' : 'a relation type')];
    while (this.acceptPunct('|')) {
      this.acceptPunct(':');
      labels.push(this.parseName(what === 'node' ? 'a label' : 'a relation type'));
    }
    if (this.isPunct(':'))
      throw cypherError(this.token.offset, `an element has exactly one type: ${what === 'node' ? ':A:B' : 'several types'} cannot match; write :A|B for alternatives`);
    if (this.isPunct('&') || this.isPunct('!') || this.isPunct('%'))
      throw cypherError(this.token.offset, `label expressions with '${(this.token as { text: string }).text}' are not supported`);
    return labels;
  }

  private parseProperties(): PropertyEntry[] {
    this.expectPunct('{');
    const entries: PropertyEntry[] = [];
    if (!this.isPunct('}')) {
      do {
        const offset = this.token.offset;
        const key = this.parseName('a property key');
        this.expectPunct(':');
        entries.push({ offset, key, value: this.parseExpr() });
      } while (this.acceptPunct(','));
    }
    this.expectPunct('}');
    return entries;
  }

  /** `-[…]->`, `<-[…]-`, `-[…]-`, `-->`, `<--`, `--` (and `<-->`, which Cypher reads as either direction). */
  private parseRelation(): RelPattern {
    const offset = this.token.offset;
    const left = this.acceptPunct('<');
    this.expectPunct('-');
    let variable: string | null = null;
    let types: string[] = [];
    let length: RelPattern['length'] = null;
    let properties: PropertyEntry[] = [];
    if (this.acceptPunct('[')) {
      if (this.token.type === 'ident') variable = this.parseName('a variable');
      types = this.parseLabels('relation');
      if (this.isPunct('*')) length = this.parseLength();
      if (this.isPunct('{')) properties = this.parseProperties();
      if (this.isKeyword('WHERE')) throw cypherError(this.token.offset, 'WHERE inside a relation pattern is not supported (use the WHERE clause)');
      this.expectPunct(']');
    }
    this.expectPunct('-');
    const right = this.acceptPunct('>');
    const direction: Direction = left === right ? 'both' : right ? 'out' : 'in';
    return { offset, variable, types, direction, length, properties };
  }

  /** `*`, `*2`, `*..3`, `*2..`, `*1..3` (`*..` too). Bounds are checked against MAX_HOPS by `validate`. */
  private parseLength(): { min: number; max: number | null } {
    this.expectPunct('*');
    const bound = (): number | null => {
      const t = this.token;
      if (t.type !== 'number') return null;
      if (!t.integer || t.value < 0) throw cypherError(t.offset, `a relation length must be a non-negative integer, not ${t.text}`);
      this.pos++;
      return t.value;
    };
    const min = bound();
    if (this.acceptPunct('..')) return { min: min ?? 1, max: bound() };
    return min === null ? { min: 1, max: null } : { min, max: min };
  }

  // Expressions, loosest binding first: OR, XOR, AND, NOT, comparison, predicates (IN, STARTS WITH, IS NULL, …),
  // unary minus, postfix (.key, [index], :Label), atoms.

  parseExpr(): Expr {
    return this.parseBinary(0);
  }

  private parseBinary(level: number): Expr {
    const ops = ['OR', 'XOR', 'AND'] as const;
    if (level === ops.length) return this.parseNot();
    let left = this.parseBinary(level + 1);
    const op = ops[level]!;
    while (this.isKeyword(op)) {
      const offset = this.next().offset;
      left = { kind: 'logical', offset, op, left, right: this.parseBinary(level + 1) };
    }
    return left;
  }

  private parseNot(): Expr {
    if (this.isKeyword('NOT')) {
      const offset = this.next().offset;
      return { kind: 'not', offset, operand: this.nested(offset, () => this.parseNot()) };
    }
    return this.parseComparison();
  }

  private comparisonOp(): ComparisonOp | null {
    const t = this.token;
    if (t.type !== 'punct') return null;
    if (t.text === '=~') throw cypherError(t.offset, 'regular expressions (=~) are not supported');
    if (t.text === '!=') return '<>';
    return (['=', '<>', '<', '<=', '>', '>='] as const).find((op) => op === t.text) ?? null;
  }

  private parseComparison(): Expr {
    const left = this.parsePredicate();
    const op = this.comparisonOp();
    if (op === null) return left;
    const offset = this.next().offset;
    const right = this.parsePredicate();
    if (this.comparisonOp() !== null) throw cypherError(this.token.offset, 'chained comparisons (a < b < c) are not supported; use AND');
    return { kind: 'comparison', offset, op, left, right };
  }

  private parsePredicate(): Expr {
    let left = this.parseUnary();
    for (;;) {
      const offset = this.token.offset;
      if (this.acceptKeyword('IN')) {
        left = { kind: 'in', offset, left, right: this.parseUnary() };
      } else if (this.isKeyword('STARTS') || this.isKeyword('ENDS')) {
        const word = (this.next() as { text: string }).text.toUpperCase() as 'STARTS' | 'ENDS';
        if (!this.acceptKeyword('WITH')) throw this.unexpected(`WITH after ${word}`);
        left = { kind: 'string-match', offset, op: `${word} WITH`, left, right: this.parseUnary() };
      } else if (this.acceptKeyword('CONTAINS')) {
        left = { kind: 'string-match', offset, op: 'CONTAINS', left, right: this.parseUnary() };
      } else if (this.acceptKeyword('IS')) {
        const negated = this.acceptKeyword('NOT');
        if (!this.acceptKeyword('NULL')) throw this.unexpected(negated ? 'NULL' : 'NULL or NOT NULL');
        left = { kind: 'is-null', offset, operand: left, negated };
      } else {
        return left;
      }
    }
  }

  private parseUnary(): Expr {
    const t = this.token;
    if (this.isPunct('-') || this.isPunct('+')) {
      const sign = this.isPunct('-') ? -1 : 1;
      const operand = this.peek();
      if (operand.type === 'number') {
        this.pos += 2;
        return this.parsePostfix({ kind: 'literal', offset: t.offset, value: sign * operand.value || 0 });
      }
      throw cypherError(t.offset, 'arithmetic is not supported');
    }
    const expr = this.parsePostfix(this.parseAtom());
    const after = this.token;
    if (after.type === 'punct' && ['+', '-', '*', '/', '%', '^'].includes(after.text)) throw cypherError(after.offset, `arithmetic ('${after.text}') is not supported`);
    return expr;
  }

  private parsePostfix(expr: Expr): Expr {
    for (;;) {
      const offset = this.token.offset;
      if (this.acceptPunct('.')) {
        expr = { kind: 'property', offset, object: expr, key: this.parseName('a property key') };
      } else if (this.acceptPunct('[')) {
        if (this.isPunct('..')) throw cypherError(this.token.offset, 'list slices are not supported');
        const index = this.nested(offset, () => this.parseExpr());
        if (this.isPunct('..')) throw cypherError(this.token.offset, 'list slices are not supported');
        this.expectPunct(']');
        expr = { kind: 'index', offset, object: expr, index };
      } else if (this.isPunct(':') && expr.kind === 'variable') {
        this.next();
        const labels = [this.parseName('a label')];
        while (this.acceptPunct('|')) {
          this.acceptPunct(':');
          labels.push(this.parseName('a label'));
        }
        if (this.isPunct(':')) throw cypherError(this.token.offset, 'an element has exactly one type: n:A:B cannot match; write n:A|B for alternatives');
        expr = { kind: 'has-label', offset, variable: expr.name, labels };
      } else {
        return expr;
      }
    }
  }

  private parseAtom(): Expr {
    const t = this.token;
    switch (t.type) {
      case 'number':
        this.pos++;
        return { kind: 'literal', offset: t.offset, value: t.value };
      case 'string':
        this.pos++;
        return { kind: 'literal', offset: t.offset, value: t.value };
      case 'param':
        this.pos++;
        return { kind: 'parameter', offset: t.offset, name: t.name };
      case 'punct':
        if (t.text === '[') {
          this.pos++;
          const items: Expr[] = [];
          if (!this.isPunct(']')) {
            do items.push(this.nested(t.offset, () => this.parseExpr()));
            while (this.acceptPunct(','));
          }
          if (this.isPunct('|') || this.isKeyword('WHERE')) throw cypherError(this.token.offset, 'list comprehensions are not supported');
          this.expectPunct(']');
          return { kind: 'list', offset: t.offset, items };
        }
        if (t.text === '(') {
          this.pos++;
          const inner = this.nested(t.offset, () => this.parseExpr());
          if (this.isPunct('-') || this.isPunct('<') || this.isPunct(':'))
            throw cypherError(this.token.offset, 'pattern expressions in WHERE are not supported');
          this.expectPunct(')');
          if (this.isPunct('-') || this.isPunct('<')) throw cypherError(this.token.offset, 'pattern expressions in WHERE are not supported');
          return inner;
        }
        if (t.text === '{')
          return { kind: 'map', offset: t.offset, entries: this.nested(t.offset, () => this.parseProperties()).map(({ key, value }) => ({ key, value })) };
        throw this.unexpected('an expression');
      case 'ident': {
        const upper = t.text.toUpperCase();
        if (!t.quoted) {
          if (RESERVED.has(upper)) throw this.unexpected('an expression');
          if (upper === 'TRUE' || upper === 'FALSE' || upper === 'NULL') {
            this.pos++;
            return { kind: 'literal', offset: t.offset, value: upper === 'NULL' ? null : upper === 'TRUE' };
          }
          if (upper === 'CASE') throw cypherError(t.offset, 'CASE expressions are not supported');
          if (this.isPunct('{', this.peek())) throw cypherError(t.offset, `subqueries (${upper} { … }) are not supported`);
          if (WRITE_CLAUSES.has(upper) || upper === 'CALL' || upper === 'OPTIONAL' || upper === 'WITH') throw cypherError(t.offset, refusal(upper));
        }
        if (this.isPunct('(', this.peek())) throw cypherError(t.offset, `functions are not supported (${t.text}(…))`);
        this.pos++;
        return { kind: 'variable', offset: t.offset, name: t.text };
      }
      case 'eof':
        throw this.unexpected('an expression');
    }
  }
}

function describe(t: Token): string {
  switch (t.type) {
    case 'eof':
      return 'the end of the query';
    case 'ident':
      return t.quoted ? `\`${t.text}\`` : `'${t.text}'`;
    case 'number':
      return t.text;
    case 'string':
      return 'a string';
    case 'param':
      return `$${t.name}`;
    case 'punct':
      return `'${t.text}'`;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Validation: the semantic rules of the subset, so that the compiler can trust the AST.

/** Parses and validates a query of the subset; throws a 400 `bad-content` otherwise. */
export function parseCypher(source: string): CypherQuery {
  if (source.length > MAX_QUERY_LENGTH) throw cypherError(MAX_QUERY_LENGTH, `the query is longer than ${MAX_QUERY_LENGTH} characters`);
  const parsed = new Parser(tokenize(source)).parseQuery();
  return validate(parsed);
}

function validate(q: Omit<CypherQuery, 'variables'>): CypherQuery {
  const variables = new Map<string, VariableKind>();
  const declare = (name: string, kind: VariableKind, offset: number) => {
    const known = variables.get(name);
    if (known === undefined) {
      variables.set(name, kind);
      return;
    }
    // A node variable may appear several times (the same node); anything else is bound once.
    if (known === 'node' && kind === 'node') return;
    if (known === kind) throw cypherError(offset, `variable '${name}' is bound twice (a ${kind} variable can be bound once)`);
    throw cypherError(offset, `variable '${name}' is already bound as a ${known}, it cannot also be a ${kind}`);
  };
  // Property maps may use the UNWIND variable (`(p {id: element.id})`), not pattern variables.
  const unwindOnly = new Set<string>();
  if (q.unwind) {
    requireConstant(q.unwind.expr, 'the UNWIND list');
    declare(q.unwind.variable, 'unwind', q.unwind.offset);
    unwindOnly.add(q.unwind.variable);
  }
  for (const pattern of q.patterns) {
    for (const node of pattern.nodes) {
      if (node.variable !== null) declare(node.variable, 'node', node.offset);
      for (const p of node.properties) requireConstant(p.value, `the value of property '${p.key}'`, unwindOnly);
    }
    let minimum = 0;
    for (const rel of pattern.relations) {
      if (rel.variable !== null) declare(rel.variable, rel.length ? 'relations' : 'relation', rel.offset);
      for (const p of rel.properties) requireConstant(p.value, `the value of property '${p.key}'`, unwindOnly);
      if (rel.length) {
        const { min, max } = rel.length;
        if (max !== null && max < min) throw cypherError(rel.offset, `the relation length *${min}..${max} has its upper bound below its lower bound`);
        if ((max ?? min) > MAX_HOPS) throw cypherError(rel.offset, `a relation length above ${MAX_HOPS} is not supported (paths have at most ${MAX_HOPS} relations)`);
      }
      minimum += rel.length?.min ?? 1;
    }
    if (minimum > MAX_HOPS) throw cypherError(pattern.offset, `the pattern needs more than ${MAX_HOPS} relations (paths have at most ${MAX_HOPS})`);
    if (pattern.pathVariable !== null) declare(pattern.pathVariable, 'path', pattern.offset);
  }
  const returned = variables.get(q.returns);
  const returnOffset = q.returnsOffset;
  if (returned === undefined) throw cypherError(returnOffset, `RETURN names '${q.returns}', which MATCH does not bind (RETURN a path variable: MATCH path = (…) … RETURN path)`);
  if (returned !== 'path') throw cypherError(returnOffset, `RETURN must name a path variable (MATCH path = (…) … RETURN path); '${q.returns}' is a ${returned}`);
  if (q.where) checkExpression(q.where, variables);
  for (const item of q.orderBy) checkExpression(item.expr, variables);
  if (q.skip) requireConstant(q.skip, 'SKIP');
  if (q.limit) requireConstant(q.limit, 'LIMIT');
  return { ...q, variables };
}

/**
 * Constant positions (UNWIND list, property maps, SKIP, LIMIT): literals, lists and parameters with member access
 * and indexing; property maps may also use the variables in `allowed` (the UNWIND variable).
 */
function requireConstant(expr: Expr, what: string, allowed: ReadonlySet<string> = new Set()): void {
  switch (expr.kind) {
    case 'literal':
    case 'parameter':
      return;
    case 'variable':
      if (allowed.has(expr.name)) return;
      throw cypherError(expr.offset, `${what} must be a literal or a parameter${allowed.size > 0 ? ' (or use the UNWIND variable)' : ''}, not the variable '${expr.name}'`);
    case 'list':
      return expr.items.forEach((item) => requireConstant(item, what, allowed));
    case 'map':
      return expr.entries.forEach((entry) => requireConstant(entry.value, what, allowed));
    case 'property':
      return requireConstant(expr.object, what, allowed);
    case 'index':
      requireConstant(expr.object, what, allowed);
      return requireConstant(expr.index, what, allowed);
    default:
      throw cypherError(expr.offset, `${what} must be a literal or a parameter`);
  }
}

/** WHERE and ORDER BY: every variable bound, and used the way its kind allows. */
function checkExpression(expr: Expr, variables: ReadonlyMap<string, VariableKind>): void {
  const kindOf = (name: string, offset: number): VariableKind => {
    const kind = variables.get(name);
    if (kind === undefined) throw cypherError(offset, `variable '${name}' is not defined`);
    return kind;
  };
  const visit = (e: Expr): void => {
    switch (e.kind) {
      case 'literal':
      case 'parameter':
        return;
      case 'variable': {
        const kind = kindOf(e.name, e.offset);
        if (kind === 'path') throw cypherError(e.offset, `path variable '${e.name}' can only be returned`);
        if (kind === 'relations') throw cypherError(e.offset, `'${e.name}' is a variable-length relation (a list of relations) and cannot be used here`);
        return;
      }
      case 'property':
      case 'index':
        visit(e.object);
        if (e.kind === 'index') {
          visit(e.index);
          if (e.object.kind === 'variable' && variables.get(e.object.name) !== 'unwind') throw cypherError(e.offset, `'${e.object.name}' cannot be indexed`);
        }
        return;
      case 'list':
        return e.items.forEach(visit);
      case 'map':
        return e.entries.forEach((entry) => visit(entry.value));
      case 'not':
        return visit(e.operand);
      case 'is-null':
        return visit(e.operand);
      case 'logical':
      case 'comparison':
      case 'in':
      case 'string-match':
        visit(e.left);
        return visit(e.right);
      case 'has-label': {
        const kind = kindOf(e.variable, e.offset);
        if (kind !== 'node' && kind !== 'relation') throw cypherError(e.offset, `'${e.variable}' is a ${kind}; only nodes and relations have a type`);
        return;
      }
    }
  };
  visit(expr);
}
