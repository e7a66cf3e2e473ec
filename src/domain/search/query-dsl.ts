// The search engine's query DSL (the Elasticsearch query DSL the reference implementation sends to Elasticsearch),
// validated and compiled into SQL over the search index of migration 006: a boolean condition and a score
// expression on the row alias `e`, with every client value a bind parameter. What is supported, and how each kind
// maps onto the index (see the lexeme table at the top of migration 006):
//
//   match        analysed terms of the query; OR by default (`operator: and`, `minimum_should_match`), `fuzziness`
//                (0, 1, 2, "AUTO", "AUTO:low,high"; edit distance, see fuzzyTerm), `fuzzy_transpositions`, `boost`,
//                `zero_terms_query`
//                On `f.keyword` the whole query is one exact value; a number or boolean also matches that value.
//   match_phrase the analysed terms of the query next to each other and in order, `slop` (how far out of place they
//                may be, as Lucene's sloppy phrase), `boost`, `zero_terms_query`: the index finds the elements with
//                every term, then the value itself is checked (trellis_search_phrase, migration 015)
//   term(s)      exact: on `f.keyword` the whole string, on a text field one analysed token (not analysed itself,
//                as in ES: "Lily" finds nothing in a text field), on numbers/booleans the value; `_id`
//   prefix,      term-level on the keyword or on the tokens of a text field; `*` and `?` in wildcards, `\` escapes;
//   wildcard     `%`, `_` and `\` in a value are literal characters
//   range        gte/gt/lte/lt on numbers (or strings, compared by code point) in `data`, and on `created`/`updated`
//                with ISO-8601 dates or epoch milliseconds
//   exists, ids, match_all, match_none, constant_score, bool (must, should, must_not, filter, minimum_should_match,
//   boost), query_string (Lucene's classic syntax, lucene.ts: terms, "phrases" and "phrases"~slop as match_phrase,
//   field:value, field:(group), AND/OR/NOT/&&/||/!/+/-, boosts ^n, fuzzy ~ and ~n, wildcards, [a TO b] {a TO b}
//   and :>= ranges, _exists_:field; `default_field` ("*" = every field), `default_operator`, `phrase_slop`)
//
// Scores (ES uses BM25; only the order is part of the contract). Deterministic, and relevance-like:
//   match            boost x (m + n): m = matched query terms (an exact term 1, a fuzzy one 1/(1 + distance)),
//                    n = how short the field is, from the `n` lexeme of the shortest string there: 0.8 up to 16 bytes,
//                    0.6 up to 40, 0.4 up to 100, 0.2 up to 250, else 0; n < 1, so more matched terms always rank
//                    higher than fewer, and between equal counts the shorter field ranks higher
//   term-level       boost (constant 1.0 by default, like ES's constant-score term-level queries): term, terms,
//                    prefix, wildcard, range, exists, ids, match_all, constant_score
//   bool             boost x (sum of the must scores + sum of the scores of the should clauses that match);
//                    filter and must_not do not score (a bool of only those scores 0)
//   query_string     as the bool query it stands for, its terms as match queries
// Ties are broken by id (ascending) by the caller.
import { LuceneSyntaxError, parseLucene, type LuceneNode, type LuceneQuery } from './lucene.js';
import { badContent } from '../../errors.js';
import { timestamptzBound, unstorableParameter } from '../values.js';
import { CASE_TABLES, LENGTH_BUCKETS, SEARCH_LIMITS, SEPARATOR_RANGES } from '../../storage/schema/search-analysis.js';
import { shownFileSql, shownTimeSql } from '../../storage/queries/element-json.js';

// ---------------------------------------------------------------------------------------------------------------
// Analysis: the query-side mirror of migration 006 (same tables, same limits), so that a query term and an indexed
// token are the same string. test/search/search-engine.test.ts checks the two against each other.
// ---------------------------------------------------------------------------------------------------------------

/** Ends a value inside a lexeme. */
const S = '\x1f';
/** A lexeme no document has (every indexed lexeme starts with t, k, v, e or n). */
const NO_LEXEME = 'x';

const FOLD = new Map<number, string>();
for (const table of CASE_TABLES) {
  const from = [...table.from];
  const to = [...table.to];
  from.forEach((c, i) => FOLD.set(c.codePointAt(0)!, to[i]!));
}
const cp = (c: number) => `\\u{${c.toString(16)}}`;
const SEPARATORS = new RegExp(`[${SEPARATOR_RANGES.map(([a, b]) => (a === b ? cp(a) : `${cp(a)}-${cp(b)}`)).join('')}]+`, 'u');

/** Lower case as the index does it: ASCII, then the translate() tables. */
export function fold(text: string): string {
  let out = '';
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    out += c >= 0x41 && c <= 0x5a ? String.fromCharCode(c + 32) : (FOLD.get(c) ?? ch);
  }
  return out;
}

/** The tokens of a text, as the index makes them (the standard analyzer, approximated). */
export function analyze(text: string): string[] {
  let limited = text;
  if (text.length > SEARCH_LIMITS.analysedChars) limited = Array.from(text).slice(0, SEARCH_LIMITS.analysedChars).join('');
  return fold(limited)
    .split(SEPARATORS)
    .filter((t) => t !== '');
}

/** Field names and keyword values inside lexemes (trellis_search_escape). */
const escape = (s: string) => s.replaceAll('\x1e', '\x1e1').replaceAll('\x1f', '\x1e2').replaceAll('\x1d', '\x1e3');

/** A number as the index writes it: trim_scale(numeric)::text, a plain decimal without trailing zeros. */
export function canonicalNumber(x: number): string | null {
  if (!Number.isFinite(x)) return null;
  if (x === 0) return '0';
  const [mantissa, exponent] = String(Math.abs(x)).split('e') as [string, string | undefined];
  const [int, frac = ''] = mantissa.split('.') as [string, string | undefined];
  const digits = int + frac;
  const point = int.length + (exponent ? Number(exponent) : 0);
  let plain: string;
  if (point <= 0) plain = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) plain = digits + '0'.repeat(point - digits.length);
  else plain = `${digits.slice(0, point)}.${digits.slice(point)}`;
  plain = plain.replace(/^0+(?=\d)/, '');
  if (plain.includes('.')) plain = plain.replace(/0+$/, '').replace(/\.$/, '');
  return (x < 0 ? '-' : '') + plain;
}

