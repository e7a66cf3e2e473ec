// The keys an element is filed under in the search index (beside its lexemes), shared by the index definition
// (schema/search.ts) and the queries that must repeat its expression for the planner to use the index.

/** The key under which every relation is filed in the search index (no node has it: ids are random v4 uuids). */
export const RELATION_SEARCH_KEY = '00000000-0000-0000-0000-000000000000';

/**
 * The keys an element is filed under in the search index, as an SQL expression over the columns of `e` (unqualified
 * when `e` is empty, as in the index definition). A query must use this same expression for the planner to use
 * the index for it.
 */
export const searchKeysSql = (e = '') => {
  const c = (column: string) => (e ? `${e}.${column}` : column);
  return `(CASE WHEN ${c('start_id')} IS NULL THEN ${c('access_keys')} || ${c('id')} ELSE '{${RELATION_SEARCH_KEY}}'::uuid[] END)`;
};
