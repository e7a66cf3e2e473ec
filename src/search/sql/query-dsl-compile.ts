// A validated query DSL (domain/search/query-dsl.ts) compiled for the row alias `e` of `elements`: a condition the
// search index can narrow (the lexeme layout is described where the schema defines the index) and a score, with every
// value a bind parameter. docs/search.md describes the scores; ties are broken by id by the caller.

import { type ElementId, parseElementId } from '../../values.js';
import { analyze, exactValue, fold, SEARCH_LIMITS } from '../index/analysis.js';
import {
  escapeLexeme,
  existsLex,
  keywordLex,
  lexemeFits,
  normLex,
  S,
  textLex,
  tokenLexeme,
  valueLex,
} from '../index/lexemes.js';
import type { DslField, DslQuery, RangeOp, Scalar, TextMode, TextTerm } from '../language/query-dsl-types.js';
import type { Binder } from './binder.js';
import { shownFileSql, shownTimeSql } from './shown.js';
import {
  and,
  type Clause,
  type Cond,
  constScore,
  FALSE,
  lex,
  lexCond,
  type Narrow,
  NO_NARROW,
  narrowAnd,
  narrowOf,
  narrowOr,
  not,
  or,
  renderCond,
  renderScore,
  renderTs,
  type Score,
  TRUE,
  type Ts,
  ZERO,
} from './tsquery.js';

export interface CompiledQuery {
  /** true when the query can match nothing (the caller need not ask the database). */
  matchesNothing: boolean;
  /** WITH entries the conditions refer to (fuzzy expansions), without the WITH keyword. */
  ctes: string[];
  /** Conjuncts of the WHERE clause: index lookups first, then the exact condition. */
  where: string[];
  /** float8 score of a matching row. */
  score: string;
}

/**
 * Compiles a query for the statement of search-engine.ts. `searchable` is an SQL boolean over the row `e`, whether
 * the caller may search it: the parts that read other rows than the hits (fuzzy expansions) read only those, and
 * may refer to the WITH entries the caller defines before `ctes`.
 */
export function compileQuery(query: DslQuery, params: Binder, searchable: string): CompiledQuery {
  const compiler = new Compiler(params, searchable);
  const clause = compiler.clause(query);
  if (clause.cond.k === 'const' && !clause.cond.value)
    return { matchesNothing: true, ctes: [], where: ['false'], score: '0' };
  const where: string[] = [];
  if (clause.narrow.ts !== null && !(clause.cond.k === 'ts' && clause.cond.q === clause.narrow.ts))
    where.push(`e.search @@ ${renderTs(clause.narrow.ts, params)}`);
  if (clause.narrow.ids !== null) where.push(`e.id = ANY(${params.bind(clause.narrow.ids, 'uuid[]')})`);
  if (!(clause.cond.k === 'const' && clause.cond.value)) where.push(renderCond(clause.cond, params));
  return { matchesNothing: false, ctes: compiler.ctes, where, score: renderScore(clause.score, params) };
}

