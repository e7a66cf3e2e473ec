// Expressions of the Cypher subset (WHERE conditions, property maps, UNWIND, ORDER BY, SKIP and LIMIT): precedence
// climbing over OR, XOR, AND, NOT, comparisons and predicates, then unary minus, property access and indexing, atoms.
import { type ComparisonOp, cypherError, type Expr, type PropertyEntry } from './cypher-ast.js';
import { CypherCursor, refusal, WRITE_CLAUSES } from './cypher-cursor.js';

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
export abstract class CypherExpressionParser extends CypherCursor {
  protected parseName(what: string): string {
    const t = this.token;
    if (t.type !== 'ident') throw this.unexpected(what);
    this.pos++;
    return t.text;
  }

  protected parseProperties(): PropertyEntry[] {
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
