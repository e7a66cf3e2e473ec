// The query_string syntax: Lucene's classic query parser grammar, as Elasticsearch's query_string reads it.
//
// Hand-written: the parsers on npm read other dialects. The operator semantics are those of Lucene's
// QueryParserBase.addClause, so that `a OR b AND c`, `a -b`, `NOT a` mean what they mean in Lucene.
//
//   Query      := Clause ( Conjunction? Clause )*
//   Conjunction:= AND | OR | && | ||
//   Clause     := Modifier? ( Field ':' )? ( '(' Query ')' | Term | Phrase | Range | Compare ) Boost?
//   Modifier   := + | - | ! | NOT
//   Term       := term characters with \-escapes, `*` and `?` as wildcards, then `~` or `~N` (fuzzy)
//   Phrase     := "…" then `~N` (slop: how far its words may be out of place)
//   Range      := [a TO b] {a TO b} [a TO b} {a TO b] (`*`: open)
//   Compare    := > >= < <= followed by a value (Elasticsearch's `age:>10`)
//   Boost      := ^number

type Occur = 'must' | 'should' | 'must_not';

export interface LuceneQuery {
  clauses: Array<{ occur: Occur; node: LuceneNode }>;
}

export type LuceneNode =
  | { k: 'group'; field: string | null; query: LuceneQuery; boost: number | null }
  /**
   * `raw`: the term as written (escapes kept, so that an escaped `*` is no wildcard); `text`: unescaped. `slop`: a
   * phrase's `~N` (null when not given), `fuzzy`: a term's `~N`.
   */
  | {
      k: 'term';
      field: string | null;
      raw: string;
      text: string;
      quoted: boolean;
      slop: number | null;
      fuzzy: number | null;
      boost: number | null;
    }
  | {
      k: 'range';
      field: string | null;
      min: string | null;
      max: string | null;
      minInclusive: boolean;
      maxInclusive: boolean;
      boost: number | null;
    }
  | { k: 'compare'; field: string | null; op: 'gt' | 'gte' | 'lt' | 'lte'; value: string; boost: number | null };

export class LuceneSyntaxError extends Error {}

/** Fuzzy edit distance of a bare `~`, as in Elasticsearch. */
const DEFAULT_FUZZY_EDITS = 2;

const WHITESPACE = /[\s\u3000]/;
// Characters that end a term (unless escaped); `+`, `-` and `!` may not start one.
const TERM_END = new Set([
  ' ',
  '\t',
  '\n',
  '\r',
  '\u3000',
  '(',
  ')',
  ':',
  '^',
  '[',
  ']',
  '"',
  '{',
  '}',
  '~',
  '\\',
  '/',
]);
const NOT_TERM_START = new Set([...TERM_END, '+', '-', '!']);

/** Groups may nest `maxDepth` levels (the parser recurses per level; a hostile query must not exhaust the stack). */
export function parseLucene(text: string, defaultOperator: 'and' | 'or', maxDepth = 32): LuceneQuery {
  return new Parser(text, defaultOperator, maxDepth).parse();
}

class Parser {
  private i = 0;
  private depth = 0;

  constructor(
    private readonly text: string,
    private readonly operator: 'and' | 'or',
    private readonly maxDepth: number,
  ) {}

  parse(): LuceneQuery {
    const query = this.query(false);
    this.skipSpace();
    if (this.i < this.text.length) this.error(`unexpected '${this.text[this.i]}'`);
    return query;
  }

  private error(message: string): never {
    throw new LuceneSyntaxError(`${message} at position ${this.i}`);
  }

  private skipSpace() {
    while (this.i < this.text.length && WHITESPACE.test(this.text[this.i]!)) this.i++;
  }

