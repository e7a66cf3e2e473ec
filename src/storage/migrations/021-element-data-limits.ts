// The limits on what one element holds, checked by the database where only it sees the result: a PATCH merges its
// properties into the stored ones in its UPDATE statement, so a series of changes, each within the limits, could
// otherwise grow an element without bound. The other limits (nesting, array length) hold for each value written
// and are checked before the database is asked (src/domain/data-limits.ts).
export default `
CREATE FUNCTION trellis_checked_data(p_data jsonb, p_max_bytes integer, p_max_values integer) RETURNS jsonb
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
BEGIN
  IF octet_length(p_data::text) > p_max_bytes THEN
    RAISE EXCEPTION 'element data larger than % bytes', p_max_bytes USING ERRCODE = '54000', HINT = 'trellis:maxDataSizeInBytes';
  END IF;
  -- Every key and array item at every level, and the data itself.
  IF (SELECT count(*) FROM jsonb_path_query(p_data, 'strict $.**')) - 1 > p_max_values THEN
    RAISE EXCEPTION 'element data with more than % keys and array items', p_max_values USING ERRCODE = '54000', HINT = 'trellis:maxValues';
  END IF;
  RETURN p_data;
END
$fn$;
`;
