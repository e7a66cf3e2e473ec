// The analysed text queries of the query DSL compiled to conditions and scores (match, match_phrase, query_string's
// terms): each term's lexeme, or its fuzzy expansion, a phrase's order checked on the value, the field's length norm.
import { exactValue, SEARCH_LIMITS } from '../index/analysis.js';
import { escapeLexeme, existsLex, normLex, S, tokenLexeme, valueLex } from '../index/lexemes.js';
import type { Scalar, TextMode, TextTerm } from '../language/query-dsl-types.js';
import { type CompileContext, likeEscape } from './query-dsl-terms.js';
import {
  and,
  type Clause,
  type Cond,
  constScore,
  FALSE,
  lex,
  lexCond,
  NO_NARROW,
  narrowOf,
  not,
  or,
  renderTs,
  type Score,
  TRUE,
  type Ts,
  ZERO,
} from './tsquery.js';

/** The score of a short field by its length bucket (the `n` lexemes), below 1 so that a matched term counts more. */
const NORM_WEIGHTS = [0.8, 0.6, 0.4, 0.2];

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

const tsParam = (ctx: CompileContext, q: Ts): string => renderTs(q, ctx.params);

/** Analysed text: each term's lexeme (or its fuzzy expansion); a number or boolean also matches that value. */
export function textClause(ctx: CompileContext, q: TextQuery): Clause {
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
  const perTerm = q.terms.map((t) => termMatch(ctx, t, field, q));
  const conds = perTerm.map((t) => t.cond);
  let cond: Cond;
  if (q.mode.k === 'phrase')
    cond = q.tokens.length > 1 ? and([...conds, phrase(ctx, q.tokens, field, q.mode.slop)]) : and(conds);
  else if (q.mode.k === 'and') cond = and(conds);
  else {
    const required = q.mode.required;
    cond = required <= 1 ? or(conds) : required > q.terms.length ? FALSE : { k: 'atLeast', n: required, items: conds };
  }
  const textScore: Score = {
    k: 'times',
    factor: q.boost,
    score: {
      k: 'sum',
      parts: [
        ...perTerm.map((t) => ({ when: null, score: t.score })),
        { when: null, score: field === null ? ZERO : norm(ctx, field) },
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
function phrase(ctx: CompileContext, tokens: string[], field: string | null, slop: number): Cond {
  const p = ctx.params;
  // No value has more tokens than characters analysed, so a larger slop means the same (and stays an int).
  const spread = Math.min(slop, SEARCH_LIMITS.analysedChars);
  return {
    k: 'sql',
    sql: () =>
      `trellis_search_phrase(e.data, ${p.bind(field === null ? null : escapeLexeme(field), 'text')}, ${p.bind(tokens, 'text[]')}, ${p.bind(spread, 'int')})`,
  };
}

/** One analysed term: its condition and its score (1 when present; fuzzy: 1 / (1 + distance)). */
function termMatch(
  ctx: CompileContext,
  { term, distance }: TextTerm,
  field: string | null,
  o: TextQuery,
): { cond: Cond; score: Score } {
  const exactLexeme = tokenLexeme(term, field);
  const exact = lexCond(exactLexeme, field === null);
  if (distance === 0 || exact.k === 'const') {
    if (exact.k === 'const') return { cond: exact, score: ZERO };
    return {
      cond: exact,
      score: { k: 'sql', sql: () => `(e.search @@ ${tsParam(ctx, lex(exactLexeme, field === null))})::int` },
    };
  }
  return fuzzyTerm(ctx, term, field, distance, o, exactLexeme);
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
function fuzzyTerm(
  ctx: CompileContext,
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
  const name = `fuzzy_${++ctx.fuzzyTerms}`;
  const p = ctx.params;
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
  ctx.ctes.push(`${name} AS MATERIALIZED (
      SELECT trellis_search_any(array_agg('t' || token || ${p.bind(suffix, 'text')}) FILTER (WHERE d <= ${d}), ${field === null}) AS q,
             trellis_search_any(array_agg('t' || token || ${p.bind(suffix, 'text')}) FILTER (WHERE d <= 1), ${field === null}) AS q1
      FROM (
        SELECT v.token, trellis_search_fuzzy_distance(v.token, ${p.bind(term, 'text')}, ${d}, ${transpositions}) AS d
        FROM (SELECT DISTINCT ${token} AS token FROM elements e, unnest(e.search) u
              WHERE ${narrow === null ? '' : `e.search @@ ${tsParam(ctx, narrow)} AND `}u.lexeme LIKE ${p.bind(pattern, 'text')}
                AND ${field === null ? `position(${p.bind(S, 'text')} in u.lexeme) > 0` : lengthOk('u.lexeme', Array.from(exactLexeme).length)}
                AND (${ctx.searchable})) v
        ${field === null ? `WHERE ${lengthOk('v.token', Array.from(term).length)}` : ''}
        ORDER BY 2, 1
        LIMIT ${p.bind(maxExpansions, 'int')}
      ) expansion)`);
  return {
    cond: { k: 'ts', q: { op: 'sql', sql: `(SELECT q FROM ${name})` } },
    score: {
      k: 'sql',
      sql: () =>
        `CASE WHEN e.search @@ ${tsParam(ctx, lex(exactLexeme, field === null))} THEN 1 WHEN e.search @@ (SELECT q1 FROM ${name}) THEN 0.5
                WHEN e.search @@ (SELECT q FROM ${name}) THEN ${(1 / 3).toFixed(6)} ELSE 0 END`,
    },
  };
}

/** How short the field is, 0..0.8, from the `n` lexemes (the shortest string of the field counts). */
function norm(ctx: CompileContext, field: string): Score {
  const whens = () =>
    NORM_WEIGHTS.map((w, i) => `WHEN e.search @@ ${tsParam(ctx, lex(normLex(i + 1, field)))} THEN ${w}`).join(' ');
  return { k: 'sql', sql: () => `CASE ${whens()} ELSE 0 END` };
}