const NUMERIC = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** The exact value (a `v` lexeme's value) a query value stands for: numbers, booleans and strings that spell one. */
function exactValue(value: string | number | boolean): string | null {
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return canonicalNumber(value);
  if (value === 'true' || value === 'false') return value;
  return NUMERIC.test(value) ? canonicalNumber(Number(value)) : null;
}

// PostgreSQL's limits on tsquery input (tsquery.c): an operand shorter than 2,047 bytes (MAXSTRLEN), and operands
// that add up, each with its terminating byte, to less than 1 MiB (MAXSTRPOS). A stored lexeme may be one byte
// longer (a tsvector takes 2,047), but no query can name it.
const TSQUERY_MAX_OPERAND_BYTES = 2046;
const TSQUERY_MAX_TOTAL_BYTES = (1 << 20) - 2;

const lexemeFits = (lexeme: string) => Buffer.byteLength(lexeme) <= Math.min(SEARCH_LIMITS.maxLexemeBytes, TSQUERY_MAX_OPERAND_BYTES);
/** The SQL (and jsonpath) operator of each range bound. */
const SQL_OP = { gte: '>=', gt: '>', lte: '<=', lt: '<' } as const;
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

// ---------------------------------------------------------------------------------------------------------------
// Bind parameters and the compiled form
// ---------------------------------------------------------------------------------------------------------------

/** Collects bind parameters; `add` returns the placeholder with its cast. */
export class SqlParams {
  readonly values: unknown[];
  constructor(initial: unknown[] = []) {
    this.values = [...initial];
  }
  add(value: unknown, cast: string): string {
    // A value of the query (or of an expression in it) that PostgreSQL cannot take: the client's mistake, a 400.
    if (unstorableParameter(value, cast)) fail('query', 'a string holds U+0000 or an unpaired surrogate, which no stored text holds');
    this.values.push(value);
    return `$${this.values.length}::${cast}`;
  }
}

/** tsquery trees: lexemes (exact or prefix), a tsquery computed by SQL (fuzzy expansions), and, or, not. */
type Ts =
  | { op: 'lex'; lexeme: string; prefix: boolean }
  | { op: 'sql'; sql: string }
  | { op: 'and' | 'or'; items: Ts[] }
  | { op: 'not'; item: Ts };

type Cond =
  | { k: 'const'; value: boolean }
  | { k: 'ts'; q: Ts }
  | { k: 'sql'; sql: () => string }
  | { k: 'and' | 'or'; items: Cond[] }
  | { k: 'not'; item: Cond }
  | { k: 'atLeast'; n: number; items: Cond[] };

/** A score expression, valid for rows that satisfy the clause's condition. */
type Score =
  | { k: 'const'; value: number }
  | { k: 'sql'; sql: () => string }
  | { k: 'sum'; parts: { when: Cond | null; score: Score }[] }
  | { k: 'times'; factor: number; score: Score };

/** What an index can use: a superset of the matches. null = no narrowing from that index. */
interface Narrow {
  ts: Ts | null;
  ids: string[] | null;
}

interface Clause {
  cond: Cond;
  score: Score;
  narrow: Narrow;
}

export interface CompiledQuery {
  /** false when the query can match nothing (the caller need not ask the database). */
  matchesNothing: boolean;
  /** WITH entries the conditions refer to (fuzzy expansions), without the WITH keyword. */
  ctes: string[];
  /** Conjuncts of the WHERE clause: index lookups first, then the exact condition. */
  where: string[];
  /** float8 score of a matching row. */
  score: string;
}

const TRUE: Cond = { k: 'const', value: true };
const FALSE: Cond = { k: 'const', value: false };
const NO_NARROW: Narrow = { ts: null, ids: null };
const ZERO: Score = { k: 'const', value: 0 };
const constScore = (boost: number): Score => ({ k: 'const', value: boost });
const lex = (lexeme: string, prefix = false): Ts => ({ op: 'lex', lexeme, prefix });

function and(items: Cond[]): Cond {
  const kept: Cond[] = [];
  for (const item of items.flatMap((i) => (i.k === 'and' ? i.items : i.k === 'ts' && i.q.op === 'and' ? i.q.items.map((q): Cond => ({ k: 'ts', q })) : [i]))) {
    if (item.k === 'const') {
      if (!item.value) return FALSE;
    } else kept.push(item);
  }
  return kept.length === 0 ? TRUE : kept.length === 1 ? kept[0]! : merged('and', kept);
}

/** An and/or of lexeme conditions is one tsquery (one index lookup, one @@ per row). */
function merged(op: 'and' | 'or', items: Cond[]): Cond {
  if (items.every((i) => i.k === 'ts')) return { k: 'ts', q: { op, items: items.map((i) => (i as { q: Ts }).q) } };
  return { k: op, items };
}

function or(items: Cond[]): Cond {
  const kept: Cond[] = [];
  for (const item of items.flatMap((i) => (i.k === 'or' ? i.items : i.k === 'ts' && i.q.op === 'or' ? i.q.items.map((q): Cond => ({ k: 'ts', q })) : [i]))) {
    if (item.k === 'const') {
      if (item.value) return TRUE;
    } else kept.push(item);
  }
  return kept.length === 0 ? FALSE : kept.length === 1 ? kept[0]! : merged('or', kept);
}

const not = (item: Cond): Cond => (item.k === 'const' ? { k: 'const', value: !item.value } : item.k === 'not' ? item.item : { k: 'not', item });

/** A lexeme condition, or false when the lexeme cannot be in the index (too long). */
const lexCond = (lexeme: string, prefix = false): Cond => (lexemeFits(lexeme) ? { k: 'ts', q: lex(lexeme, prefix) } : FALSE);

function narrowAnd(items: Narrow[]): Narrow {
  const ts = items.map((n) => n.ts).filter((t): t is Ts => t !== null);
  const ids = items.map((n) => n.ids).filter((i): i is string[] => i !== null);
  return {
    ts: ts.length === 0 ? null : ts.length === 1 ? ts[0]! : { op: 'and', items: ts },
    ids: ids.length === 0 ? null : ids.reduce((a, b) => a.filter((id) => b.includes(id))),
  };
}

function narrowOr(items: Narrow[]): Narrow {
  const ts = items.map((n) => n.ts);
  const ids = items.map((n) => n.ids);
  return {
    ts: items.length > 0 && ts.every((t) => t !== null) ? (ts.length === 1 ? ts[0]! : { op: 'or', items: ts as Ts[] }) : null,
    ids: items.length > 0 && ids.every((i) => i !== null) ? [...new Set((ids as string[][]).flat())] : null,
  };
}

/** The narrowing a condition built from lexemes allows by itself (its lexeme part). */
function narrowOf(cond: Cond): Narrow {
  switch (cond.k) {
    case 'ts':
      return { ts: cond.q, ids: null };
    case 'and':
      return narrowAnd(cond.items.map(narrowOf));
    case 'or':
      return narrowOr(cond.items.map(narrowOf));
    case 'atLeast':
      return cond.n >= 1 ? narrowOr(cond.items.map(narrowOf)) : NO_NARROW;
    default:
      return NO_NARROW;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Validation helpers: every error is a 400 naming the path of the bad clause
// ---------------------------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const fail = (path: string, message: string): never => {
  throw badContent(`${path}: ${message}`);
};
const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`);

function onlyKeys(o: Json, path: string, allowed: readonly string[]): void {
  for (const key of Object.keys(o)) if (!allowed.includes(key)) fail(path, `unknown parameter '${key}' (allowed: ${allowed.join(', ')})`);
}

/**
 * The largest boost. Scores are float8 products of the boosts along a query's nesting (at most MAX_DEPTH levels of
 * the DSL, and as many groups of a query_string inside) summed over its clauses: with boosts up to 1000 they stay
 * below 10^200, where a boost of 1e308 overflowed float8 in the database (a 500).
 */
export const MAX_BOOST = 1000;

function checkBoost(boost: unknown, path: string): number {
  if (typeof boost !== 'number' || !Number.isFinite(boost) || boost < 0 || boost > MAX_BOOST)
    fail(path, `must be a number from 0 to ${MAX_BOOST}, not ${describe(boost)}`);
  return boost as number;
}

const boostOf = (o: Json, path: string): number => checkBoost(o.boost ?? 1, `${path}.boost`);

/** `{field: value}` or `{field: {<valueKey>: value, ...options}}`: the field, the value and the options object. */
function fieldClause(body: unknown, path: string, valueKey: string, options: readonly string[]): { field: string; value: unknown; opts: Json; at: string } {
  if (!isObject(body)) fail(path, `must be an object {field: …}, not ${describe(body)}`);
  const fields = Object.keys(body as Json).filter((k) => k !== '_name');
  if (fields.length !== 1) fail(path, `must name exactly one field, not ${fields.length}`);
  const field = fields[0]!;
  const at = `${path}.${field}`;
  if (field === '') fail(at, 'the field name must not be empty');
  const raw = (body as Json)[field];
  if (isObject(raw)) {
    onlyKeys(raw, at, [valueKey, 'boost', '_name', ...options]);
    if (!(valueKey in raw)) fail(at, `needs '${valueKey}'`);
    return { field, value: raw[valueKey], opts: raw, at };
  }
  return { field, value: raw, opts: {}, at };
}

/** The options of match and match_phrase about analysis: the analyzer (only 'standard'), and zero_terms_query. */
function analysisOptions(opts: Json, at: string): 'none' | 'all' {
  if (opts.analyzer !== undefined && opts.analyzer !== 'standard') fail(`${at}.analyzer`, "only the 'standard' analyzer is supported");
  const zeroTerms = opts.zero_terms_query ?? 'none';
  if (zeroTerms !== 'none' && zeroTerms !== 'all') fail(`${at}.zero_terms_query`, "must be 'none' or 'all'");
  return zeroTerms as 'none' | 'all';
}

function scalar(v: unknown, path: string): string | number | boolean {
  if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) return v;
  return fail(path, `must be a string, number or boolean, not ${describe(v)}`);
}

function stringValue(v: unknown, path: string): string {
  if (typeof v !== 'string') fail(path, `must be a string, not ${describe(v)}`);
  return v as string;
}

// ---------------------------------------------------------------------------------------------------------------
// Fields
// ---------------------------------------------------------------------------------------------------------------

type Field =
  | { kind: 'id' }
  | { kind: 'date'; column: 'created' | 'updated' }
  | { kind: 'keyword'; name: string } // f.keyword
  | { kind: 'data'; name: string } // a property (text, number, boolean)
  | { kind: 'any' } // "*": every property
  | { kind: 'file'; keys: string[] } // hasFile, file, file.<field>: shown in data, kept in the file column
  | { kind: 'none' }; // can never match ("_" properties are not in the index)

function fieldOf(name: string): Field {
  if (name === '_id') return { kind: 'id' };
  if (name === 'created' || name === 'updated') return { kind: 'date', column: name };
  if (name === '*') return { kind: 'any' };
  const base = name.endsWith('.keyword') ? name.slice(0, -'.keyword'.length) : name;
  if (base.startsWith('_')) return { kind: 'none' };
  if (base === 'hasFile' || base === 'file' || base.startsWith('file.')) return { kind: 'file', keys: base.split('.') };
  // A name too long for its lexemes (normLex's, the longest made of the name alone) to be searched for: no query
  // can ask the index about it, so it matches nothing, like a property no element has.
  if (Buffer.byteLength(escape(base)) + 2 > TSQUERY_MAX_OPERAND_BYTES) return { kind: 'none' };
  return name.endsWith('.keyword') ? { kind: 'keyword', name: base } : { kind: 'data', name };
}

const textLex = (token: string, field: string) => `t${token}${S}${escape(field)}`;
const keywordLex = (value: string, field: string) => `k${escape(value)}${S}${escape(field)}`;
const valueLex = (value: string, field: string) => `v${value}${S}${escape(field)}`;
const existsLex = (field: string) => `e${escape(field)}`;
const normLex = (bucket: number, field: string) => `n${bucket}${escape(field)}`;

/** Condition: some lexeme of the element matches a LIKE pattern (for what tsquery cannot express exactly). */
function lexemeLike(pattern: string, params: SqlParams, caseInsensitive = false): Cond {
  const l = caseInsensitive ? 'trellis_search_fold(u.lexeme)' : 'u.lexeme';
  return { k: 'sql', sql: () => `EXISTS (SELECT 1 FROM unnest(e.search) u WHERE ${l} LIKE ${params.add(caseInsensitive ? fold(pattern) : pattern, 'text')})` };
}

// ---------------------------------------------------------------------------------------------------------------
// The compiler
// ---------------------------------------------------------------------------------------------------------------

const MATCH_OPTIONS = [
  'operator',
  'fuzziness',
  'minimum_should_match',
  'zero_terms_query',
  'prefix_length',
  'max_expansions',
  'fuzzy_transpositions',
  'lenient',
  'analyzer',
];
const MAX_DEPTH = 32;
const MAX_CLAUSES = 1024;
const MAX_FUZZY_TERMS = 16;
const NORM_WEIGHTS = [0.8, 0.6, 0.4, 0.2];

class Compiler {
  readonly ctes: string[] = [];
  private clauses = 0;
  private fuzzyTerms = 0;
  /** `searchable`: SQL boolean over the row `e`, whether the caller may search it (see compileQuery). */
  constructor(
    readonly params: SqlParams,
    private readonly searchable: string,
  ) {}

  /**
   * Counts clauses towards MAX_CLAUSES (ES's max_clause_count): every query object, every term of a match and every
   * value of a terms or ids query beyond its first, every clause of a query_string. It bounds the size of the SQL a query compiles to.
   */
  countClauses(n: number, path: string): void {
    if ((this.clauses += n) > MAX_CLAUSES) fail(path, `a query has at most ${MAX_CLAUSES} clauses (query objects, match terms, terms and ids values, query_string clauses)`);
  }

  query(q: unknown, path: string, depth = 0): Clause {
    if (depth > MAX_DEPTH) fail(path, `queries nest at most ${MAX_DEPTH} levels deep`);
    this.countClauses(1, path);
    if (!isObject(q)) fail(path, `must be a query object, not ${describe(q)}`);
    const kinds = Object.keys(q as Json);
    if (kinds.length !== 1) fail(path, `must have exactly one query kind, not ${kinds.length === 0 ? 'none' : kinds.join(', ')}`);
    const kind = kinds[0]!;
    const body = (q as Json)[kind];
    const at = `${path}.${kind}`;
    switch (kind) {
      case 'match':
        return this.match(body, at);
      case 'match_phrase':
        return this.matchPhrase(body, at);
      case 'term':
        return this.term(body, at);
      case 'terms':
        return this.terms(body, at);
      case 'prefix':
        return this.pattern(body, at, 'prefix');
      case 'wildcard':
        return this.pattern(body, at, 'wildcard');
      case 'range':
        return this.range(body, at);
      case 'exists':
        return this.exists(body, at);
      case 'ids':
        return this.ids(body, at);
      case 'match_all':
      case 'match_none': {
        if (!isObject(body)) fail(at, `must be an object, not ${describe(body)}`);
        onlyKeys(body as Json, at, ['boost', '_name']);
        const boost = boostOf(body as Json, at);
        return kind === 'match_all' ? { cond: TRUE, score: constScore(boost), narrow: NO_NARROW } : { cond: FALSE, score: ZERO, narrow: NO_NARROW };
      }
      case 'constant_score': {
        if (!isObject(body)) fail(at, `must be an object, not ${describe(body)}`);
        onlyKeys(body as Json, at, ['filter', 'boost', '_name']);
        const inner = this.query((body as Json).filter, `${at}.filter`, depth + 1);
        return { cond: inner.cond, score: constScore(boostOf(body as Json, at)), narrow: inner.narrow };
      }
      case 'bool':
        return this.bool(body, at, depth);
      case 'query_string':
        return this.queryString(body, at, depth);
      default:
        return fail(path, `unknown or unsupported query kind '${kind}'`);
    }
  }

  // -- match ------------------------------------------------------------------------------------------------------

  private match(body: unknown, path: string): Clause {
    const { field, value, opts, at } = fieldClause(body, path, 'query', MATCH_OPTIONS);
    const query = scalar(value, isObject((body as Json)[field]) ? `${at}.query` : at);
    const operator = String(opts.operator ?? 'or').toLowerCase();
    if (operator !== 'or' && operator !== 'and') fail(`${at}.operator`, `must be 'or' or 'and', not ${describe(opts.operator)}`);
    const zeroTerms = analysisOptions(opts, at);
    for (const flag of ['fuzzy_transpositions', 'lenient'])
      if (opts[flag] !== undefined && typeof opts[flag] !== 'boolean') fail(`${at}.${flag}`, `must be a boolean, not ${describe(opts[flag])}`);
    const fuzziness = fuzzinessOf(opts.fuzziness, `${at}.fuzziness`);
    const prefixLength = nonNegativeInt(opts.prefix_length ?? 0, `${at}.prefix_length`);
    const maxExpansions = nonNegativeInt(opts.max_expansions ?? 50, `${at}.max_expansions`, 1);
    const boost = boostOf(opts, at);
    const msm = opts.minimum_should_match;
    const transpositions = opts.fuzzy_transpositions !== false;
    return this.matchText(fieldOf(field), query, { operator, fuzziness, transpositions, prefixLength, maxExpansions, boost, zeroTerms, msm, at });
  }

  /** match_phrase: the analysed words of the query next to each other and in order (`slop`: how far out of place). */
  private matchPhrase(body: unknown, path: string): Clause {
    const { field, value, opts, at } = fieldClause(body, path, 'query', ['slop', 'analyzer', 'zero_terms_query']);
    const query = scalar(value, isObject((body as Json)[field]) ? `${at}.query` : at);
    const zeroTerms = analysisOptions(opts, at);
    const phraseSlop = nonNegativeInt(opts.slop ?? 0, `${at}.slop`);
    return this.matchText(fieldOf(field), query, {
      operator: 'and',
      fuzziness: () => 0,
      transpositions: true,
      prefixLength: 0,
      maxExpansions: 50,
      boost: boostOf(opts, at),
      zeroTerms,
      msm: undefined,
      at,
      phraseSlop,
    });
  }

  /** match (also the terms of query_string) on one field. */
  matchText(
    target: Field,
    query: string | number | boolean,
    o: {
      operator: string;
      fuzziness: Fuzziness;
      /** fuzzy_transpositions: an adjacent transposition is one edit (ES's default), else two. */
      transpositions: boolean;
      prefixLength: number;
      maxExpansions: number;
      boost: number;
      zeroTerms: 'none' | 'all';
      msm: unknown;
      at: string;
      /** A phrase (query_string's "…", match_phrase) with this slop: its words in order, see migration 015. */
      phraseSlop?: number;
    },
  ): Clause {
    const boost = constScore(o.boost);
    switch (target.kind) {
      case 'none':
        return { cond: FALSE, score: ZERO, narrow: NO_NARROW };
      case 'id':
      case 'date':
      case 'file':
        return this.termOn(target, query, o.boost, o.at, false);
      case 'keyword': {
        const cond = lexCond(keywordLex(String(query), target.name));
        return { cond, score: boost, narrow: narrowOf(cond) };
      }
      default:
        break;
    }
    const tokens = analyze(String(query));
    const terms = [...new Set(tokens)];
    this.countClauses(Math.max(0, terms.length - 1), o.at);
    const field = target.kind === 'data' ? target.name : null;
    // A number or boolean (or a string spelling one) also matches that exact value, as ES does on numeric fields.
    const exact = exactValue(query);
    const exactCond = exact === null ? FALSE : field === null ? lexCond(`v${exact}${S}`, true) : lexCond(valueLex(exact, field));
    if (terms.length === 0) {
      if (exact !== null) return { cond: exactCond, score: boost, narrow: narrowOf(exactCond) };
      return o.zeroTerms === 'all' ? { cond: TRUE, score: ZERO, narrow: NO_NARROW } : { cond: FALSE, score: ZERO, narrow: NO_NARROW };
    }
    const perTerm = terms.map((term) => this.termMatch(term, field, o));
    const conds = perTerm.map((t) => t.cond);
    let cond: Cond;
    if (o.phraseSlop !== undefined) cond = tokens.length > 1 ? and([...conds, this.phrase(tokens, field, o.phraseSlop)]) : and(conds);
    else if (o.operator === 'and') cond = and(conds);
    else {
      const required = minimumShouldMatch(o.msm, terms.length, `${o.at}.minimum_should_match`);
      cond = required <= 1 ? or(conds) : required > terms.length ? FALSE : { k: 'atLeast', n: required, items: conds };
    }
    const textScore: Score = {
      k: 'times',
      factor: o.boost,
      score: { k: 'sum', parts: [...perTerm.map((t) => ({ when: null, score: t.score })), { when: null, score: field === null ? ZERO : this.norm(field) }] },
    };
    if (exact === null) return { cond, score: textScore, narrow: narrowOf(cond) };
    const both = or([cond, exactCond]);
    return { cond: both, score: { k: 'sum', parts: [{ when: cond, score: textScore }, { when: and([not(cond), exactCond]), score: boost }] }, narrow: narrowOf(both) };
  }

  /**
   * The words of a phrase in order, in one string at the field (any field when null), at most `slop` positions out
   * of place: checked on the element's value (trellis_search_phrase, migration 015), since the index keeps no
   * positions. It comes after the words' index conditions, so it only runs on the elements that have them all.
   */
  private phrase(tokens: string[], field: string | null, slop: number): Cond {
    const p = this.params;
    // No value has more tokens than characters analysed, so a larger slop means the same (and stays an int).
    const spread = Math.min(slop, SEARCH_LIMITS.analysedChars);
    return {
      k: 'sql',
      sql: () => `trellis_search_phrase(e.data, ${p.add(field === null ? null : escape(field), 'text')}, ${p.add(tokens, 'text[]')}, ${p.add(spread, 'int')})`,
    };
  }

  /** One analysed term: its condition and its score (1 when present; fuzzy: 1 / (1 + distance)). */
  private termMatch(
    term: string,
    field: string | null,
    o: { fuzziness: Fuzziness; transpositions: boolean; prefixLength: number; maxExpansions: number },
  ): { cond: Cond; score: Score } {
    const exactLexeme = field === null ? `t${term}${S}` : textLex(term, field);
    const exact = lexCond(exactLexeme, field === null);
    const distance = o.fuzziness(term);
    if (distance === 0 || exact.k === 'const') {
      if (exact.k === 'const') return { cond: exact, score: ZERO };
      return { cond: exact, score: { k: 'sql', sql: () => `(e.search @@ ${this.tsParam(lex(exactLexeme, field === null))})::int` } };
    }
    return this.fuzzyTerm(term, field, distance, o, exactLexeme);
  }

  /**
   * A fuzzy term, executed like ES's fuzzy query: the term is first expanded into the indexed tokens of the field
   * (of any field when `field` is null) within the edit distance (at most max_expansions, nearest first), then
   * those are looked up in the GIN index like exact terms. The expansion (a WITH entry, run once per statement) reads
   * the tokens of every element the caller may search that has the field (GIN lookup of its `e` lexeme, or of the
   * term's first prefix_length characters; without either, of every element the caller may search), keeps the
   * distinct ones of about the right length and computes the distance only for those (trellis_search_fuzzy_distance:
   * fuzzystrmatch's levenshtein_less_equal where installed, else PL/pgSQL, see 013). Only what the caller may search: the
   * tokens of other elements would take expansion slots from the caller's own and, with max_expansions, tell which
   * words exist where the caller cannot look. So a fuzzy match costs a scan of the field's elements, not an index
   * lookup: on the benchmark's data, tens of times the exact match's time, and a `word~` over every field more still.
   * Driving the scan from a superset of the caller's ids (the nodes its grants reach, and the relations at them) is
   * slower: the relations triple the rows to visit. A prefix_length narrows the scan to the tokens with that prefix. An adjacent transposition counts
   * as one edit unless fuzzy_transpositions is false, as in ES (trellis_search_fuzzy_distance, migration 013).
   */
  private fuzzyTerm(
    term: string,
    field: string | null,
    distance: number,
    { transpositions, prefixLength, maxExpansions }: { transpositions: boolean; prefixLength: number; maxExpansions: number },
    exactLexeme: string,
  ): { cond: Cond; score: Score } {
    if (++this.fuzzyTerms > MAX_FUZZY_TERMS) fail('query', `a query has at most ${MAX_FUZZY_TERMS} fuzzy terms`);
    const name = `fuzzy_${this.fuzzyTerms}`;
    const p = this.params;
    const prefix = Array.from(term).slice(0, prefixLength).join('');
    const narrow = prefix !== '' ? lex(`t${prefix}`, true) : field !== null ? lex(existsLex(field)) : null;
    const d = p.add(distance, 'int');
    // The lexemes of the field are t<token><S><field>: one per token, so they are compared directly and their length
    // filters before the DISTINCT. Of any field, a token is what precedes the first <S>, and it matches as the
    // prefix t<token><S> (as an exact match on every field does).
    const suffix = field === null ? S : `${S}${escape(field)}`;
    const token =
      field === null
        ? `split_part(substr(u.lexeme, 2), ${p.add(S, 'text')}, 1)`
        : `substr(u.lexeme, 2, char_length(u.lexeme) - ${p.add(Array.from(suffix).length + 1, 'int')})`;
    const pattern = `t${likeEscape(prefix)}%${field === null ? '' : likeEscape(suffix)}`;
    const lengthOk = (x: string, length: number) => `abs(char_length(${x}) - ${p.add(length, 'int')}) <= ${d}`;
    this.ctes.push(`${name} AS MATERIALIZED (
      SELECT trellis_search_any(array_agg('t' || token || ${p.add(suffix, 'text')}) FILTER (WHERE d <= ${d}), ${field === null}) AS q,
             trellis_search_any(array_agg('t' || token || ${p.add(suffix, 'text')}) FILTER (WHERE d <= 1), ${field === null}) AS q1
      FROM (
        SELECT v.token, trellis_search_fuzzy_distance(v.token, ${p.add(term, 'text')}, ${d}, ${transpositions}) AS d
        FROM (SELECT DISTINCT ${token} AS token FROM elements e, unnest(e.search) u
              WHERE ${narrow === null ? '' : `e.search @@ ${this.tsParam(narrow)} AND `}u.lexeme LIKE ${p.add(pattern, 'text')}
                AND ${field === null ? `position(${p.add(S, 'text')} in u.lexeme) > 0` : lengthOk('u.lexeme', Array.from(exactLexeme).length)}
                AND (${this.searchable})) v
        ${field === null ? `WHERE ${lengthOk('v.token', Array.from(term).length)}` : ''}
        ORDER BY 2, 1
        LIMIT ${p.add(maxExpansions, 'int')}
      ) expansion)`);
    return {
      cond: { k: 'ts', q: { op: 'sql', sql: `(SELECT q FROM ${name})` } },
      score: {
        k: 'sql',
        sql: () =>
          `CASE WHEN e.search @@ ${this.tsParam(lex(exactLexeme, field === null))} THEN 1 WHEN e.search @@ (SELECT q1 FROM ${name}) THEN 0.5
                WHEN e.search @@ (SELECT q FROM ${name}) THEN ${(1 / 3).toFixed(6)} ELSE 0 END`,
      },
    };
  }

  /** How short the field is, 0..0.8, from the `n` lexemes (the shortest string of the field counts). */
  private norm(field: string): Score {
    const whens = () => NORM_WEIGHTS.map((w, i) => `WHEN e.search @@ ${this.tsParam(lex(normLex(i + 1, field)))} THEN ${w}`).join(' ');
    return { k: 'sql', sql: () => `CASE ${whens()} ELSE 0 END` };
  }

  // -- term, terms ------------------------------------------------------------------------------------------------

  private term(body: unknown, path: string): Clause {
    const { field, value, opts, at } = fieldClause(body, path, 'value', ['case_insensitive']);
    const v = scalar(value, isObject((body as Json)[field]) ? `${at}.value` : at);
    const ci = opts.case_insensitive ?? false;
    if (typeof ci !== 'boolean') fail(`${at}.case_insensitive`, 'must be a boolean');
    return this.termOn(fieldOf(field), v, boostOf(opts, at), at, ci as boolean);
  }

  private termOn(target: Field, value: string | number | boolean, boost: number, at: string, caseInsensitive: boolean): Clause {
    const cond = this.termCond(target, value, at, caseInsensitive);
    const narrow = target.kind === 'id' && cond.k === 'sql' ? { ts: null, ids: [String(value).toLowerCase()] } : narrowOf(cond);
    return { cond, score: constScore(boost), narrow: caseInsensitive && target.kind === 'keyword' ? { ts: lex(existsLex(target.name)), ids: null } : narrow };
  }

  private termCond(target: Field, value: string | number | boolean, at: string, caseInsensitive: boolean): Cond {
    switch (target.kind) {
      case 'none':
        return FALSE;
      case 'id':
        return UUID.test(String(value)) ? { k: 'sql', sql: () => `e.id = ${this.params.add(String(value).toLowerCase(), 'uuid')}` } : FALSE;
      case 'date': {
        const at0 = dateValue(value, at);
        return { k: 'sql', sql: () => `${shownTimeSql(`e.${target.column}`)} = ${this.params.add(at0, 'timestamptz')}` };
      }
      case 'file': {
        // The exact value; a string that spells a number or a boolean also equals that value (as on data fields).
        const exact = typeof value === 'string' ? exactValue(value) : null;
        const candidates = [JSON.stringify(value), ...(exact === null ? [] : [exact])];
        if (caseInsensitive && typeof value === 'string')
          return { k: 'sql', sql: () => `lower(${this.fileText(target.keys)}) = lower(${this.params.add(value, 'text')})` };
        return { k: 'sql', sql: () => `${this.fileValue(target.keys)} = ANY(${this.params.add(candidates, 'jsonb[]')})` };
      }
      case 'keyword':
        if (caseInsensitive) return lexemeLike(`k${likeEscape(escape(String(value)))}${likeEscape(S + escape(target.name))}`, this.params, true);
        return lexCond(keywordLex(String(value), target.name));
      case 'any': {
        const exact = exactValue(value);
        return or([typeof value === 'string' ? lexCond(`t${value}${S}`, true) : FALSE, exact === null ? FALSE : lexCond(`v${exact}${S}`, true)]);
      }
      case 'data': {
        const exact = exactValue(value);
        // A text field holds tokens: the value is not analysed, so only a single lower-case token can match.
        const token = typeof value === 'string' && analyze(value).join(' ') === value && !value.includes(' ') ? lexCond(textLex(value, target.name)) : FALSE;
        return or([token, exact === null ? FALSE : lexCond(valueLex(exact, target.name))]);
      }
    }
  }

  private terms(body: unknown, path: string): Clause {
    if (!isObject(body)) fail(path, `must be an object {field: [values]}, not ${describe(body)}`);
    const fields = Object.keys(body as Json).filter((k) => k !== 'boost' && k !== '_name');
    if (fields.length !== 1) fail(path, `must name exactly one field, not ${fields.length}`);
    const field = fields[0]!;
    const list = (body as Json)[field];
    if (!Array.isArray(list)) fail(`${path}.${field}`, `must be a list of values (terms lookups are not supported), not ${describe(list)}`);
    // Every value beyond the first counts as a clause, as a match query's terms do: the work per row grows with them.
    this.countClauses(Math.max(0, (list as unknown[]).length - 1), `${path}.${field}`);
    const boost = boostOf(body as Json, path);
    const target = fieldOf(field);
    const values = [...new Set((list as unknown[]).map((v, i) => scalar(v, `${path}.${field}[${i}]`)))];
    const cond = this.termsCond(target, values, `${path}.${field}`);
    if (cond.k === 'const' && !cond.value) return { cond, score: ZERO, narrow: NO_NARROW };
    const ids = target.kind === 'id' && cond.k === 'sql' ? values.map((v) => String(v).toLowerCase()).filter((v) => UUID.test(v)) : null;
    return { cond, score: constScore(boost), narrow: ids === null ? narrowOf(cond) : { ts: null, ids } };
  }

  /**
   * Any of `values` on one field, as one condition whatever their number: an array parameter where the field is a
   * column or a file property, one tsquery where it is indexed as lexemes (rendered as a balanced tree, tsText).
   */
  private termsCond(target: Field, values: (string | number | boolean)[], at: string): Cond {
    switch (target.kind) {
      case 'id': {
        const ids = [...new Set(values.map((v) => String(v).toLowerCase()).filter((v) => UUID.test(v)))];
        return ids.length === 0 ? FALSE : { k: 'sql', sql: () => `e.id = ANY(${this.params.add(ids, 'uuid[]')})` };
      }
      case 'date': {
        const dates = values.map((v, i) => dateValue(v, `${at}[${i}]`));
        return dates.length === 0 ? FALSE : { k: 'sql', sql: () => `${shownTimeSql(`e.${target.column}`)} = ANY(${this.params.add(dates, 'timestamptz[]')})` };
      }
      case 'file': {
        const candidates = values.flatMap((v) => {
          const exact = typeof v === 'string' ? exactValue(v) : null;
          return [JSON.stringify(v), ...(exact === null ? [] : [exact])];
        });
        return candidates.length === 0 ? FALSE : { k: 'sql', sql: () => `${this.fileValue(target.keys)} = ANY(${this.params.add(candidates, 'jsonb[]')})` };
      }
      default:
        return or(values.map((v, i) => this.termCond(target, v, `${at}[${i}]`, false)));
    }
  }

  // -- prefix, wildcard -------------------------------------------------------------------------------------------

  private pattern(body: unknown, path: string, kind: 'prefix' | 'wildcard'): Clause {
    const valueKey = kind === 'prefix' ? 'value' : isObject(body) && Object.values(body).some((v) => isObject(v) && 'wildcard' in v) ? 'wildcard' : 'value';
    const { field, value, opts, at } = fieldClause(body, path, valueKey, ['case_insensitive', 'rewrite']);
    const v = stringValue(value, isObject((body as Json)[field]) ? `${at}.${valueKey}` : at);
    const ci = opts.case_insensitive ?? false;
    if (typeof ci !== 'boolean') fail(`${at}.case_insensitive`, 'must be a boolean');
    const boost = boostOf(opts, at);
    const parts = kind === 'prefix' ? { like: `${likeEscape(v)}%`, literalPrefix: v, exact: null } : wildcardToLike(v);
    return this.patternOn(fieldOf(field), parts, boost, ci as boolean, at);
  }

  /** A term-level pattern (LIKE syntax, over the raw value) on the keyword or on the tokens of a field. */
  patternOn(target: Field, p: { like: string; literalPrefix: string; exact: string | null }, boost: number, caseInsensitive: boolean, at: string): Clause {
    let kindLetter: string;
    let valueOf: (s: string) => string;
    let suffix: string;
    switch (target.kind) {
      case 'none':
        return { cond: FALSE, score: ZERO, narrow: NO_NARROW };
      case 'keyword':
        [kindLetter, valueOf, suffix] = ['k', escape, likeEscape(S + escape(target.name))];
        break;
      case 'data':
        [kindLetter, valueOf, suffix] = ['t', (s) => s, likeEscape(S + escape(target.name))];
        break;
      case 'any':
        [kindLetter, valueOf, suffix] = ['t', (s) => s, `${likeEscape(S)}%`];
        break;
      case 'file': {
        // On the value itself (file metadata are single values, not tokens).
        const cond: Cond = caseInsensitive
          ? { k: 'sql', sql: () => `lower(${this.fileText(target.keys)}) LIKE lower(${this.params.add(p.like, 'text')})` }
          : { k: 'sql', sql: () => `${this.fileText(target.keys)} LIKE ${this.params.add(p.like, 'text')}` };
        return { cond, score: constScore(boost), narrow: NO_NARROW };
      }
      default:
        return fail(at, 'prefix and wildcard queries apply to properties, not to _id, created or updated');
    }
    const score = constScore(boost);
    if (p.exact !== null && !caseInsensitive) {
      // No wildcard at all: an exact term.
      const cond = target.kind === 'any' ? lexCond(`t${p.exact}${S}`, true) : lexCond(`${kindLetter}${valueOf(p.exact)}${S}${escape(target.name)}`);
      return { cond, score, narrow: narrowOf(cond) };
    }
    // The escape characters of the LIKE pattern survive escape() (they are not \x1d-\x1f), so escaping the pattern
    // for the lexeme is the same as escaping the value.
    const cond = lexemeLike(`${kindLetter}${valueOf(p.like)}${suffix}`, this.params, caseInsensitive);
    const narrowLexeme = `${kindLetter}${valueOf(p.literalPrefix)}`;
    const narrow: Narrow =
      p.literalPrefix !== '' && !caseInsensitive && lexemeFits(narrowLexeme)
        ? { ts: lex(narrowLexeme, true), ids: null }
        : target.kind === 'any'
          ? NO_NARROW
          : { ts: lex(existsLex((target as { name: string }).name)), ids: null };
    return { cond, score, narrow };
  }

  // -- range, exists, ids -----------------------------------------------------------------------------------------

  private range(body: unknown, path: string): Clause {
    if (!isObject(body)) fail(path, `must be an object {field: {gte, lt, …}}, not ${describe(body)}`);
    const fields = Object.keys(body as Json).filter((k) => k !== '_name');
    if (fields.length !== 1) fail(path, `must name exactly one field, not ${fields.length}`);
    const field = fields[0]!;
    const at = `${path}.${field}`;
    const bounds = (body as Json)[field];
    if (!isObject(bounds)) fail(at, `must be an object with gte, gt, lte or lt, not ${describe(bounds)}`);
    onlyKeys(bounds as Json, at, ['gte', 'gt', 'lte', 'lt', 'boost', '_name']);
    const ops = (['gte', 'gt', 'lte', 'lt'] as const).filter((op) => (bounds as Json)[op] !== undefined && (bounds as Json)[op] !== null);
    const boost = boostOf(bounds as Json, at);
    const target = fieldOf(field);
    return { ...this.rangeOn(target, ops.map((op) => [op, (bounds as Json)[op]] as const), `${at}`), score: constScore(boost) };
  }

  rangeOn(target: Field, bounds: ReadonlyArray<readonly ['gte' | 'gt' | 'lte' | 'lt', unknown]>, at: string): { cond: Cond; narrow: Narrow } {
    switch (target.kind) {
      case 'none':
        return { cond: FALSE, narrow: NO_NARROW };
      case 'date': {
        const conds = bounds.map(([op, v]): Cond => {
          const date = dateValue(v, `${at}.${op}`);
          return { k: 'sql', sql: () => `${shownTimeSql(`e.${target.column}`)} ${SQL_OP[op]} ${this.params.add(date, 'timestamptz')}` };
        });
        return { cond: and(conds), narrow: NO_NARROW };
      }
      case 'data':
      case 'file':
        break;
      default:
        return fail(at, 'range queries apply to properties and to created or updated');
    }
    if (bounds.length === 0) return this.existsOn(target);
    if (target.kind === 'file') return { cond: this.jsonRange(shownFileSql('e'), [target.keys], bounds, at), narrow: NO_NARROW };
    const paths = keyPaths(target.name);
    if (paths.length === 0) return { cond: FALSE, narrow: NO_NARROW };
    // The jsonpath test is exact by itself; the field's `e` lexeme lets the GIN index narrow the rows to test.
    return { cond: this.jsonRange('e.data', paths, bounds, at), narrow: { ts: lex(existsLex(target.name)), ids: null } };
  }

  /** Some value at one of `paths` (key lists) of the jsonb `doc` within the bounds (numbers, or strings). */
  private jsonRange(doc: string, paths: string[][], bounds: ReadonlyArray<readonly ['gte' | 'gt' | 'lte' | 'lt', unknown]>, at: string): Cond {
    const vars: Record<string, string | number> = {};
    for (const [op, v] of bounds) {
      if (typeof v === 'number' && Number.isFinite(v)) vars[op] = v;
      else if (typeof v === 'string') vars[op] = NUMERIC.test(v) ? Number(v) : v;
      else fail(`${at}.${op}`, `must be a number or a string, not ${describe(v)}`);
    }
    const types = new Set(Object.values(vars).map((v) => typeof v));
    if (types.size > 1) fail(at, 'the bounds must all be numbers or all be strings');
    // jsonpath in lax mode unwraps arrays, and the filter tests each value alone (ES: one value within the range).
    const test = bounds.map(([op]) => `@ ${SQL_OP[op]} $${op}`).join(' && ');
    const tests = paths.map((keys) => `exists(@${keys.map((k) => `.${JSON.stringify(k)}`).join('')} ? (${test}))`);
    return {
      k: 'sql',
      sql: () => `jsonb_path_exists(${doc}, ${this.params.add(`$ ? (${tests.join(' || ')})`, 'jsonpath')}, ${this.params.add(JSON.stringify(vars), 'jsonb')}, true)`,
    };
  }

  // The shown file property at `keys` (shownFileSql). Both add a parameter: call them where the SQL is written, in
  // a condition's sql(), so that a condition left out adds none.

  /** SQL: the property as jsonb, null when absent. */
  private fileValue(keys: string[]): string {
    return `NULLIF(${shownFileSql('e')} #> ${this.params.add(keys, 'text[]')}, 'null'::jsonb)`;
  }

  /** SQL: the property as text (strings without their quotes). */
  private fileText(keys: string[]): string {
    return `(${shownFileSql('e')} #>> ${this.params.add(keys, 'text[]')})`;
  }

  private exists(body: unknown, path: string): Clause {
    if (!isObject(body)) fail(path, `must be an object {field: …}, not ${describe(body)}`);
    onlyKeys(body as Json, path, ['field', 'boost', '_name']);
    const field = stringValue((body as Json).field, `${path}.field`);
    const boost = boostOf(body as Json, path);
    return { ...this.existsOn(fieldOf(field)), score: constScore(boost) };
  }

  existsOn(target: Field): { cond: Cond; narrow: Narrow } {
    switch (target.kind) {
      case 'id':
      case 'date':
        return { cond: TRUE, narrow: NO_NARROW };
      case 'none':
        return { cond: FALSE, narrow: NO_NARROW };
      case 'any': {
        const cond = lexCond('e', true);
        return { cond, narrow: narrowOf(cond) };
      }
      case 'keyword': {
        const narrow = lex(existsLex(target.name));
        return { cond: and([{ k: 'ts', q: narrow }, lexemeLike(`k%${likeEscape(S + escape(target.name))}`, this.params)]), narrow: { ts: narrow, ids: null } };
      }
      case 'data': {
        const cond = lexCond(existsLex(target.name));
        return { cond, narrow: narrowOf(cond) };
      }
      case 'file':
        return { cond: { k: 'sql', sql: () => `${this.fileValue(target.keys)} IS NOT NULL` }, narrow: NO_NARROW };
    }
  }

  private ids(body: unknown, path: string): Clause {
    if (!isObject(body)) fail(path, `must be an object {values: [ids]}, not ${describe(body)}`);
    onlyKeys(body as Json, path, ['values', 'boost', '_name']);
    const values = (body as Json).values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'string')) fail(`${path}.values`, 'must be a list of element ids');
    return this.terms({ _id: values, boost: (body as Json).boost ?? 1 }, path);
  }

  // -- bool -------------------------------------------------------------------------------------------------------

  private bool(body: unknown, path: string, depth: number): Clause {
    if (!isObject(body)) fail(path, `must be an object, not ${describe(body)}`);
    onlyKeys(body as Json, path, ['must', 'should', 'must_not', 'filter', 'minimum_should_match', 'boost', '_name']);
    const list = (key: string): Clause[] => {
      const v = (body as Json)[key];
      if (v === undefined || v === null) return [];
      const items = Array.isArray(v) ? v : [v];
      return items.map((item, i) => this.query(item, Array.isArray(v) ? `${path}.${key}[${i}]` : `${path}.${key}`, depth + 1));
    };
    const must = list('must');
    const filter = list('filter');
    const should = list('should');
    const mustNot = list('must_not');
    const boost = boostOf(body as Json, path);
    return boolOf(must, filter, should, mustNot, (body as Json).minimum_should_match, boost, `${path}.minimum_should_match`);
  }

  // -- query_string -----------------------------------------------------------------------------------------------

  private queryString(body: unknown, path: string, depth: number): Clause {
    if (!isObject(body)) fail(path, `must be an object, not ${describe(body)}`);
    onlyKeys(body as Json, path, ['query', 'default_field', 'default_operator', 'phrase_slop', 'boost', 'analyze_wildcard', 'allow_leading_wildcard', 'lenient', '_name']);
    const text = stringValue((body as Json).query, `${path}.query`);
    const defaultField = stringValue((body as Json).default_field ?? '*', `${path}.default_field`);
    const operator = String((body as Json).default_operator ?? 'OR').toLowerCase();
    if (operator !== 'or' && operator !== 'and') fail(`${path}.default_operator`, "must be 'OR' or 'AND'");
    const boost = boostOf(body as Json, path);
    const phraseSlop = nonNegativeInt((body as Json).phrase_slop ?? 0, `${path}.phrase_slop`);
    let parsed: LuceneQuery;
    try {
      parsed = parseLucene(text, operator as 'and' | 'or', MAX_DEPTH);
    } catch (error) {
      if (error instanceof LuceneSyntaxError) return fail(`${path}.query`, `is not a valid query string (${error.message})`);
      throw error;
    }
    const clause = new LuceneTranslator(this, defaultField, operator, `${path}.query`, depth, phraseSlop).query(parsed, null);
    return boost === 1 ? clause : { ...clause, score: { k: 'times', factor: boost, score: clause.score } };
  }

  // -- rendering --------------------------------------------------------------------------------------------------

  tsParam(q: Ts): string {
    return renderTs(q, this.params);
  }
}

