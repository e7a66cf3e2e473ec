// An element's wire representation, rendered by the database: the one renderer of every element response, so that
// the same element has the same bytes, and ETag, everywhere (docs/decisions/010-json-rendered-by-the-database.md).
// test/elements/representation.test.ts pins the output down; elementJsonSql says what it looks like.
// Drops the fraction of a second; searches compare times and files as shown here (search/sql/shown.ts).
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
