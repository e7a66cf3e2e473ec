// How the element representation shows a time and a file, as SQL over the element row: what searches and Cypher
// compare against, so that a value a client read back in an element finds that element again. elementJsonSql
// (storage/queries/element-json.ts) renders the same values.
/**
 * SQL: a timestamp column as the representation shows it (isoTimeSql drops the fraction of a second). Searches and
 * Cypher compare this rather than the stored instant, so that a `created` a client read back finds its element,
 * and "after the last one seen" does not find it again.
 */
export const shownTimeSql = (column: string) => `date_trunc('second', ${column})`;

/**
 * SQL: the properties the representation shows inside `data` from the file column of the element row alias `e`
 * (`hasFile` and `file`, as elementJsonSql writes them), as a jsonb object, or null without a file. Searches read
 * them here, since they are not in the stored data the search index is built from.
 */
export const shownFileSql = (e: string) =>
  `(CASE WHEN ${e}.file IS NULL THEN NULL ELSE jsonb_build_object('hasFile', true, 'file', ${e}.file) END)`;
