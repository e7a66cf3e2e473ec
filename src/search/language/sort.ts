// `sort` and `search_after` of the query DSL step's parameters, in Elasticsearch's syntax, validated into SortKeys
// for search/sql/sort-compile.ts. Fields are named as in queries: `_score`, `_id`, `created`, `updated`, or a data
// property (dotted for nested ones), `name.keyword` for the whole string. The element id breaks every tie, so a
// sort is a total order and `search_after` continues exactly after the hit whose `metadata.sort` it repeats. Times
// sort as stored (to the microsecond, as metadata.sort shows them), not as the element shows them (in seconds), so
// that the newest first is the order of creation and an index of the column can serve it.
import { isUuid } from '../../values.js';
import { dateValue, describe, fail, fieldOf, isObject, type Json, onlyKeys } from './query-dsl-validation.js';

export type SortKey =
  | { k: 'score'; desc: boolean }
  | { k: 'id'; desc: boolean }
  | { k: 'time'; column: 'created' | 'updated'; desc: boolean }
  /** A data property at `path`; `keyword`: only strings (`name.keyword`). Missing and null values sort together. */
  | { k: 'field'; name: string; path: string[]; keyword: boolean; desc: boolean; missingFirst: boolean };

/** A value of `search_after`, already checked against its key: a time as a timestamptz bound. */
export type SortValue = number | string | boolean | null;

export interface Sort {
  /** The keys as asked, then the id when the last key is not the id: what `metadata.sort` holds. */
  keys: SortKey[];
  /** Where `search_after` was given: one value per key. */
  after: SortValue[] | null;
  /** Where the parameters are (`steps[0].parameters`), for the errors found once the hits are known. */
  where: string;
}

/** A time as metadata.sort writes it (microseconds, an offset). */
const EXACT_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)$/;

/** Up to how many keys a sort may have (Elasticsearch has no limit; each key is a column of the statement). */
const MAX_SORT_KEYS = 16;

/**
 * The `sort` and `search_after` parameters of a step (`where` names them in errors), or null without `sort`.
 * `search_after` without `sort` is a 400, as an unknown field form, an unknown order or a value of the wrong kind.
 */
export function parseSort(sort: unknown, searchAfter: unknown, where: string): Sort | null {
  if (sort === undefined || sort === null) {
    if (searchAfter !== undefined && searchAfter !== null)
      fail(`${where}.search_after`, 'needs a `sort` (the order it continues in)');
    return null;
  }
  const items = Array.isArray(sort) ? sort : [sort];
  if (items.length === 0) fail(`${where}.sort`, 'must name at least one field');
  if (items.length > MAX_SORT_KEYS) fail(`${where}.sort`, `may have at most ${MAX_SORT_KEYS} fields`);
  const keys = items.map((item, i) => sortKey(item, `${where}.sort[${i}]`));
  // The id breaks ties in the direction of the last key (after `_score`, ascending, as without a sort), so that a
  // list by `created` descending is the index of (created, id) read backwards.
  const last = keys.at(-1)!;
  if (last.k !== 'id') keys.push({ k: 'id', desc: last.k !== 'score' && last.desc });
  const after =
    searchAfter === undefined || searchAfter === null ? null : afterValues(searchAfter, keys, `${where}.search_after`);
  return { keys, after, where };
}

function sortKey(item: unknown, path: string): SortKey {
  if (typeof item === 'string') return keyOf(item, null, path);
  if (!isObject(item) || Object.keys(item).length !== 1)
    return fail(path, `must be a field name or {"<field>": "asc" | "desc" | {order, missing}}, not ${describe(item)}`);
  const [field, spec] = Object.entries(item)[0]!;
  return keyOf(field, spec, `${path}.${field}`);
}

function keyOf(field: string, spec: unknown, path: string): SortKey {
  const { order, missing } = orderOf(spec, path);
  const named = fieldOf(field);
  const desc = order === null ? field === '_score' : order === 'desc';
  if (field === '_score') return { k: 'score', desc };
  if (named.kind === 'id') return { k: 'id', desc };
  if (named.kind === 'date') return { k: 'time', column: named.column, desc };
  if (named.kind === 'data' || named.kind === 'keyword') {
    const parts = named.name.split('.');
    if (parts.some((p) => p === '')) fail(path, 'a field name has no empty parts');
    const keyword = named.kind === 'keyword';
    return { k: 'field', name: field, path: parts, keyword, desc, missingFirst: missing === '_first' };
  }
  return fail(path, `'${field}' cannot be sorted on (_score, _id, created, updated or a data property)`);
}

function orderOf(spec: unknown, path: string): { order: 'asc' | 'desc' | null; missing: '_first' | '_last' } {
  if (spec === null) return { order: null, missing: '_last' };
  if (spec === 'asc' || spec === 'desc') return { order: spec, missing: '_last' };
  if (!isObject(spec)) return fail(path, `must be "asc", "desc" or {order, missing}, not ${describe(spec)}`);
  onlyKeys(spec as Json, path, ['order', 'missing']);
  const { order = null, missing = '_last' } = spec as { order?: unknown; missing?: unknown };
  if (order !== null && order !== 'asc' && order !== 'desc') fail(`${path}.order`, 'must be "asc" or "desc"');
  if (missing !== '_first' && missing !== '_last') fail(`${path}.missing`, 'must be "_first" or "_last"');
  return { order: order as 'asc' | 'desc' | null, missing: missing as '_first' | '_last' };
}

function afterValues(raw: unknown, keys: SortKey[], path: string): SortValue[] {
  if (!Array.isArray(raw) || raw.length !== keys.length)
    return fail(path, `must be the ${keys.length} values of a hit's metadata.sort, in order`);
  return raw.map((value, i) => afterValue(value, keys[i]!, `${path}[${i}]`));
}

function afterValue(value: unknown, key: SortKey, path: string): SortValue {
  switch (key.k) {
    case 'score':
      if (typeof value !== 'number' || !Number.isFinite(value)) return fail(path, 'must be a score (a number)');
      return value;
    case 'id':
      if (!isUuid(value)) return fail(path, 'must be an element id');
      return value.toLowerCase();
    case 'time': {
      if (typeof value !== 'string' && typeof value !== 'number') return fail(path, `must be a ${key.column} time`);
      const bound = dateValue(value, path);
      // The hits' own values are exact to the microsecond, finer than a date's milliseconds: kept as written.
      return typeof value === 'string' && EXACT_TIME.test(value) ? value : bound;
    }
    case 'field':
      if (value !== null && !['string', 'number', 'boolean'].includes(typeof value))
        return fail(path, `must be a string, a number, a boolean or null, not ${describe(value)}`);
      if (key.keyword && value !== null && typeof value !== 'string') return fail(path, 'must be a string or null');
      return value as SortValue;
  }
}
