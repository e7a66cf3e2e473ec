// Lists of a caller who may see much of the graph (docs/decisions/034-relation-search-keys.md): when the order is
// one an index keeps (`created`, then the id; or the id alone, which is also the order of a query whose every hit
// scores the same), the page is found by reading that index in order and deciding each row, which stops once the
// page is full, instead of finding, deciding and sorting every element filed under the caller's keys. A walk that
// reads its bound of rows without filling the page gives way to the statement of search-engine.ts.
import type { DslQuery } from '../../search/language/query-dsl-types.js';
import type { Sort } from '../../search/language/sort.js';
import type { SearchEngineOptions } from '../../search/results.js';
import type { Binder } from '../../search/sql/binder.js';

/** The order of an index a list can be read in: elements_created (created, id) or the primary key. */
export interface WalkOrder {
  column: 'created' | 'id';
  desc: boolean;
}

/**
 * Rows a walk reads per hit of the page (and of the pages it skips) before giving way: a caller who may see one
 * element in this many fills a page this way.
 */
export const WALK_ROWS_PER_HIT = 40;
const MAX_WALK_ROWS = 10_000;

/**
 * Rows the count along the walk reads per hit it counts before the search index counts instead: a caller who may
 * see one in three of the rows in the walk's order is counted along it.
 */
export const WALK_COUNT_ROWS_PER_HIT = 3;

/** The order to walk in, or null when no index keeps the list's order. */
export function walkOrder(query: DslQuery, sort: Sort | null): WalkOrder | null {
  if (sort === null) return query.k === 'all' ? { column: 'id', desc: false } : null;
  const [first, second] = sort.keys;
  if (first?.k === 'id') return { column: 'id', desc: first.desc };
  if (first?.k === 'time' && first.column === 'created' && second?.k === 'id' && second.desc === first.desc)
    return sort.keys.length === 2 ? { column: 'created', desc: first.desc } : null;
  return null;
}

/**
 * The rows of the walk: the index read in order from search_after's position (a row comparison the index
 * answers), at most `rows` of them, as a subquery that the caller filters and pages as the rows come.
 */
export function walkedRows(order: WalkOrder, sort: Sort | null, rows: number, params: Binder): string {
  const dir = order.desc ? 'DESC' : 'ASC';
  const op = order.desc ? '<' : '>';
  let from = '';
  if (sort?.after) {
    const id = params.bind(sort.after.at(-1), 'uuid');
    from =
      order.column === 'id'
        ? `WHERE e.id ${op} ${id}`
        : `WHERE (e.created, e.id) ${op} (${params.bind(sort.after[0], 'timestamptz')}, ${id})`;
  }
  const by = order.column === 'id' ? `e.id ${dir}` : `e.created ${dir}, e.id ${dir}`;
  return `SELECT e.* FROM elements e ${from} ORDER BY ${by} LIMIT ${params.bind(rows, 'int')}`;
}

/** How many rows the walk may read for the page of `options`. */
export const walkRows = (options: SearchEngineOptions) =>
  Math.min(MAX_WALK_ROWS, WALK_ROWS_PER_HIT * options.page * options.pageSize);
