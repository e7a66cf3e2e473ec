// The keys an element is filed under in the search index (beside its lexemes), shared by the index definition
// (schema/search.ts) and the queries that must repeat its expression for the planner to use the index.

/**
 * The baseline's keys (schema 1 to 6): nodes under their own, every relation under one shared key. Schema change 7
 * (relation-search-keys.ts) replaced them with searchKeysSql; the baseline keeps what it was released with.
 */
export const BASELINE_SEARCH_KEYS = `(CASE WHEN start_id IS NULL THEN access_keys || id ELSE '{00000000-0000-0000-0000-000000000000}'::uuid[] END)`;

/**
 * The keys an element is filed under in the search index, as an SQL expression over the columns of `e` (unqualified
 * when `e` is empty, as in the index definition): its access keys and itself. A query must use this same
 * expression for the planner to use the index for it.
 */
export const searchKeysSql = (e = '') => {
  const c = (column: string) => (e ? `${e}.${column}` : column);
  return `(${c('access_keys')} || ${c('id')})`;
};
