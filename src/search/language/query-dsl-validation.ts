// The checks the query DSL parser makes of the client's values: every failure is a 400 naming the path of the bad
// clause (`query.bool.must[1].match.title: …`).
import { badContent } from '../../errors.js';
import { isPlainObject, timestamptzBound } from '../../values.js';
import { NUMERIC } from '../index/analysis.js';
import { fieldNameSearchable } from '../index/lexemes.js';
import { MAX_BOOST } from './limits.js';
import type { DslField, DslQuery, Fuzziness, Scalar } from './query-dsl-types.js';

export type Json = Record<string, unknown>;

export const isObject = isPlainObject;

export const fail = (path: string, message: string): never => {
  throw badContent(`${path}: ${message}`);
};

export const describe = (v: unknown) =>
  v === null
    ? 'null'
    : Array.isArray(v)
      ? 'an array'
      : typeof v === 'object'
        ? 'an object'
        : `${typeof v} ${JSON.stringify(v)}`;

/** The options of a `match` (and of each field of a `multi_match`). */
export const MATCH_OPTIONS = [
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

export function onlyKeys(o: Json, path: string, allowed: readonly string[]): void {
  for (const key of Object.keys(o))
    if (!allowed.includes(key)) fail(path, `unknown parameter '${key}' (allowed: ${allowed.join(', ')})`);
}

export function checkBoost(boost: unknown, path: string): number {
  if (typeof boost !== 'number' || !Number.isFinite(boost) || boost < 0 || boost > MAX_BOOST)
    fail(path, `must be a number from 0 to ${MAX_BOOST}, not ${describe(boost)}`);
  return boost as number;
}

export const boostOf = (o: Json, path: string): number => checkBoost(o.boost ?? 1, `${path}.boost`);

/** `{field: value}` or `{field: {<valueKey>: value, ...options}}`: the field, the value and the options object. */
export function fieldClause(
  body: unknown,
  path: string,
  valueKey: string,
  options: readonly string[],
): { field: string; value: unknown; opts: Json; at: string } {
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
export function analysisOptions(opts: Json, at: string): 'none' | 'all' {
  if (opts.analyzer !== undefined && opts.analyzer !== 'standard')
    fail(`${at}.analyzer`, "only the 'standard' analyzer is supported");
  const zeroTerms = opts.zero_terms_query ?? 'none';
  if (zeroTerms !== 'none' && zeroTerms !== 'all') fail(`${at}.zero_terms_query`, "must be 'none' or 'all'");
  return zeroTerms as 'none' | 'all';
}

export function scalar(v: unknown, path: string): Scalar {
  if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) return v;
  return fail(path, `must be a string, number or boolean, not ${describe(v)}`);
}

export function stringValue(v: unknown, path: string): string {
  if (typeof v !== 'string') fail(path, `must be a string, not ${describe(v)}`);
  return v as string;
}

/** minimum_should_match: an integer, a negative integer (all but n), a percentage or a negative percentage. */
export function minimumShouldMatch(value: unknown, total: number, path: string): number {
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

export function fuzzinessOf(value: unknown, path: string): Fuzziness {
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

export function nonNegativeInt(value: unknown, path: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > 10_000)
    fail(path, `must be an integer from ${min} to 10000`);
  return value as number;
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** An ISO-8601 date (UTC when it has no offset, as ES) or epoch milliseconds, as an ISO string for timestamptz. */
export function dateValue(value: unknown, path: string): string {
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
      if (
        !Number.isNaN(date.getTime()) &&
        plain.toISOString().slice(0, 10) === `${y}-${mo}-${d}` &&
        Number(h) < 24 &&
        Number(mi) < 60 &&
        Number(s) < 60
      )
        return timestamptzBound(date.getTime());
    }
  }
  return fail(
    path,
    `must be an ISO-8601 date ("YYYY-MM-DD" or "YYYY-MM-DDTHH:MM:SSZ") or epoch milliseconds, not ${describe(value)}`,
  );
}

/** What a field name stands for. */
export function fieldOf(name: string): DslField {
  if (name === '_id') return { kind: 'id' };
  if (name === 'created' || name === 'updated') return { kind: 'date', column: name };
  if (name === '*') return { kind: 'any' };
  const base = name.endsWith('.keyword') ? name.slice(0, -'.keyword'.length) : name;
  if (base.startsWith('_')) return { kind: 'none' };
  if (base === 'hasFile' || base === 'file' || base.startsWith('file.')) return { kind: 'file', keys: base.split('.') };
  // No query can ask the index about a name too long for its lexemes: it matches nothing, like a property no element has.
  if (!fieldNameSearchable(base)) return { kind: 'none' };
  return name.endsWith('.keyword') ? { kind: 'keyword', name: base } : { kind: 'data', name };
}

/** A value of a range bound as it is compared: a string that spells a number is that number. */
export const rangeBound = (v: string): string | number => (NUMERIC.test(v) ? Number(v) : v);

/**
 * bool semantics of ES: must and filter required; should scores, required by minimum_should_match (default 1
 * without must/filter, else 0; and at least one should match when there is nothing else to match).
 */
export function boolQuery(
  must: DslQuery[],
  filter: DslQuery[],
  should: DslQuery[],
  mustNot: DslQuery[],
  msm: unknown,
  boost: number,
  msmPath: string,
): DslQuery {
  let required =
    msm === undefined || msm === null
      ? must.length + filter.length === 0 && should.length > 0
        ? 1
        : 0
      : minimumShouldMatch(msm, should.length, msmPath);
  if (must.length + filter.length === 0 && should.length > 0) required = Math.max(required, 1);
  return { k: 'bool', must, filter, should, mustNot, required, boost };
}
