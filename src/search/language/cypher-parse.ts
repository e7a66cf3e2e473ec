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
import { CypherExpressionParser } from './cypher-expression-parse.js';
import { tokenize } from './cypher-tokens.js';
import { validate } from './cypher-validate.js';

/** A longer query is a 400, not a long parse. */
export const MAX_QUERY_LENGTH = 16_384;

/** Queries and their patterns; the expressions in them are parsed by CypherExpressionParser. */
class Parser extends CypherExpressionParser {
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
}

/** Parses and validates a query of the subset; throws a 400 `bad-content` otherwise. */
export function parseCypher(source: string): CypherQuery {
  if (source.length > MAX_QUERY_LENGTH)
    throw cypherError(MAX_QUERY_LENGTH, `the query is longer than ${MAX_QUERY_LENGTH} characters`);
  const parsed = new Parser(tokenize(source)).parseQuery();
  return validate(parsed);
}
