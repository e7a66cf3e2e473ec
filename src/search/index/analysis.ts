// The query side of the search index's analysis: query text is lower-cased and split with the same tables as the
// index (analysis-tables.ts, from which the schema builds the index side), so that a query term and an indexed token
// are the same string. test/search/search-engine.test.ts checks the two against each other.
import { CASE_TABLES, SEARCH_LIMITS, SEPARATOR_RANGES } from './analysis-tables.js';

export { SEARCH_LIMITS };

const FOLD = new Map<number, string>();
for (const table of CASE_TABLES) {
  const from = [...table.from];
  const to = [...table.to];
  for (const [i, c] of from.entries()) FOLD.set(c.codePointAt(0)!, to[i]!);
}
const cp = (c: number) => `\\u{${c.toString(16)}}`;
const SEPARATORS = new RegExp(
  `[${SEPARATOR_RANGES.map(([a, b]) => (a === b ? cp(a) : `${cp(a)}-${cp(b)}`)).join('')}]+`,
  'u',
);

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
  if (text.length > SEARCH_LIMITS.analysedChars)
    limited = Array.from(text).slice(0, SEARCH_LIMITS.analysedChars).join('');
  return fold(limited)
    .split(SEPARATORS)
    .filter((t) => t !== '');
}

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

/** A string that spells a JSON number. */
export const NUMERIC = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** The exact value (a `v` lexeme's value) a query value stands for: numbers, booleans and strings that spell one. */
export function exactValue(value: string | number | boolean): string | null {
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return canonicalNumber(value);
  if (value === 'true' || value === 'false') return value;
  return NUMERIC.test(value) ? canonicalNumber(Number(value)) : null;
}
