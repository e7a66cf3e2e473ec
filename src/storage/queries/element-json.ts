// An element's wire representation, rendered by the database: the one renderer of every element response, so that
// the same element has the same bytes, and ETag, everywhere (docs/decisions/010-json-rendered-by-the-database.md).
// test/elements/representation.test.ts pins the output down; elementJsonSql says what it looks like.
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

const isoTimeSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;

/**
 * A text expression: the JSON of the element row alias `e` (columns as in ELEMENT_COLUMNS). Key order: type, id,
 * start, end, data (the stored properties in jsonb's order, then created, updated, hasFile, file), file. The stored
 * properties are PostgreSQL's own jsonb text, so inside `data` the separators are ", " and ": " (the envelope is
 * compact) and numbers appear as stored (1.50 stays 1.50). Stored data never holds created, updated, hasFile or file,
 * so appending them cannot duplicate a key. Timestamps as isoTime (domain/values.ts) writes them.
 */
export function elementJsonSql(e: string): string {
  return `('{"type":' || to_json(${e}.type)::text || ',"id":"' || ${e}.id::text || '"'
    || CASE WHEN ${e}.start_id IS NULL THEN '' ELSE ',"start":"' || ${e}.start_id::text || '","end":"' || ${e}.end_id::text || '"' END
    || ',"data":' || CASE WHEN ${e}.data = '{}'::jsonb THEN '{' ELSE left(${e}.data::text, -1) || ', ' END
    || '"created": "' || ${isoTimeSql(`${e}.created`)} || '", "updated": "' || ${isoTimeSql(`${e}.updated`)} || '"'
    || CASE WHEN ${e}.file IS NULL THEN '}' ELSE ', "hasFile": true, "file": ' || ${e}.file::text || '},"file":' || ${e}.file::text END
    || '}')`;
}

/** An aggregate: the JSON array of the elements `e` in the order `orderBy` ('[]' when there are none). */
export const elementArraySql = (e: string, orderBy: string): string =>
  `COALESCE('[' || string_agg(${elementJsonSql(e)}, ',' ORDER BY ${orderBy}) || ']', '[]')`;