/** bool semantics of ES: must and filter required; should scores, required by minimum_should_match (default 1
 * without must/filter, else 0; and at least one should match when there is nothing else to match). */
function boolOf(must: Clause[], filter: Clause[], should: Clause[], mustNot: Clause[], msm: unknown, boost: number, msmPath: string): Clause {
  let required = msm === undefined || msm === null ? (must.length + filter.length === 0 && should.length > 0 ? 1 : 0) : minimumShouldMatch(msm, should.length, msmPath);
  if (must.length + filter.length === 0 && should.length > 0) required = Math.max(required, 1);
  const shouldCond: Cond =
    required <= 0 ? TRUE : required > should.length ? FALSE : required === 1 ? or(should.map((c) => c.cond)) : { k: 'atLeast', n: required, items: should.map((c) => c.cond) };
  const cond = and([...must.map((c) => c.cond), ...filter.map((c) => c.cond), shouldCond, ...mustNot.map((c) => not(c.cond))]);
  const narrow = narrowAnd([...must.map((c) => c.narrow), ...filter.map((c) => c.narrow), ...(required >= 1 ? [narrowOr(should.map((c) => c.narrow))] : [])]);
  const score: Score = {
    k: 'times',
    factor: boost,
    score: { k: 'sum', parts: [...must.map((c) => ({ when: null, score: c.score })), ...should.map((c) => ({ when: c.cond, score: c.score }))] },
  };
  return { cond, score, narrow };
}

