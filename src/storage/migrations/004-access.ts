// The access model of DESIGN.md section 3, as SQL functions so that every capability (elements, collections,
// files, uploads, search, Cypher paths) asks the same question the same way, set-based, inside its own statement.
// Walks go from the element up to its owners over the (end_id, type) index: the cost grows with the depth of the
// ownership path, not with the size of the graph.
export default /* sql */ `
CREATE INDEX elements_type_kind ON elements (type, (start_id IS NULL));

-- The user and every group it is in, transitively (IS_IN_GROUP from member to group; groups nest).
CREATE FUNCTION trellis_principals(u uuid) RETURNS uuid[] LANGUAGE sql STABLE AS $fn$
  WITH RECURSIVE p(id) AS (
    SELECT u
    UNION
    SELECT r.end_id FROM elements r JOIN p ON r.start_id = p.id WHERE r.type = 'IS_IN_GROUP'
  )
  SELECT array_agg(id) FROM p
$fn$;

-- Relation types that grant a permission on their end and on everything it owns.
CREATE FUNCTION trellis_grant_types(perm text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE perm
    WHEN 'SEARCH' THEN ARRAY['OWNS', 'HAS_SEARCH_ACCESS', 'HAS_READ_ACCESS']
    ELSE ARRAY['OWNS', 'HAS_' || perm || '_ACCESS']
  END
$fn$;

-- Does a relation of one of these types lead from a principal to the target or to an element owning it?
CREATE FUNCTION trellis_granted(principals uuid[], target uuid, types text[]) RETURNS boolean LANGUAGE sql STABLE AS $fn$
  WITH RECURSIVE up(id) AS (
    SELECT target
    UNION
    SELECT r.start_id FROM elements r JOIN up ON r.end_id = up.id WHERE r.type = 'OWNS'
  )
  SELECT EXISTS (
    SELECT 1 FROM up JOIN elements g ON g.end_id = up.id AND g.type = ANY(types) WHERE g.start_id = ANY(principals)
  )
$fn$;

-- Node-level permission: owners and grant holders; READ/SEARCH also for the creator and for the user itself.
CREATE FUNCTION trellis_node_allows(u uuid, principals uuid[], perm text, target uuid) RETURNS boolean LANGUAGE sql STABLE AS $fn$
  SELECT trellis_granted(principals, target, trellis_grant_types(perm))
    OR (perm IN ('READ', 'SEARCH') AND (
      target = u
      OR EXISTS (SELECT 1 FROM elements c WHERE c.end_id = target AND c.type = 'CREATED' AND c.start_id = u)))
$fn$;

CREATE FUNCTION trellis_is_access_type(t text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $fn$
  SELECT t IN ('OWNS', 'IS_IN_GROUP', 'CREATED', 'HAS_READ_ACCESS', 'HAS_SEARCH_ACCESS', 'HAS_CREATE_ACCESS',
               'HAS_UPDATE_ACCESS', 'HAS_DELETE_ACCESS')
$fn$;

-- Element permission. Relations: an access-granting relation is managed by the owners of its end and readable
-- (and droppable) by its start user; any relation is readable with READ on both ends; other relations are
-- changed with UPDATE and deleted with DELETE on their start.
CREATE FUNCTION trellis_allows(u uuid, principals uuid[], perm text, id uuid, start_id uuid, end_id uuid, type text)
RETURNS boolean LANGUAGE sql STABLE AS $fn$
  SELECT CASE WHEN start_id IS NULL THEN trellis_node_allows(u, principals, perm, id)
  ELSE
    trellis_granted(principals, id, trellis_grant_types(perm))
    OR (perm IN ('READ', 'SEARCH')
        AND trellis_node_allows(u, principals, 'READ', start_id) AND trellis_node_allows(u, principals, 'READ', end_id))
    OR (trellis_is_access_type(type) AND (
          trellis_granted(principals, end_id, ARRAY['OWNS'])
          OR (perm IN ('READ', 'SEARCH', 'DELETE') AND start_id = u)))
    OR (NOT trellis_is_access_type(type) AND perm IN ('UPDATE', 'DELETE', 'CREATE')
        AND trellis_node_allows(u, principals, perm, start_id))
  END
$fn$;
`;