/** The SQL (and jsonpath) operator of each range bound. */
const SQL_OP = { gte: '>=', gt: '>', lte: '<=', lt: '<' } as const;
/** The score of a short field by its length bucket (the `n` lexemes), below 1 so that a matched term counts more. */
const NORM_WEIGHTS = [0.8, 0.6, 0.4, 0.2];

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A wildcard pattern (`*`, `?`, `\` escapes) as a LIKE pattern, its literal prefix, and the value when it has no wildcard. */
function wildcardToLike(pattern: string): LikePattern {
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

interface LikePattern {
  like: string;
  literalPrefix: string;
  exact: string | null;
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

/** Condition: some lexeme of the element matches a LIKE pattern (for what tsquery cannot express exactly). */
function lexemeLike(pattern: string, params: Binder, caseInsensitive = false): Cond {
  const l = caseInsensitive ? 'trellis_search_fold(u.lexeme)' : 'u.lexeme';
  return {
    k: 'sql',
    sql: () =>
      `EXISTS (SELECT 1 FROM unnest(e.search) u WHERE ${l} LIKE ${params.bind(caseInsensitive ? fold(pattern) : pattern, 'text')})`,
  };
}

interface TextQuery {
  field: string | null;
  query: Scalar;
  tokens: string[];
  terms: TextTerm[];
  mode: TextMode;
  transpositions: boolean;
  prefixLength: number;
  maxExpansions: number;
  boost: number;
  zeroTerms: 'none' | 'all';
}

class Compiler {
  readonly ctes: string[] = [];
  private fuzzyTerms = 0;

  constructor(
    readonly params: Binder,
    private readonly searchable: string,
  ) {}

  clause(q: DslQuery): Clause {
    switch (q.k) {
      case 'all':
        return { cond: TRUE, score: constScore(q.boost), narrow: NO_NARROW };
      case 'none':
        return { cond: FALSE, score: ZERO, narrow: NO_NARROW };
      case 'constantScore': {
        const inner = this.clause(q.filter);
        return { cond: inner.cond, score: constScore(q.boost), narrow: inner.narrow };
      }
      case 'boosted': {
        const inner = this.clause(q.query);
        return { ...inner, score: { k: 'times', factor: q.factor, score: inner.score } };
      }
      case 'bool':
        return this.bool(
          q.must.map((c) => this.clause(c)),
          q.filter.map((c) => this.clause(c)),
          q.should.map((c) => this.clause(c)),
          q.mustNot.map((c) => this.clause(c)),
          q.required,
          q.boost,
        );
      case 'text':
        return this.text(q);
      case 'term':
        return this.termOn(q.field, q.value, q.boost, q.caseInsensitive);
      case 'terms':
        return this.terms(q.field, q.values, q.boost);
      case 'pattern':
        return this.patternOn(
          q.field,
          q.syntax === 'prefix'
            ? { like: `${likeEscape(q.pattern)}%`, literalPrefix: q.pattern, exact: null }
            : wildcardToLike(q.pattern),
          q.boost,
          q.caseInsensitive,
        );
      case 'range':
        return { ...this.rangeOn(q.field, q.bounds), score: constScore(q.boost) };
      case 'exists':
        return { ...this.existsOn(q.field), score: constScore(q.boost) };
    }
  }

  /** bool: must and filter required, should scores and `required` of them must match, must_not excludes. */
  private bool(
    must: Clause[],
    filter: Clause[],
    should: Clause[],
    mustNot: Clause[],
    required: number,
    boost: number,
  ): Clause {
    const shouldCond: Cond =
      required <= 0
        ? TRUE
        : required > should.length
          ? FALSE
          : required === 1
            ? or(should.map((c) => c.cond))
            : { k: 'atLeast', n: required, items: should.map((c) => c.cond) };
    const cond = and([
      ...must.map((c) => c.cond),
      ...filter.map((c) => c.cond),
      shouldCond,
      ...mustNot.map((c) => not(c.cond)),
    ]);
    const narrow = narrowAnd([
      ...must.map((c) => c.narrow),
      ...filter.map((c) => c.narrow),
      ...(required >= 1 ? [narrowOr(should.map((c) => c.narrow))] : []),
    ]);
    const score: Score = {
      k: 'times',
      factor: boost,
      score: {
        k: 'sum',
        parts: [
          ...must.map((c) => ({ when: null, score: c.score })),
          ...should.map((c) => ({ when: c.cond, score: c.score })),
        ],
      },
    };
    return { cond, score, narrow };
  }

  /** Analysed text: each term's lexeme (or its fuzzy expansion); a number or boolean also matches that value. */
  private text(q: TextQuery): Clause {
    const boost = constScore(q.boost);
    const field = q.field;
    // A number or boolean (or a string spelling one) also matches that exact value, as ES does on numeric fields.
    const exact = exactValue(q.query);
    const exactCond =
      exact === null ? FALSE : field === null ? lexCond(`v${exact}${S}`, true) : lexCond(valueLex(exact, field));
    if (q.terms.length === 0) {
      if (exact !== null) return { cond: exactCond, score: boost, narrow: narrowOf(exactCond) };
      return q.zeroTerms === 'all'
        ? { cond: TRUE, score: ZERO, narrow: NO_NARROW }
        : { cond: FALSE, score: ZERO, narrow: NO_NARROW };
    }
    const perTerm = q.terms.map((t) => this.termMatch(t, field, q));
    const conds = perTerm.map((t) => t.cond);
    let cond: Cond;
    if (q.mode.k === 'phrase')
      cond = q.tokens.length > 1 ? and([...conds, this.phrase(q.tokens, field, q.mode.slop)]) : and(conds);
    else if (q.mode.k === 'and') cond = and(conds);
    else {
      const required = q.mode.required;
      cond =
        required <= 1 ? or(conds) : required > q.terms.length ? FALSE : { k: 'atLeast', n: required, items: conds };
    }
    const textScore: Score = {
      k: 'times',
      factor: q.boost,
      score: {
        k: 'sum',
        parts: [
          ...perTerm.map((t) => ({ when: null, score: t.score })),
          { when: null, score: field === null ? ZERO : this.norm(field) },
        ],
      },
    };
    if (exact === null) return { cond, score: textScore, narrow: narrowOf(cond) };
    const both = or([cond, exactCond]);
    return {
      cond: both,
      score: {
        k: 'sum',
        parts: [
          { when: cond, score: textScore },
          { when: and([not(cond), exactCond]), score: boost },
        ],
      },
      narrow: narrowOf(both),
    };
  }

  /**
   * The words of a phrase in order, in one string at the field (any field when null), at most `slop` positions out
   * of place: checked on the element's value (trellis_search_phrase), since the index keeps no positions. It comes
   * after the words' index conditions, so it only runs on the elements that have them all.
   */
  private phrase(tokens: string[], field: string | null, slop: number): Cond {
    const p = this.params;
    // No value has more tokens than characters analysed, so a larger slop means the same (and stays an int).
    const spread = Math.min(slop, SEARCH_LIMITS.analysedChars);
    return {
      k: 'sql',
      sql: () =>
        `trellis_search_phrase(e.data, ${p.bind(field === null ? null : escapeLexeme(field), 'text')}, ${p.bind(tokens, 'text[]')}, ${p.bind(spread, 'int')})`,
    };
  }

  /** One analysed term: its condition and its score (1 when present; fuzzy: 1 / (1 + distance)). */
  private termMatch({ term, distance }: TextTerm, field: string | null, o: TextQuery): { cond: Cond; score: Score } {
    const exactLexeme = tokenLexeme(term, field);
    const exact = lexCond(exactLexeme, field === null);
    if (distance === 0 || exact.k === 'const') {
      if (exact.k === 'const') return { cond: exact, score: ZERO };
      return {
        cond: exact,
        score: { k: 'sql', sql: () => `(e.search @@ ${this.tsParam(lex(exactLexeme, field === null))})::int` },
      };
    }
    return this.fuzzyTerm(term, field, distance, o, exactLexeme);
  }

  /**
   * A fuzzy term, executed like ES's fuzzy query: the term is first expanded into the indexed tokens of the field
   * (of any field when `field` is null) within the edit distance (at most max_expansions, nearest first), then those
   * are looked up in the GIN index like exact terms. The expansion (a WITH entry, run once per statement) reads the
   * tokens of every element the caller may search that has the field (GIN lookup of its `e` lexeme, or of the term's
   * first prefix_length characters), keeps the distinct ones of about the right length and computes the distance
   * only for those (trellis_search_fuzzy_distance). Only what the caller may search: the tokens of other elements
   * would take expansion slots from the caller's own and tell which words exist where the caller cannot look. So a
   * fuzzy match costs a scan of the field's elements, not an index lookup; a prefix_length narrows it. An adjacent
   * transposition counts as one edit unless fuzzy_transpositions is false, as in ES.
   */
  private fuzzyTerm(
    term: string,
    field: string | null,
    distance: number,
    {
      transpositions,
      prefixLength,
      maxExpansions,
    }: { transpositions: boolean; prefixLength: number; maxExpansions: number },
    exactLexeme: string,
  ): { cond: Cond; score: Score } {
    const name = `fuzzy_${++this.fuzzyTerms}`;
    const p = this.params;
    const prefix = Array.from(term).slice(0, prefixLength).join('');
    const narrow = prefix !== '' ? lex(`t${prefix}`, true) : field !== null ? lex(existsLex(field)) : null;
    const d = p.bind(distance, 'int');
    // The lexemes of the field are t<token><S><field>: one per token, so they are compared directly and their length
    // filters before the DISTINCT. Of any field, a token is what precedes the first <S>, and it matches as the
    // prefix t<token><S> (as an exact match on every field does).
    const suffix = field === null ? S : `${S}${escapeLexeme(field)}`;
    const token =
      field === null
        ? `split_part(substr(u.lexeme, 2), ${p.bind(S, 'text')}, 1)`
        : `substr(u.lexeme, 2, char_length(u.lexeme) - ${p.bind(Array.from(suffix).length + 1, 'int')})`;
    const pattern = `t${likeEscape(prefix)}%${field === null ? '' : likeEscape(suffix)}`;
    const lengthOk = (x: string, length: number) => `abs(char_length(${x}) - ${p.bind(length, 'int')}) <= ${d}`;
    this.ctes.push(`${name} AS MATERIALIZED (
      SELECT trellis_search_any(array_agg('t' || token || ${p.bind(suffix, 'text')}) FILTER (WHERE d <= ${d}), ${field === null}) AS q,
             trellis_search_any(array_agg('t' || token || ${p.bind(suffix, 'text')}) FILTER (WHERE d <= 1), ${field === null}) AS q1
      FROM (
        SELECT v.token, trellis_search_fuzzy_distance(v.token, ${p.bind(term, 'text')}, ${d}, ${transpositions}) AS d
        FROM (SELECT DISTINCT ${token} AS token FROM elements e, unnest(e.search) u
              WHERE ${narrow === null ? '' : `e.search @@ ${this.tsParam(narrow)} AND `}u.lexeme LIKE ${p.bind(pattern, 'text')}
                AND ${field === null ? `position(${p.bind(S, 'text')} in u.lexeme) > 0` : lengthOk('u.lexeme', Array.from(exactLexeme).length)}
                AND (${this.searchable})) v
        ${field === null ? `WHERE ${lengthOk('v.token', Array.from(term).length)}` : ''}
        ORDER BY 2, 1
        LIMIT ${p.bind(maxExpansions, 'int')}
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
    const whens = () =>
      NORM_WEIGHTS.map((w, i) => `WHEN e.search @@ ${this.tsParam(lex(normLex(i + 1, field)))} THEN ${w}`).join(' ');
    return { k: 'sql', sql: () => `CASE ${whens()} ELSE 0 END` };
  }

  private termOn(target: DslField, value: Scalar, boost: number, caseInsensitive: boolean): Clause {
    const cond = this.termCond(target, value, caseInsensitive);
    const id = target.kind === 'id' ? parseElementId(String(value)) : null;
    const narrow = id !== null ? { ts: null, ids: [id] } : narrowOf(cond);
    return {
      cond,
      score: constScore(boost),
      narrow: caseInsensitive && target.kind === 'keyword' ? { ts: lex(existsLex(target.name)), ids: null } : narrow,
    };
  }

  /** An exact value on a field; on a date field `value` is the instant. */
  private termCond(target: DslField, value: Scalar, caseInsensitive: boolean): Cond {
    switch (target.kind) {
      case 'none':
        return FALSE;
      case 'id': {
        const id = parseElementId(String(value));
        return id === null ? FALSE : { k: 'sql', sql: () => `e.id = ${this.params.bind(id, 'uuid')}` };
      }
      case 'date':
        return {
          k: 'sql',
          sql: () => `${shownTimeSql(`e.${target.column}`)} = ${this.params.bind(value, 'timestamptz')}`,
        };
      case 'file': {
        // The exact value; a string that spells a number or a boolean also equals that value (as on data fields).
        const exact = typeof value === 'string' ? exactValue(value) : null;
        const candidates = [JSON.stringify(value), ...(exact === null ? [] : [exact])];
        if (caseInsensitive && typeof value === 'string')
          return {
            k: 'sql',
            sql: () => `lower(${this.fileText(target.keys)}) = lower(${this.params.bind(value, 'text')})`,
          };
        return {
          k: 'sql',
          sql: () => `${this.fileValue(target.keys)} = ANY(${this.params.bind(candidates, 'jsonb[]')})`,
        };
      }
      case 'keyword':
        if (caseInsensitive)
          return lexemeLike(
            `k${likeEscape(escapeLexeme(String(value)))}${likeEscape(S + escapeLexeme(target.name))}`,
            this.params,
            true,
          );
        return lexCond(keywordLex(String(value), target.name));
      case 'any': {
        const exact = exactValue(value);
        return or([
          typeof value === 'string' ? lexCond(`t${value}${S}`, true) : FALSE,
          exact === null ? FALSE : lexCond(`v${exact}${S}`, true),
        ]);
      }
      case 'data': {
        const exact = exactValue(value);
        // A text field holds tokens: the value is not analysed, so only a single lower-case token can match.
        const token =
          typeof value === 'string' && analyze(value).join(' ') === value && !value.includes(' ')
            ? lexCond(textLex(value, target.name))
            : FALSE;
        return or([token, exact === null ? FALSE : lexCond(valueLex(exact, target.name))]);
      }
    }
  }

  private terms(target: DslField, values: Scalar[], boost: number): Clause {
    const cond = this.termsCond(target, values);
    if (cond.k === 'const' && !cond.value) return { cond, score: ZERO, narrow: NO_NARROW };
    const ids = target.kind === 'id' && cond.k === 'sql' ? idsOf(values) : null;
    return { cond, score: constScore(boost), narrow: ids === null ? narrowOf(cond) : { ts: null, ids } };
  }

  /**
   * Any of `values` on one field, as one condition whatever their number: an array parameter where the field is a
   * column or a file property, one tsquery where it is indexed as lexemes (rendered as a balanced tree).
   */
  private termsCond(target: DslField, values: Scalar[]): Cond {
    switch (target.kind) {
      case 'id': {
        const ids = [...new Set(idsOf(values))];
        return ids.length === 0 ? FALSE : { k: 'sql', sql: () => `e.id = ANY(${this.params.bind(ids, 'uuid[]')})` };
      }
      case 'date':
        return values.length === 0
          ? FALSE
          : {
              k: 'sql',
              sql: () => `${shownTimeSql(`e.${target.column}`)} = ANY(${this.params.bind(values, 'timestamptz[]')})`,
            };
      case 'file': {
        const candidates = values.flatMap((v) => {
          const exact = typeof v === 'string' ? exactValue(v) : null;
          return [JSON.stringify(v), ...(exact === null ? [] : [exact])];
        });
        return candidates.length === 0
          ? FALSE
          : { k: 'sql', sql: () => `${this.fileValue(target.keys)} = ANY(${this.params.bind(candidates, 'jsonb[]')})` };
      }
      default:
        return or(values.map((v) => this.termCond(target, v, false)));
    }
  }

  /** A term-level pattern (LIKE syntax, over the raw value) on the keyword or on the tokens of a field. */
  private patternOn(target: DslField, p: LikePattern, boost: number, caseInsensitive: boolean): Clause {
    let kindLetter: string;
    let lexemeValue: (s: string) => string;
    let suffix: string;
    switch (target.kind) {
      case 'keyword':
        [kindLetter, lexemeValue, suffix] = ['k', escapeLexeme, likeEscape(S + escapeLexeme(target.name))];
        break;
      case 'data':
        [kindLetter, lexemeValue, suffix] = ['t', (s) => s, likeEscape(S + escapeLexeme(target.name))];
        break;
      case 'any':
        [kindLetter, lexemeValue, suffix] = ['t', (s) => s, `${likeEscape(S)}%`];
        break;
      case 'file': {
        // On the value itself (file metadata are single values, not tokens).
        const cond: Cond = caseInsensitive
          ? {
              k: 'sql',
              sql: () => `lower(${this.fileText(target.keys)}) LIKE lower(${this.params.bind(p.like, 'text')})`,
            }
          : { k: 'sql', sql: () => `${this.fileText(target.keys)} LIKE ${this.params.bind(p.like, 'text')}` };
        return { cond, score: constScore(boost), narrow: NO_NARROW };
      }
      default:
        // The parser refuses _id, created and updated.
        return { cond: FALSE, score: ZERO, narrow: NO_NARROW };
    }
    const score = constScore(boost);
    if (p.exact !== null && !caseInsensitive) {
      // No wildcard at all: an exact term.
      const cond =
        target.kind === 'any'
          ? lexCond(`t${p.exact}${S}`, true)
          : lexCond(`${kindLetter}${lexemeValue(p.exact)}${S}${escapeLexeme(target.name)}`);
      return { cond, score, narrow: narrowOf(cond) };
    }
    // The escape characters of the LIKE pattern survive escapeLexeme() (they are not \x1d-\x1f), so escaping the pattern
    // for the lexeme is the same as escaping the value.
    const cond = lexemeLike(`${kindLetter}${lexemeValue(p.like)}${suffix}`, this.params, caseInsensitive);
    const narrowLexeme = `${kindLetter}${lexemeValue(p.literalPrefix)}`;
    const narrow: Narrow =
      p.literalPrefix !== '' && !caseInsensitive && lexemeFits(narrowLexeme)
        ? { ts: lex(narrowLexeme, true), ids: null }
        : target.kind === 'any'
          ? NO_NARROW
          : { ts: lex(existsLex(target.name)), ids: null };
    return { cond, score, narrow };
  }

  /** Bounds on a field (instants on a date field); none: the field exists. */
  private rangeOn(
    target: DslField,
    bounds: ReadonlyArray<{ op: RangeOp; value: string | number }>,
  ): { cond: Cond; narrow: Narrow } {
    switch (target.kind) {
      case 'date': {
        const conds = bounds.map(
          ({ op, value }): Cond => ({
            k: 'sql',
            sql: () => `${shownTimeSql(`e.${target.column}`)} ${SQL_OP[op]} ${this.params.bind(value, 'timestamptz')}`,
          }),
        );
        return { cond: and(conds), narrow: NO_NARROW };
      }
      case 'data':
      case 'file':
        break;
      default:
        // 'none'; the parser refuses the other kinds.
        return { cond: FALSE, narrow: NO_NARROW };
    }
    if (bounds.length === 0) return this.existsOn(target);
    if (target.kind === 'file')
      return { cond: this.jsonRange(shownFileSql('e'), [target.keys], bounds), narrow: NO_NARROW };
    const paths = keyPaths(target.name);
    if (paths.length === 0) return { cond: FALSE, narrow: NO_NARROW };
    // The jsonpath test is exact by itself; the field's `e` lexeme lets the GIN index narrow the rows to test.
    return { cond: this.jsonRange('e.data', paths, bounds), narrow: { ts: lex(existsLex(target.name)), ids: null } };
  }

  /** Some value at one of `paths` (key lists) of the jsonb `doc` within the bounds (numbers, or strings). */
  private jsonRange(
    doc: string,
    paths: string[][],
    bounds: ReadonlyArray<{ op: RangeOp; value: string | number }>,
  ): Cond {
    const vars: Record<string, string | number> = {};
    for (const { op, value } of bounds) vars[op] = value;
    // jsonpath in lax mode unwraps arrays, and the filter tests each value alone (ES: one value within the range).
    const test = bounds.map(({ op }) => `@ ${SQL_OP[op]} $${op}`).join(' && ');
    const tests = paths.map((keys) => `exists(@${keys.map((k) => `.${JSON.stringify(k)}`).join('')} ? (${test}))`);
    return {
      k: 'sql',
      sql: () =>
        `jsonb_path_exists(${doc}, ${this.params.bind(`$ ? (${tests.join(' || ')})`, 'jsonpath')}, ${this.params.bind(JSON.stringify(vars), 'jsonb')}, true)`,
    };
  }

  // The shown file property at `keys` (shownFileSql). Both add a parameter: call them where the SQL is written, in
  // a condition's sql(), so that a condition left out adds none.

  /** SQL: the property as jsonb, null when absent. */
  private fileValue(keys: string[]): string {
    return `NULLIF(${shownFileSql('e')} #> ${this.params.bind(keys, 'text[]')}, 'null'::jsonb)`;
  }

  /** SQL: the property as text (strings without their quotes). */
  private fileText(keys: string[]): string {
    return `(${shownFileSql('e')} #>> ${this.params.bind(keys, 'text[]')})`;
  }

  private existsOn(target: DslField): { cond: Cond; narrow: Narrow } {
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
        return {
          cond: and([
            { k: 'ts', q: narrow },
            lexemeLike(`k%${likeEscape(S + escapeLexeme(target.name))}`, this.params),
          ]),
          narrow: { ts: narrow, ids: null },
        };
      }
      case 'data': {
        const cond = lexCond(existsLex(target.name));
        return { cond, narrow: narrowOf(cond) };
      }
      case 'file':
        return { cond: { k: 'sql', sql: () => `${this.fileValue(target.keys)} IS NOT NULL` }, narrow: NO_NARROW };
    }
  }

  private tsParam(q: Ts): string {
    return renderTs(q, this.params);
  }
}

/** The values that are element ids, as ids (lower-cased); the others match no element. */
const idsOf = (values: Scalar[]): ElementId[] =>
  values.map((v) => parseElementId(String(v))).filter((id): id is ElementId => id !== null);