/** minimum_should_match: an integer, a negative integer (all but n), a percentage or a negative percentage. */
function minimumShouldMatch(value: unknown, total: number, path: string): number {
  if (value === undefined || value === null) return 1;
  if (typeof value === 'number' && Number.isInteger(value)) return value < 0 ? total + value : value;
  if (typeof value === 'string') {
    const m = /^\s*(-?)(\d+)(%?)\s*$/.exec(value);
    if (m) {
      const n = Number(m[2]);
      const count = m[3] === '%' ? Math.floor((total * n) / 100) : n;
      return m[1] === '-' ? total - count : count;
    }
  }
  return fail(path, `must be an integer or a percentage such as "75%", not ${describe(value)}`);
}

type Fuzziness = (term: string) => number;

function fuzzinessOf(value: unknown, path: string): Fuzziness {
  if (value === undefined || value === null) return () => 0;
  if (typeof value === 'number' || (typeof value === 'string' && /^[012]$/.test(value))) {
    const d = Number(value);
    if (![0, 1, 2].includes(d)) fail(path, 'must be 0, 1, 2 or "AUTO"');
    return () => d;
  }
  if (typeof value === 'string') {
    const m = /^AUTO(?::(\d+),(\d+))?$/i.exec(value.trim());
    if (m) {
      const low = m[1] === undefined ? 3 : Number(m[1]);
      const high = m[2] === undefined ? 6 : Number(m[2]);
      return (term) => {
        const length = Array.from(term).length;
        return length < low ? 0 : length < high ? 1 : 2;
      };
    }
  }
  return fail(path, `must be 0, 1, 2 or "AUTO", not ${describe(value)}`);
}

