// The token stream of the Cypher parser (cypher-parse.ts, cypher-expression-parse.ts): a cursor over the tokens,
// the nesting guard, and the errors that name what was expected, or why a clause outside the subset is refused.
import { cypherError } from './cypher-ast.js';
import type { Token } from './cypher-tokens.js';

/** Nesting a query may have (parentheses, lists, maps, NOT): deeper is a 400, not a stack overflow. */
const MAX_NESTING = 64;

/** Clauses and keywords outside the subset, with the reason given for refusing them. */
export const WRITE_CLAUSES = new Set([
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

export function refusal(word: string): string {
  const upper = word.toUpperCase();
  if (WRITE_CLAUSES.has(upper)) return `${upper} is not supported: only read-only path queries are`;
  if (upper === 'CALL') return 'CALL (procedures and subqueries) is not supported';
  if (upper === 'OPTIONAL') return 'OPTIONAL MATCH is not supported';
  return 'WITH is not supported';
}

export abstract class CypherCursor {
  protected pos = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  /** Runs a nested parse (parentheses, lists, maps, NOT), refusing nesting deeper than MAX_NESTING. */
  protected nested<T>(offset: number, parse: () => T): T {
    if (++this.depth > MAX_NESTING)
      throw cypherError(offset, `the query is nested more than ${MAX_NESTING} levels deep`);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  protected get token(): Token {
    return this.tokens[this.pos]!;
  }
  protected peek(ahead = 1): Token {
    return this.tokens[Math.min(this.pos + ahead, this.tokens.length - 1)]!;
  }
  protected next(): Token {
    const t = this.token;
    if (t.type !== 'eof') this.pos++;
    return t;
  }

  protected isKeyword(word: string, t: Token = this.token): boolean {
    return t.type === 'ident' && !t.quoted && t.text.toUpperCase() === word;
  }
  protected acceptKeyword(word: string): boolean {
    if (!this.isKeyword(word)) return false;
    this.pos++;
    return true;
  }
  protected isPunct(text: string, t: Token = this.token): boolean {
    return t.type === 'punct' && t.text === text;
  }
  protected acceptPunct(text: string): boolean {
    if (!this.isPunct(text)) return false;
    this.pos++;
    return true;
  }
  protected expectPunct(text: string): void {
    if (!this.acceptPunct(text)) throw this.unexpected(`'${text}'`);
  }

  /** "expected X but found Y", or the reason a clause keyword is refused when Y is one. */
  protected unexpected(expected: string, t: Token = this.token): Error {
    if (t.type === 'ident' && !t.quoted) {
      const upper = t.text.toUpperCase();
      if (WRITE_CLAUSES.has(upper) || upper === 'CALL' || upper === 'OPTIONAL' || upper === 'WITH')
        return cypherError(t.offset, refusal(upper));
    }
    return cypherError(t.offset, `expected ${expected} but found ${describe(t)}`);
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
