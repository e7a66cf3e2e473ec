// The lexemes of the search index (their layout is described where the schema defines the index) and what a
// tsquery can hold: what the query compiler looks up, and what decides that a value can never be found.
import { SEARCH_LIMITS } from './analysis.js';

/** Ends a value inside a lexeme. */
export const S = '\x1f';

// PostgreSQL's limits on tsquery input (tsquery.c): an operand shorter than 2,047 bytes (MAXSTRLEN), and operands
// that add up, each with its terminating byte, to less than 1 MiB (MAXSTRPOS). A stored lexeme may be one byte
// longer (a tsvector takes 2,047), but no query can name it.
export const TSQUERY_MAX_OPERAND_BYTES = 2046;
export const TSQUERY_MAX_TOTAL_BYTES = (1 << 20) - 2;

export const lexemeFits = (lexeme: string) =>
  Buffer.byteLength(lexeme) <= Math.min(SEARCH_LIMITS.maxLexemeBytes, TSQUERY_MAX_OPERAND_BYTES);

/** Field names and keyword values inside lexemes (trellis_search_escape). */
export const escapeLexeme = (s: string) =>
  s.replaceAll('\x1e', '\x1e1').replaceAll('\x1f', '\x1e2').replaceAll('\x1d', '\x1e3');

export const textLex = (token: string, field: string) => `t${token}${S}${escapeLexeme(field)}`;
export const keywordLex = (value: string, field: string) => `k${escapeLexeme(value)}${S}${escapeLexeme(field)}`;
export const valueLex = (value: string, field: string) => `v${value}${S}${escapeLexeme(field)}`;
export const existsLex = (field: string) => `e${escapeLexeme(field)}`;
export const normLex = (bucket: number, field: string) => `n${bucket}${escapeLexeme(field)}`;

/** The lexeme of an analysed token at `field`, or in any field (a prefix) when `field` is null. */
export const tokenLexeme = (token: string, field: string | null) =>
  field === null ? `t${token}${S}` : textLex(token, field);

/** Whether a field name is short enough for its lexemes (normLex's, the longest made of the name alone) to be searched for. */
export const fieldNameSearchable = (name: string) =>
  Buffer.byteLength(escapeLexeme(name)) + 2 <= TSQUERY_MAX_OPERAND_BYTES;