function nonNegativeInt(value: unknown, path: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 10_000) fail(path, `must be an integer from ${min} to 10000`);
  return value as number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** An ISO-8601 date (UTC when it has no offset, as ES) or epoch milliseconds, as an ISO string for timestamptz. */
function dateValue(value: unknown, path: string): string {
  if (typeof value === 'number' && Number.isFinite(value)) {
    const d = new Date(value);
    if (!Number.isNaN(d.getTime())) return timestamptzBound(d.getTime());
  }
  if (typeof value === 'string') {
    const m = ISO_DATE.exec(value.trim());
    if (m) {
      const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
      const iso = `${y}-${mo}-${d}T${h}:${mi}:${s}${frac ? `.${frac.slice(0, 3).padEnd(3, '0')}` : ''}${zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone}`;
      const date = new Date(iso);
      // Date accepts February 30th (as March 1st); ES does not.
      const plain = new Date(`${y}-${mo}-${d}T00:00:00Z`);
      if (!Number.isNaN(date.getTime()) && plain.toISOString().slice(0, 10) === `${y}-${mo}-${d}` && Number(h) < 24 && Number(mi) < 60 && Number(s) < 60)
        return timestamptzBound(date.getTime());
    }
  }
  return fail(path, `must be an ISO-8601 date ("YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ") or epoch milliseconds, not ${describe(value)}`);
}

