-- EXPERIMENT (not used by Trellis; applied to the benchmark's throw-away database only, with
--   npm run bench -- --sql bench/experiments/granted-probe.sql).
--
-- trellis_granted of src/storage/migrations/004-access.ts, same signature and same rule, with the grant test done
-- level by level while walking up: one index-only probe of elements_end_type (end_id, type) INCLUDE (start_id) per
-- ancestor, stopping at the first hit. The shipped version joins the path with every relation that starts at any
-- principal (`g.start_id = ANY(p_principals)`), which the planner runs as a bitmap scan over all OWNS/HAS_* the
-- caller and its groups hold (49 buffers per call on the 100k data set, vs 24 for the walk itself): its cost grows
-- with how much the caller's groups own, not with the depth of the path.
CREATE OR REPLACE FUNCTION trellis_granted(p_principals uuid[], p_target uuid, p_types text[]) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN EXISTS (
    WITH RECURSIVE up(id) AS (
      SELECT p_target
      UNION
      SELECT r.start_id FROM elements r JOIN up ON r.end_id = up.id WHERE r.type = 'OWNS'
    )
    SELECT 1 FROM up, LATERAL (
      SELECT 1 FROM elements g
      WHERE g.end_id = up.id AND g.type = ANY(p_types) AND g.start_id = ANY(p_principals)
      LIMIT 1
    ) hit);
END
$fn$;