  /** A keyword (AND, OR, NOT) or symbol at the cursor, as a whole token. */
  private peekWord(word: string): boolean {
    if (!this.text.startsWith(word, this.i)) return false;
    if (!/^[A-Z]+$/.test(word)) return true;
    const next = this.text[this.i + word.length];
    // Before ')' too: `(a AND)` is a missing clause, as at the end of the query, not a search for the word "and".
    return (
      next === undefined ||
      WHITESPACE.test(next) ||
      next === '(' ||
      next === ')' ||
      next === '"' ||
      next === '+' ||
      next === '-' ||
      next === '!'
    );
  }

  private query(nested: boolean): LuceneQuery {
    const clauses: LuceneQuery['clauses'] = [];
    for (;;) {
      this.skipSpace();
      if (this.i >= this.text.length || (nested && this.text[this.i] === ')')) break;
      let conj: 'and' | 'or' | null = null;
      for (const [word, value] of [
        ['AND', 'and'],
        ['&&', 'and'],
        ['OR', 'or'],
        ['||', 'or'],
      ] as const) {
        if (this.peekWord(word)) {
          if (clauses.length === 0) this.error(`'${word}' needs a clause before it`);
          conj = value;
          this.i += word.length;
          this.skipSpace();
          break;
        }
      }
      let modifier: 'required' | 'prohibited' | null = null;
      if (this.text[this.i] === '+') modifier = 'required';
      else if (this.text[this.i] === '-' || this.text[this.i] === '!') modifier = 'prohibited';
      if (modifier !== null) this.i++;
      else if (this.peekWord('NOT')) {
        modifier = 'prohibited';
        this.i += 3;
      }
      this.skipSpace();
      if (this.i >= this.text.length || this.text[this.i] === ')') this.error('a clause is missing');
      this.addClause(clauses, conj, modifier, this.clause());
    }
    if (clauses.length === 0) this.error(nested ? 'empty group' : 'the query is empty');
    return { clauses };
  }

  /** Lucene's QueryParserBase.addClause: how a conjunction and a modifier decide each clause's occurrence. */
  private addClause(
    clauses: LuceneQuery['clauses'],
    conj: 'and' | 'or' | null,
    modifier: 'required' | 'prohibited' | null,
    node: LuceneNode,
  ) {
    const previous = clauses[clauses.length - 1];
    // Introduced by AND: the preceding clause becomes required unless it is prohibited.
    if (previous && conj === 'and' && previous.occur !== 'must_not') previous.occur = 'must';
    // With AND as the default operator, OR makes the preceding clause optional (so that `a OR b` is not `+a b`).
    if (previous && this.operator === 'and' && conj === 'or' && previous.occur !== 'must_not')
      previous.occur = 'should';
    const prohibited = modifier === 'prohibited';
    const required =
      this.operator === 'or'
        ? modifier === 'required' || (conj === 'and' && !prohibited)
        : !prohibited && conj !== 'or';
    clauses.push({ occur: prohibited ? 'must_not' : required ? 'must' : 'should', node });
  }

  private clause(): LuceneNode {
    let field: string | null = null;
    const start = this.i;
    if (!NOT_TERM_START.has(this.text[this.i]!)) {
      const name = this.termText();
      if (this.text[this.i] === ':') {
        field = unescapeTerm(name);
        this.i++;
        this.skipSpace();
      } else this.i = start;
    }
    const c = this.text[this.i];
    if (c === '(') {
      if (++this.depth > this.maxDepth) this.error(`groups nest at most ${this.maxDepth} levels deep`);
      this.i++;
      const query = this.query(true);
      this.depth--;
      if (this.text[this.i] !== ')') this.error("')' is missing");
      this.i++;
      return { k: 'group', field, query, boost: this.boost() };
    }
    if (c === '[' || c === '{') return this.range(field);
    if (c === '>' || c === '<') {
      const op = this.text.startsWith('>=', this.i)
        ? 'gte'
        : this.text.startsWith('<=', this.i)
          ? 'lte'
          : c === '>'
            ? 'gt'
            : 'lt';
      this.i += op.length === 3 ? 2 : 1;
      const value = this.text[this.i] === '"' ? this.quoted() : unescapeTerm(this.termText());
      if (value === '') this.error(`a value is missing after '${op}'`);
      return { k: 'compare', field, op, value, boost: this.boost() };
    }
    if (c === '"') {
      const text = this.quoted();
      // A phrase's `~N` is its slop; Lucene truncates a fractional one, and a bare `~` leaves the default (0).
      let slop: number | null = null;
      if (this.text[this.i] === '~') {
        this.i++;
        const n = this.number();
        if (n !== null) slop = Math.trunc(n);
      }
      return { k: 'term', field, raw: text, text, quoted: true, slop, fuzzy: null, boost: this.boost() };
    }
    if (c === '/') this.error('regular expressions are not supported');
    if (c === undefined || NOT_TERM_START.has(c))
      this.error(c === undefined ? 'a term is missing' : `unexpected '${c}'`);
    const raw = this.termText();
    let fuzzy: number | null = null;
    if (this.text[this.i] === '~') {
      this.i++;
      const n = this.number();
      fuzzy = n ?? DEFAULT_FUZZY_EDITS;
      if (!Number.isInteger(fuzzy) || fuzzy < 0 || fuzzy > 2) this.error('a fuzzy edit distance is 0, 1 or 2');
    }
    return { k: 'term', field, raw, text: unescapeTerm(raw), quoted: false, slop: null, fuzzy, boost: this.boost() };
  }