/** The key paths a dotted field name can stand for ("a.b": a -> b, or the key "a.b"), as ES treats both alike. */
function keyPaths(name: string): string[][] {
  const parts = name.split('.');
  if (parts.length > 6) return [parts, [name]].filter((keys) => !keys[0]!.startsWith('_'));
  const out: string[][] = [];
  for (let mask = 0; mask < 1 << (parts.length - 1); mask++) {
    const keys: string[] = [parts[0]!];
    for (let i = 1; i < parts.length; i++) {
      if (mask & (1 << (i - 1))) keys[keys.length - 1] += `.${parts[i]}`;
      else keys.push(parts[i]!);
    }
    if (!keys[0]!.startsWith('_')) out.push(keys);
  }
  return out;
}

/** A wildcard pattern (`*`, `?`, `\` escapes) as a LIKE pattern, its literal prefix, and the value when it has no wildcard. */
function wildcardToLike(pattern: string): { like: string; literalPrefix: string; exact: string | null } {
  let like = '';
  let literal = '';
  let prefixDone = false;
  let hasWildcard = false;
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    let c = chars[i]!;
    if (c === '\\' && i + 1 < chars.length) c = chars[++i]!;
    else if (c === '*' || c === '?') {
      like += c === '*' ? '%' : '_';
      prefixDone = true;
      hasWildcard = true;
      continue;
    }
    like += likeEscape(c);
    if (!prefixDone) literal += c;
  }
  return { like, literalPrefix: literal, exact: hasWildcard ? null : literal };
}

