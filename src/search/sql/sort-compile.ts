// A validated sort (language/sort.ts) compiled for the search statement of storage/search/search-engine.ts: the
// columns its hits carry, the ORDER BY of the page, the condition of `search_after` and the JSON of `metadata.sort`.
// A data property sorts by three columns: whether it is missing (null counts as missing), its value when it is not a
// string (jsonb orders numbers numerically and false before true), and its string in byte order ("C", the same on
// every database and locale). A statement that sorts on a data property also returns the JSON kinds the hits hold
// there, so that a field of mixed kinds is refused rather than ordered arbitrarily.
import { badContent } from '../../errors.js';
import type { Sort, SortKey, SortValue } from '../language/sort.js';
import type { Binder } from './binder.js';

export interface CompiledSort {
  /** Columns of the hits, computed from the row `e`: `<expr> AS <alias>`. */
  columns: string[];
  /** The ORDER BY list of the page, over the hits' columns. */
  orderBy: string;
  /** The condition "after search_after's hit", over the hits' columns; null without search_after. */
  after: string | null;
  /** A jsonb array of a hit's sort values (null without a sort: the hits carry none). */
  values: string | null;
  /** Per data property sorted on: the aggregate of the kinds its values have over all hits (text[]), and its alias. */
  kinds: { key: number; alias: string; sql: string }[];
}

interface Atom {
  sql: string;
  desc: boolean;
  /** The bound value of search_after for this column, when given. */
  after: string | null;
}

/** The default order (score, then id) or the sort's, with `params` taking every value. */
export function compileSort(sort: Sort | null, params: Binder): CompiledSort {
  if (sort === null) return { columns: [], orderBy: 'score DESC, id', after: null, values: null, kinds: [] };
  const columns: string[] = [];
  const atoms: Atom[] = [];
  const values: string[] = [];
  const kinds: CompiledSort['kinds'] = [];
  sort.keys.forEach((key, i) => {
    const after = sort.after?.[i];
    const bound = (value: SortValue | undefined, cast: string) =>
      sort.after === null ? null : params.bind(value ?? null, cast);
    const alias = `s${i}`;
    switch (key.k) {
      case 'score':
        atoms.push({ sql: 'score', desc: key.desc, after: bound(after, 'float8') });
        values.push('to_jsonb(score)');
        break;
      case 'id':
        atoms.push({ sql: 'id', desc: key.desc, after: bound(after, 'uuid') });
        values.push('to_jsonb(id::text)');
        break;
      case 'time':
        columns.push(`e.${key.column} AS ${alias}`);
        atoms.push({ sql: alias, desc: key.desc, after: bound(after, 'timestamptz') });
        values.push(`to_jsonb(to_char(${alias} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'))`);
        break;
      case 'field':
        columns.push(`NULLIF(e.data #> ${params.bind(key.path, 'text[]')}, 'null'::jsonb) AS ${alias}`);
        atoms.push(...fieldAtoms(alias, key.desc, key.missingFirst, after, sort.after !== null, params));
        values.push(alias);
        kinds.push({
          key: i,
          alias: `k${i}`,
          sql: `(SELECT array_agg(DISTINCT jsonb_typeof(${alias})) FROM kept WHERE ${alias} IS NOT NULL)`,
        });
        break;
    }
  });
  return {
    columns,
    orderBy: atoms.map((a) => `${a.sql} ${a.desc ? 'DESC' : 'ASC'}`).join(', '),
    after: sort.after === null ? null : afterCondition(atoms),
    values: `jsonb_build_array(${values.join(', ')})`,
    kinds,
  };
}

function fieldAtoms(
  alias: string,
  desc: boolean,
  missingFirst: boolean,
  after: SortValue | undefined,
  withAfter: boolean,
  params: Binder,
): Atom[] {
  const value = after ?? null;
  const bind = (v: unknown, cast: string) => (withAfter ? params.bind(v, cast) : null);
  return [
    { sql: `(${alias} IS NULL)`, desc: missingFirst, after: bind(value === null, 'boolean') },
    {
      sql: `(CASE WHEN jsonb_typeof(${alias}) <> 'string' THEN ${alias} END)`,
      desc,
      after: withAfter ? params.json(typeof value === 'string' ? null : value) : null,
    },
    {
      sql: `((CASE WHEN jsonb_typeof(${alias}) = 'string' THEN ${alias} #>> '{}' END) COLLATE "C")`,
      desc,
      after: bind(typeof value === 'string' ? value : null, 'text'),
    },
  ];
}

/** Rows strictly after the values, in the sort's order: lexicographic over the columns, equal meaning both null. */
function afterCondition(atoms: Atom[]): string {
  let cond = 'false';
  for (const atom of [...atoms].reverse()) {
    const op = atom.desc ? '<' : '>';
    cond = `(${atom.sql} ${op} ${atom.after} OR (${atom.sql} IS NOT DISTINCT FROM ${atom.after} AND ${cond}))`;
  }
  return cond;
}

/**
 * Refuses (400) a sort on a data property whose values over the hits are of several kinds, or objects or arrays, or
 * not strings for `.keyword`, or of another kind than search_after's value: `kinds` are the aggregates' results.
 */
export function checkSortKinds(sort: Sort, kinds: Map<number, string[] | null>): void {
  for (const [i, found] of kinds) {
    const key = sort.keys[i] as Extract<SortKey, { k: 'field' }>;
    const list = found ?? [];
    const place = `${sort.where}.sort[${i}] (${key.name})`;
    if (list.some((k) => k === 'object' || k === 'array'))
      throw badContent(`${place}: the hits hold objects or arrays there, which have no order`);
    if (list.length > 1)
      throw badContent(`${place}: the hits hold values of several kinds there (${list.sort().join(', ')})`);
    if (key.keyword && list.length === 1 && list[0] !== 'string')
      throw badContent(`${place}: .keyword sorts strings, and the hits hold ${list[0]}s there`);
    const after = sort.after?.[i];
    if (after !== undefined && after !== null && list.length === 1 && typeof after !== list[0])
      throw badContent(`${sort.where}.search_after[${i}]: a ${typeof after}, and the hits hold ${list[0]}s there`);
  }
}
