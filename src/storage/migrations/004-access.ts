// The access model (docs/architecture.md), as SQL functions so that every capability (elements, collections,
// files, uploads, search, Cypher paths) asks the same question the same way, set-based, inside its own statement.
// Walks go from the element up to its owners over the (end_id, type) index: the cost grows with the depth of the
// ownership path, not with the size of the graph.
//
// PL/pgSQL rather than LANGUAGE sql: SQL functions holding a recursive CTE cannot be inlined and (before
// PostgreSQL 18) are planned again on every call, while PL/pgSQL keeps its plans for the session
// (docs/decisions/011-access-index.md).
export default /* sql */ `
CREATE INDEX elements_type_kind ON elements (type, (start_id IS NULL));

-- The user and every group it is in, transitively (IS_IN_GROUP from member to group; groups nest). Every walk
-- step is a LATERAL index probe (OFFSET 0 keeps it from being flattened): with a plain join the planner may
-- hash-join all IS_IN_GROUP relations instead.
CREATE FUNCTION trellis_principals(p_user uuid) RETURNS uuid[] LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN (
    WITH RECURSIVE p(id) AS (
      SELECT p_user
      UNION
      SELECT r.end_id FROM p,
        LATERAL (SELECT r.end_id FROM elements r WHERE r.start_id = p.id AND r.type = 'IS_IN_GROUP' OFFSET 0) r
    )
    SELECT array_agg(p.id) FROM p);
END
$fn$;

-- Relation types that grant a permission on their end and on everything it owns. READ implies SEARCH.
CREATE FUNCTION trellis_grant_types(p_perm text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE p_perm
    WHEN 'SEARCH' THEN ARRAY['OWNS', 'HAS_SEARCH_ACCESS', 'HAS_READ_ACCESS']
    ELSE ARRAY['OWNS', 'HAS_' || p_perm || '_ACCESS']
  END
$fn$;

-- Does a relation of one of these types lead from a principal to the target or to an element owning it?
-- The grant test is one index probe of (end_id, type) per ancestor, stopping at the first hit (LATERAL ... LIMIT 1):
-- a plain join lets the planner scan every relation that starts at any principal instead, whose cost grows with
-- how much the caller's groups own rather than with the depth of the path.
CREATE FUNCTION trellis_granted(p_principals uuid[], p_target uuid, p_types text[]) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN EXISTS (
    WITH RECURSIVE up(id) AS (
      SELECT p_target
      UNION
      SELECT r.start_id FROM up,
        LATERAL (SELECT r.start_id FROM elements r WHERE r.end_id = up.id AND r.type = 'OWNS' OFFSET 0) r
    )
    SELECT 1 FROM up, LATERAL (
      SELECT 1 FROM elements g
      WHERE g.end_id = up.id AND g.type = ANY(p_types) AND g.start_id = ANY(p_principals)
      LIMIT 1
    ) hit);
END
$fn$;

-- Node-level permission: owners and grant holders; READ/SEARCH also for the creator and for the user itself.
CREATE FUNCTION trellis_node_allows(p_user uuid, p_principals uuid[], p_perm text, p_target uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  IF p_target IS NULL OR p_user IS NULL THEN
    RETURN false;
  END IF;
  IF p_perm IN ('READ', 'SEARCH') AND (p_target = p_user OR EXISTS (
      SELECT 1 FROM elements c WHERE c.end_id = p_target AND c.type = 'CREATED' AND c.start_id = p_user)) THEN
    RETURN true;
  END IF;
  RETURN trellis_granted(p_principals, p_target, trellis_grant_types(p_perm));
END
$fn$;

CREATE FUNCTION trellis_is_access_type(p_type text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $fn$
  SELECT p_type IN ('OWNS', 'IS_IN_GROUP', 'CREATED', 'HAS_READ_ACCESS', 'HAS_SEARCH_ACCESS', 'HAS_CREATE_ACCESS',
                    'HAS_UPDATE_ACCESS', 'HAS_DELETE_ACCESS')
$fn$;

-- Element permission. Relations: an access-granting relation is managed by the owners of its end and readable
-- (and droppable) by its start user; any relation is readable with READ on both ends; other relations are
-- changed with UPDATE and deleted with DELETE on their start.
CREATE FUNCTION trellis_allows(p_user uuid, p_principals uuid[], p_perm text, p_id uuid, p_start uuid, p_end uuid, p_type text)
RETURNS boolean LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  IF p_id IS NULL OR p_user IS NULL THEN
    RETURN false;
  END IF;
  IF p_start IS NULL THEN
    RETURN trellis_node_allows(p_user, p_principals, p_perm, p_id);
  END IF;
  IF trellis_is_access_type(p_type) THEN
    IF p_perm IN ('READ', 'SEARCH', 'DELETE') AND p_start = p_user THEN
      RETURN true;
    END IF;
    IF trellis_granted(p_principals, p_end, ARRAY['OWNS']) THEN
      RETURN true;
    END IF;
  ELSIF p_perm IN ('UPDATE', 'DELETE', 'CREATE') AND trellis_node_allows(p_user, p_principals, p_perm, p_start) THEN
    RETURN true;
  END IF;
  IF p_perm IN ('READ', 'SEARCH')
     AND trellis_node_allows(p_user, p_principals, 'READ', p_start)
     AND trellis_node_allows(p_user, p_principals, 'READ', p_end) THEN
    RETURN true;
  END IF;
  RETURN trellis_granted(p_principals, p_id, trellis_grant_types(p_perm));
END
$fn$;
`;