// ---------------------------------------------------------------------------------------------------------------
// query_string: the parsed query (lucene.ts) to clauses
// ---------------------------------------------------------------------------------------------------------------

class LuceneTranslator {
  constructor(
    private readonly c: Compiler,
    private readonly defaultField: string,
    private readonly operator: string,
    private readonly path: string,
    private readonly depth: number,
    /** query_string's phrase_slop: the slop of a phrase without `~N`. */
    private readonly phraseSlop: number,
  ) {}

  /** A query (or a group) as a bool: Lucene's occurrences are ES's must, should and must_not. */
  query(q: LuceneQuery, field: string | null, depth = this.depth): Clause {
    if (depth > MAX_DEPTH) fail(this.path, `groups nest at most ${MAX_DEPTH} levels deep`);
    if (q.clauses.length === 1 && q.clauses[0]!.occur !== 'must_not') return this.node(q.clauses[0]!.node, field, depth);
    const of = (occur: string) => q.clauses.filter((c) => c.occur === occur).map((c) => this.node(c.node, field, depth));
    // A purely negative group matches everything else (ES adds a match_all), scoring 0.
    return boolOf(of('must'), [], of('should'), of('must_not'), undefined, 1, this.path);
  }

  private node(n: LuceneNode, inherited: string | null, depth: number): Clause {
    this.c.countClauses(1, this.path);
    const field = n.field ?? inherited;
    const boost = checkBoost(n.boost ?? 1, `${this.path} (a ^ boost)`);
    const boosted = (clause: Clause) => (boost === 1 ? clause : { ...clause, score: { k: 'times' as const, factor: boost, score: clause.score } });
    const name = field ?? this.defaultField;
    const target = fieldOf(name);
    switch (n.k) {
      case 'group':
        return boosted(this.query(n.query, field, depth + 1));
      case 'range': {
        const bound = (v: string) => (NUMERIC.test(v) ? Number(v) : v);
        const bounds: Array<readonly ['gte' | 'gt' | 'lte' | 'lt', unknown]> = [];
        if (n.min !== null) bounds.push([n.minInclusive ? 'gte' : 'gt', bound(n.min)]);
        if (n.max !== null) bounds.push([n.maxInclusive ? 'lte' : 'lt', bound(n.max)]);
        return { ...this.c.rangeOn(target, bounds, this.path), score: constScore(boost) };
      }
      case 'compare':
        return { ...this.c.rangeOn(target, [[n.op, NUMERIC.test(n.value) ? Number(n.value) : n.value]], this.path), score: constScore(boost) };
      case 'term':
        break;
    }
    if (name === '_exists_') return { ...this.c.existsOn(fieldOf(n.text)), score: constScore(boost) };
    if (!n.quoted && n.raw === '*') return { ...this.c.existsOn(target), score: constScore(boost) };
    if (!n.quoted && /[*?]/.test(n.raw.replace(/\\./g, ''))) {
      // Wildcard terms are term-level, lower-cased like the tokens (ES normalises them for text fields).
      const pattern = target.kind === 'keyword' ? n.raw : fold(n.raw);
      return this.c.patternOn(target, wildcardToLike(pattern), boost, false, this.path);
    }
    const fuzzy = n.fuzzy ?? 0;
    return this.c.matchText(target, n.text, {
      operator: n.quoted ? 'and' : this.operator,
      fuzziness: () => fuzzy,
      transpositions: true,
      prefixLength: 0,
      maxExpansions: 50,
      boost,
      zeroTerms: 'none',
      msm: undefined,
      at: this.path,
      ...(n.quoted ? { phraseSlop: n.slop ?? this.phraseSlop } : {}),
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering to SQL
// ---------------------------------------------------------------------------------------------------------------

/** tsquery input text: every lexeme quoted, so no character of it is syntax. */
function tsText(q: Ts): string {
  switch (q.op) {
    case 'lex':
      return `'${q.lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'${q.prefix ? ':*' : ''}`;
    case 'and':
    case 'or':
      // A tsquery is parsed into a chain and evaluated recursively like SQL's operators (see balanced).
      return balanced(q.items.map(tsText), q.op === 'and' ? '&' : '|');
    case 'not':
      return `!(${tsText(q.item)})`;
    case 'sql':
      throw new Error('a computed tsquery has no text form');
  }
}

const isStatic = (q: Ts): boolean => (q.op === 'sql' ? false : q.op === 'lex' ? true : q.op === 'not' ? isStatic(q.item) : q.items.every(isStatic));

/**
 * A static tsquery within PostgreSQL's limits, or 400. Lexemes built from values are checked where they are made
 * (lexCond: a value no stored lexeme can equal matches nothing); what is left here is a field name too long to
 * search for, or a query of more words than one tsquery holds.
 */
function checkTsquery(q: Ts): void {
  let total = 0;
  const walk = (t: Ts): void => {
    if (t.op === 'lex') {
      const bytes = Buffer.byteLength(t.lexeme);
      if (bytes > TSQUERY_MAX_OPERAND_BYTES)
        fail('query', `a field name or term is too long to search for (a search term is at most ${TSQUERY_MAX_OPERAND_BYTES} bytes with its field name)`);
      total += bytes + 1;
    } else if (t.op === 'not') walk(t.item);
    else if (t.op !== 'sql') t.items.forEach(walk);
  };
  walk(q);
  if (total > TSQUERY_MAX_TOTAL_BYTES) fail('query', `its terms add up to more than PostgreSQL takes in one search (${TSQUERY_MAX_TOTAL_BYTES.toLocaleString('en-US')} bytes)`);
}

/** A tsquery as SQL: static parts as one bind parameter each, computed parts combined with && || !!. */
function renderTs(q: Ts, params: SqlParams): string {
  if (isStatic(q)) {
    checkTsquery(q);
    return params.add(tsText(q), 'tsquery');
  }
  switch (q.op) {
    case 'sql':
      return q.sql;
    case 'not':
      return `(!! ${renderTs(q.item, params)})`;
    case 'and':
    case 'or': {
      // The static items as one tsquery parameter, the computed ones beside it, as a balanced tree (see balanced).
      const statics = q.items.filter(isStatic);
      const computed = q.items.filter((i) => !isStatic(i)).map((i) => renderTs(i, params));
      const parts = statics.length === 0 ? computed : [renderTs(statics.length === 1 ? statics[0]! : { op: q.op, items: statics }, params), ...computed];
      return balanced(parts, q.op === 'and' ? '&&' : '||');
    }
    default:
      throw new Error('unreachable');
  }
}

function renderCond(c: Cond, params: SqlParams): string {
  switch (c.k) {
    case 'const':
      return c.value ? 'true' : 'false';
    case 'ts':
      return `e.search @@ ${renderTs(c.q, params)}`;
    case 'sql':
      return c.sql();
    case 'not':
      return `NOT (${renderCond(c.item, params)})`;
    case 'atLeast':
      return `${balanced(c.items.map((i) => `(${renderCond(i, params)})::int`), '+')} >= ${params.add(c.n, 'int')}`;
    case 'and':
    case 'or': {
      // All lexeme conditions of one and/or become one tsquery: one index lookup, one @@ per row.
      const ts = c.items.filter((i): i is { k: 'ts'; q: Ts } => i.k === 'ts');
      const rest = c.items.filter((i) => i.k !== 'ts');
      const parts = rest.map((i) => renderCond(i, params));
      if (ts.length > 0) parts.unshift(renderCond({ k: 'ts', q: ts.length === 1 ? ts[0]!.q : { op: c.k, items: ts.map((t) => t.q) } }, params));
      return parts.length === 1 ? parts[0]! : `(${parts.map((p) => `(${p})`).join(c.k === 'and' ? ' AND ' : ' OR ')})`;
    }
  }
}

function renderScore(s: Score, params: SqlParams): string {
  switch (s.k) {
    case 'const':
      return s.value === 0 || s.value === 1 ? String(s.value) : params.add(s.value, 'float8');
    case 'sql':
      return s.sql();
    case 'times':
      return s.factor === 1 ? renderScore(s.score, params) : `${params.add(s.factor, 'float8')} * (${renderScore(s.score, params)})`;
    case 'sum': {
      const parts = s.parts
        .filter((p) => !(p.score.k === 'const' && p.score.value === 0) && !(p.when?.k === 'const' && !p.when.value))
        .map((p) =>
          p.when === null || (p.when.k === 'const' && p.when.value)
            ? renderScore(p.score, params)
            : `CASE WHEN ${renderCond(p.when, params)} THEN ${renderScore(p.score, params)} ELSE 0 END`,
        );
      return parts.length === 0 ? '0' : balanced(parts, '+');
    }
  }
}

/**
 * `(a op b op c …)` as a balanced tree of parenthesised pairs. PostgreSQL parses `a + b + c + …` (and a tsquery's
 * `a | b | c …`) into a chain as deep as it is long and recurses along it, which exceeds the stack of a server and
 * overflows the embedded database's. Balanced, the depth is the logarithm of the length.
 */
function balanced(parts: string[], op: string): string {
  if (parts.length === 1) return `(${parts[0]!})`;
  const middle = parts.length >> 1;
  return `(${balanced(parts.slice(0, middle), op)} ${op} ${balanced(parts.slice(middle), op)})`;
}

/**
 * Validates the client's query DSL object and compiles it for the row alias `e` of `elements`. Bind parameters are
 * appended to `params`. Throws a 400 (bad-content) naming the path of the first bad clause.
 */
/**
 * Compiles a query DSL object for the statement of search-engine.ts. `searchable` is an SQL boolean over the row
 * `e`, whether the caller may search it: the parts that read other rows than the hits (fuzzy expansions) read only
 * those, and may refer to the WITH entries the caller defines before `ctes`.
 */
export function compileQuery(query: unknown, params: SqlParams, searchable: string): CompiledQuery {
  const compiler = new Compiler(params, searchable);
  const clause = compiler.query(query, 'query');
  if (clause.cond.k === 'const' && !clause.cond.value) return { matchesNothing: true, ctes: [], where: ['false'], score: '0' };
  const where: string[] = [];
  if (clause.narrow.ts !== null && !(clause.cond.k === 'ts' && clause.cond.q === clause.narrow.ts)) where.push(`e.search @@ ${renderTs(clause.narrow.ts, params)}`);
  if (clause.narrow.ids !== null) where.push(`e.id = ANY(${params.add(clause.narrow.ids, 'uuid[]')})`);
  if (!(clause.cond.k === 'const' && clause.cond.value)) where.push(renderCond(clause.cond, params));
  return { matchesNothing: false, ctes: compiler.ctes, where, score: renderScore(clause.score, params) };
}
