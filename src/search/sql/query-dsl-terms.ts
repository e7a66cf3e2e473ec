// The term-level queries of the query DSL compiled to conditions (query-dsl-compile.ts combines them): exact values
// (term, terms, ids), patterns (prefix, wildcard) and exists, on the index's lexemes, on the id and time columns or on
// the shown file properties.
import { type ElementId, parseElementId } from '../../values.js';
import { analyze, exactValue, fold } from '../index/analysis.js';
import { escapeLexeme, existsLex, keywordLex, lexemeFits, S, textLex, valueLex } from '../index/lexemes.js';
import type { DslField, Scalar } from '../language/query-dsl-types.js';
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
  narrowOf,
  or,
  TRUE,
  ZERO,
} from './tsquery.js';

/** What the parts of one compilation share: its parameters, its WITH entries and what the caller may search. */
export interface CompileContext {
  readonly params: Binder;
  /** An SQL boolean over the row `e`: whether the caller may search it (compileQuery). */
  readonly searchable: string;
  /** WITH entries the conditions refer to (fuzzy expansions). */
  readonly ctes: string[];
  /** Fuzzy terms so far, which name their WITH entries. */
  fuzzyTerms: number;
}

export const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A wildcard pattern (`*`, `?`, `\` escapes) as a LIKE pattern, its literal prefix, and the value when it has no wildcard. */
export function wildcardToLike(pattern: string): LikePattern {
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

export interface LikePattern {
  like: string;
  literalPrefix: string;
  exact: string | null;
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

export function termOn(
  ctx: CompileContext,
  target: DslField,
  value: Scalar,
  boost: number,
  caseInsensitive: boolean,
): Clause {
  const cond = termCond(ctx, target, value, caseInsensitive);
  const id = target.kind === 'id' ? parseElementId(String(value)) : null;
  const narrow = id !== null ? { ts: null, ids: [id] } : narrowOf(cond);
  return {
    cond,
    score: constScore(boost),
    narrow: caseInsensitive && target.kind === 'keyword' ? { ts: lex(existsLex(target.name)), ids: null } : narrow,
  };
}

/** An exact value on a field; on a date field `value` is the instant. */
function termCond(ctx: CompileContext, target: DslField, value: Scalar, caseInsensitive: boolean): Cond {
  switch (target.kind) {
    case 'none':
      return FALSE;
    case 'id': {
      const id = parseElementId(String(value));
      return id === null ? FALSE : { k: 'sql', sql: () => `e.id = ${ctx.params.bind(id, 'uuid')}` };
    }
    case 'date':
      return {
        k: 'sql',
        sql: () => `${shownTimeSql(`e.${target.column}`)} = ${ctx.params.bind(value, 'timestamptz')}`,
      };
    case 'file': {
      // The exact value; a string that spells a number or a boolean also equals that value (as on data fields).
      const exact = typeof value === 'string' ? exactValue(value) : null;
      const candidates = [JSON.stringify(value), ...(exact === null ? [] : [exact])];
      if (caseInsensitive && typeof value === 'string')
        return {
          k: 'sql',
          sql: () => `lower(${fileText(ctx, target.keys)}) = lower(${ctx.params.bind(value, 'text')})`,
        };
      return {
        k: 'sql',
        sql: () => `${fileValue(ctx, target.keys)} = ANY(${ctx.params.bind(candidates, 'jsonb[]')})`,
      };
    }
    case 'keyword':
      if (caseInsensitive)
        return lexemeLike(
          `k${likeEscape(escapeLexeme(String(value)))}${likeEscape(S + escapeLexeme(target.name))}`,
          ctx.params,
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

export function terms(ctx: CompileContext, target: DslField, values: Scalar[], boost: number): Clause {
  const cond = termsCond(ctx, target, values);
  if (cond.k === 'const' && !cond.value) return { cond, score: ZERO, narrow: NO_NARROW };
  const ids = target.kind === 'id' && cond.k === 'sql' ? idsOf(values) : null;
  return { cond, score: constScore(boost), narrow: ids === null ? narrowOf(cond) : { ts: null, ids } };
}

/**
 * Any of `values` on one field, as one condition whatever their number: an array parameter where the field is a
 * column or a file property, one tsquery where it is indexed as lexemes (rendered as a balanced tree).
 */
function termsCond(ctx: CompileContext, target: DslField, values: Scalar[]): Cond {
  switch (target.kind) {
    case 'id': {
      const ids = [...new Set(idsOf(values))];
      return ids.length === 0 ? FALSE : { k: 'sql', sql: () => `e.id = ANY(${ctx.params.bind(ids, 'uuid[]')})` };
    }
    case 'date':
      return values.length === 0
        ? FALSE
        : {
            k: 'sql',
            sql: () => `${shownTimeSql(`e.${target.column}`)} = ANY(${ctx.params.bind(values, 'timestamptz[]')})`,
          };
    case 'file': {
      const candidates = values.flatMap((v) => {
        const exact = typeof v === 'string' ? exactValue(v) : null;
        return [JSON.stringify(v), ...(exact === null ? [] : [exact])];
      });
      return candidates.length === 0
        ? FALSE
        : { k: 'sql', sql: () => `${fileValue(ctx, target.keys)} = ANY(${ctx.params.bind(candidates, 'jsonb[]')})` };
    }
    default:
      return or(values.map((v) => termCond(ctx, target, v, false)));
  }
}

/** A term-level pattern (LIKE syntax, over the raw value) on the keyword or on the tokens of a field. */
export function patternOn(
  ctx: CompileContext,
  target: DslField,
  p: LikePattern,
  boost: number,
  caseInsensitive: boolean,
): Clause {
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
            sql: () => `lower(${fileText(ctx, target.keys)}) LIKE lower(${ctx.params.bind(p.like, 'text')})`,
          }
        : { k: 'sql', sql: () => `${fileText(ctx, target.keys)} LIKE ${ctx.params.bind(p.like, 'text')}` };
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
  const cond = lexemeLike(`${kindLetter}${lexemeValue(p.like)}${suffix}`, ctx.params, caseInsensitive);
  const narrowLexeme = `${kindLetter}${lexemeValue(p.literalPrefix)}`;
  const narrow: Narrow =
    p.literalPrefix !== '' && !caseInsensitive && lexemeFits(narrowLexeme)
      ? { ts: lex(narrowLexeme, true), ids: null }
      : target.kind === 'any'
        ? NO_NARROW
        : { ts: lex(existsLex(target.name)), ids: null };
  return { cond, score, narrow };
}

// The shown file property at `keys` (shownFileSql). Both add a parameter: call them where the SQL is written, in
// a condition's sql(), so that a condition left out adds none.

/** SQL: the property as jsonb, null when absent. */
function fileValue(ctx: CompileContext, keys: string[]): string {
  return `NULLIF(${shownFileSql('e')} #> ${ctx.params.bind(keys, 'text[]')}, 'null'::jsonb)`;
}

/** SQL: the property as text (strings without their quotes). */
function fileText(ctx: CompileContext, keys: string[]): string {
  return `(${shownFileSql('e')} #>> ${ctx.params.bind(keys, 'text[]')})`;
}

export function existsOn(ctx: CompileContext, target: DslField): { cond: Cond; narrow: Narrow } {
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
        cond: and([{ k: 'ts', q: narrow }, lexemeLike(`k%${likeEscape(S + escapeLexeme(target.name))}`, ctx.params)]),
        narrow: { ts: narrow, ids: null },
      };
    }
    case 'data': {
      const cond = lexCond(existsLex(target.name));
      return { cond, narrow: narrowOf(cond) };
    }
    case 'file':
      return { cond: { k: 'sql', sql: () => `${fileValue(ctx, target.keys)} IS NOT NULL` }, narrow: NO_NARROW };
  }
}

/** The values that are element ids, as ids (lower-cased); the others match no element. */
const idsOf = (values: Scalar[]): ElementId[] =>
  values.map((v) => parseElementId(String(v))).filter((id): id is ElementId => id !== null);
