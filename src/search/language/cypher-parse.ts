// The Cypher subset of the `cypher-path-subset` search step: a hand-written tokenizer and recursive-descent parser
// (the only Cypher parser on npm is an 86 MB pre-release) for read-only path queries of the shape
//
//   [UNWIND <expr> AS <name>] MATCH <pattern>[, <pattern>…] [WHERE <condition>]
//   RETURN [DISTINCT] <pathVariable> [ORDER BY <expr> [ASC|DESC], …] [SKIP <n>] [LIMIT <n>]
//
// Everything else (writes, CALL, subqueries, OPTIONAL MATCH, WITH, functions, arithmetic, several return items, …)
// is a 400 `bad-content` naming the problem and its offset. Keywords are case-insensitive; names, labels, types and
// property keys are case-sensitive, as in Cypher.
import {
  type ComparisonOp,
  type CypherQuery,
  cypherError,
  type Direction,
  type Expr,
  type NodePattern,
  type Pattern,
  type PropertyEntry,
  type RelPattern,
  type SortItem,
} from './cypher-ast.js';
import { type Token, tokenize } from './cypher-tokens.js';
import { validate } from './cypher-validate.js';

/** Guards for a recursive-descent parser fed by clients: a longer query or deeper nesting is a 400, not a stack overflow. */
export const MAX_QUERY_LENGTH = 16_384;
const MAX_NESTING = 64;

/** Clauses and keywords outside the subset, with the reason given for refusing them. */
const WRITE_CLAUSES = new Set([
  'CREATE',
  'MERGE',
  'SET',
  'DELETE',
  'DETACH',
  'REMOVE',
  'FOREACH',
  'INSERT',
  'LOAD',
  'DROP',
  'ALTER',
  'GRANT',
  'DENY',
  'REVOKE',
  'TERMINATE',
]);

function refusal(word: string): string {
  const upper = word.toUpperCase();
  if (WRITE_CLAUSES.has(upper)) return `${upper} is not supported: only read-only path queries are`;
  if (upper === 'CALL') return 'CALL (procedures and subqueries) is not supported';
  if (upper === 'OPTIONAL') return 'OPTIONAL MATCH is not supported';
  return 'WITH is not supported';
}

/** Words that end or continue a clause, so never a variable where an expression is expected (quote them: `as`). */
const RESERVED = new Set([
  'MATCH',
  'WHERE',
  'RETURN',
  'UNWIND',
  'AS',
  'ORDER',
  'BY',
  'SKIP',
  'LIMIT',
  'AND',
  'OR',
  'XOR',
  'NOT',
  'IN',
  'IS',
  'DISTINCT',
  'STARTS',
  'ENDS',
  'CONTAINS',
  'ASC',
  'DESC',
  'ASCENDING',
  'DESCENDING',
  'UNION',
]);

class Parser {
  private pos = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  /** Runs a nested parse (parentheses, lists, maps, NOT), refusing nesting deeper than MAX_NESTING. */
  private nested<T>(offset: number, parse: () => T): T {
    if (++this.depth > MAX_NESTING)
      throw cypherError(offset, `the query is nested more than ${MAX_NESTING} levels deep`);
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
      if (WRITE_CLAUSES.has(upper) || upper === 'CALL' || upper === 'OPTIONAL' || upper === 'WITH')
        return cypherError(t.offset, refusal(upper));
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
    if (this.isKeyword('MATCH'))
      throw cypherError(this.token.offset, 'only one MATCH clause is supported (separate patterns with commas)');
    let where: Expr | null = null;
    if (this.acceptKeyword('WHERE')) where = this.parseExpr();
    if (!this.isKeyword('RETURN')) throw this.unexpected(where ? 'RETURN' : 'WHERE or RETURN');
    this.next();
    const distinct = this.acceptKeyword('DISTINCT');
    if (this.isPunct('*')) throw cypherError(this.token.offset, 'RETURN * is not supported: return one path variable');
    const item = this.parseExpr();
    if (item.kind !== 'variable')
      throw cypherError(item.offset, 'RETURN must name a path variable (MATCH path = (…) … RETURN path)');
    if (this.acceptKeyword('AS')) this.parseName('an alias');
    if (this.isPunct(','))
      throw cypherError(this.token.offset, 'several RETURN items are not supported: return one path variable');
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
      throw cypherError(
        this.token.offset,
        `${this.token.text}(…) is not supported: functions such as shortestPath are not part of the subset`,
      );
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
        throw cypherError(
          this.token.offset,
          'quantified path patterns are not supported (use a variable-length relation, -[:TYPE*1..3]->)',
        );
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
    if (this.isKeyword('WHERE'))
      throw cypherError(this.token.offset, 'WHERE inside a node pattern is not supported (use the WHERE clause)');
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
      throw cypherError(
        this.token.offset,
        `an element has exactly one type: ${what === 'node' ? ':A:B' : 'several types'} cannot match; write :A|B for alternatives`,
      );
    if (this.isPunct('&') || this.isPunct('!') || this.isPunct('%'))
      throw cypherError(
        this.token.offset,
        `label expressions with '${(this.token as { text: string }).text}' are not supported`,
      );
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
      if (this.isKeyword('WHERE'))
        throw cypherError(this.token.offset, 'WHERE inside a relation pattern is not supported (use the WHERE clause)');
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
      if (!t.integer || t.value < 0)
        throw cypherError(t.offset, `a relation length must be a non-negative integer, not ${t.text}`);
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
    if (this.comparisonOp() !== null)
      throw cypherError(this.token.offset, 'chained comparisons (a < b < c) are not supported; use AND');
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
    if (after.type === 'punct' && ['+', '-', '*', '/', '%', '^'].includes(after.text))
      throw cypherError(after.offset, `arithmetic ('${after.text}') is not supported`);
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
        if (this.isPunct(':'))
          throw cypherError(
            this.token.offset,
            'an element has exactly one type: n:A:B cannot match; write n:A|B for alternatives',
          );
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
          if (this.isPunct('|') || this.isKeyword('WHERE'))
            throw cypherError(this.token.offset, 'list comprehensions are not supported');
          this.expectPunct(']');
          return { kind: 'list', offset: t.offset, items };
        }
        if (t.text === '(') {
          this.pos++;
          const inner = this.nested(t.offset, () => this.parseExpr());
          if (this.isPunct('-') || this.isPunct('<') || this.isPunct(':'))
            throw cypherError(this.token.offset, 'pattern expressions in WHERE are not supported');
          this.expectPunct(')');
          if (this.isPunct('-') || this.isPunct('<'))
            throw cypherError(this.token.offset, 'pattern expressions in WHERE are not supported');
          return inner;
        }
        if (t.text === '{')
          return {
            kind: 'map',
            offset: t.offset,
            entries: this.nested(t.offset, () => this.parseProperties()).map(({ key, value }) => ({ key, value })),
          };
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
          if (this.isPunct('{', this.peek()))
            throw cypherError(t.offset, `subqueries (${upper} { … }) are not supported`);
          if (WRITE_CLAUSES.has(upper) || upper === 'CALL' || upper === 'OPTIONAL' || upper === 'WITH')
            throw cypherError(t.offset, refusal(upper));
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

/** Parses and validates a query of the subset; throws a 400 `bad-content` otherwise. */
export function parseCypher(source: string): CypherQuery {
  if (source.length > MAX_QUERY_LENGTH)
    throw cypherError(MAX_QUERY_LENGTH, `the query is longer than ${MAX_QUERY_LENGTH} characters`);
  const parsed = new Parser(tokenize(source)).parseQuery();
  return validate(parsed);
}