  /** Term characters from the cursor, escapes included as written. */
  private termText(): string {
    const begin = this.i;
    while (this.i < this.text.length) {
      const c = this.text[this.i]!;
      if (c === '\\') {
        if (this.i + 1 >= this.text.length) this.error('a backslash escapes nothing');
        this.i += 2;
      } else if (
        TERM_END.has(c) ||
        c === '!' ||
        this.text.startsWith('&&', this.i) ||
        this.text.startsWith('||', this.i)
      )
        break;
      else this.i++;
    }
    return this.text.slice(begin, this.i);
  }

  private quoted(): string {
    this.i++; // the opening quote
    let out = '';
    while (this.i < this.text.length && this.text[this.i] !== '"') {
      if (this.text[this.i] === '\\' && this.i + 1 < this.text.length) this.i++;
      out += this.text[this.i++];
    }
    if (this.text[this.i] !== '"') this.error('a closing quote is missing');
    this.i++;
    return out;
  }

  private number(): number | null {
    const m = /^\d+(?:\.\d+)?/.exec(this.text.slice(this.i));
    if (!m) return null;
    this.i += m[0].length;
    return Number(m[0]);
  }

  private boost(): number | null {
    if (this.text[this.i] !== '^') return null;
    this.i++;
    const n = this.number();
    if (n === null) this.error("'^' needs a number");
    return n;
  }

  private range(field: string | null): LuceneNode {
    const minInclusive = this.text[this.i] === '[';
    this.i++;
    this.skipSpace();
    const min = this.bound();
    this.skipSpace();
    if (!this.peekWord('TO')) this.error("a range needs 'TO'");
    this.i += 2;
    this.skipSpace();
    const max = this.bound();
    this.skipSpace();
    const close = this.text[this.i];
    if (close !== ']' && close !== '}') this.error("a range ends with ']' or '}'");
    this.i++;
    return { k: 'range', field, min, max, minInclusive, maxInclusive: close === ']', boost: this.boost() };
  }

  /** One end of a range: quoted, or characters up to whitespace or the closing bracket; `*` is open. */
  private bound(): string | null {
    if (this.text[this.i] === '"') return this.quoted();
    const begin = this.i;
    while (
      this.i < this.text.length &&
      !WHITESPACE.test(this.text[this.i]!) &&
      this.text[this.i] !== ']' &&
      this.text[this.i] !== '}'
    ) {
      if (this.text[this.i] === '\\') this.i++;
      this.i++;
    }
    const raw = this.text.slice(begin, this.i);
    if (raw === '') this.error('a range bound is missing');
    return raw === '*' ? null : unescapeTerm(raw);
  }
}

const unescapeTerm = (raw: string) => raw.replace(/\\(.)/gs, '$1');
