// The search index learns who may find what: each node carries the elements through which a grant can reach it
// (`access_keys`: its owners from element_owners, and its creators), and the GIN index of the search document files
// every element under those keys as well, so a search asks the index for "matches this query AND is filed under one
// of the caller's keys" and reads only those rows (the reference implementation does the same with a
// `_searchableBy` field in its Elasticsearch documents).
//
// Why: without them PostgreSQL reads every row the index finds for a word and only then filters by access, which
// for a common word keeps a small fraction (docs/decisions/012-access-keys-in-the-search-index.md).
//
// The keys are an index, not the rule: a search still applies the access module's exact check (access.ts) to every
// row the index yields, so keys only need to be a superset of who may search the node. For a caller, the query
// keys are: the caller and its groups (an OWNS from one of them makes it an owner of everything below, so it is in
// their access_keys), the ends of the HAS_SEARCH_ACCESS/HAS_READ_ACCESS relations from them (the granted node is
// filed under itself and is an owner of everything below it), and RELATION_SEARCH_KEY, under which every relation
// is filed (a relation's rule looks at both of its ends; relations are decided by the exact check alone, as before).
//
// Maintenance, in the transaction that changes the graph, by a trigger that fires after the access index trigger of
// migration 005 (triggers fire in name order) and under the same advisory lock:
//   - a CREATED added: the keys of its end grow by its start, incrementally, under the shared lock (two such changes
//     at once on one node cannot overwrite each other: READ COMMITTED re-reads the row for `access_keys ||`);
//   - an OWNS added, or an OWNS or CREATED removed or changed: the keys of its end (and, for OWNS, of everything
//     below it) are computed again from element_owners and the CREATED relations. An added OWNS is either the new
//     childless node of a POST (shared lock: no other transaction can see the node) or takes the lock exclusively,
//     as the rest do, so nothing else changes those keys meanwhile. Computed again rather than grown: a POST
//     computes its node's keys before it waits for the lock, and they may hold an owner that a concurrent revocation
//     has just removed (a stale key would only cost a row read, but exact keys are what the drift check tests).
// POST / and POST /<parent> write the new node's keys in its INSERT, so the trigger finds nothing to do for them
// (an UPDATE of the fresh row would write it, and its search document's index entries, twice). Bulk loads defer
// the triggers and call trellis_rebuild_access_index(), which now also rebuilds the keys.
// Their cost on writes: docs/decisions/012-access-keys-in-the-search-index.md.

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

// The keys of node `x` from scratch: its owners and its creators, the node itself left out (the index expression
// adds it, and an ownership cycle would otherwise list it). UNION ALL where only set comparisons read the array.
const KEYS_OF = (x: string, union = 'UNION') => `ARRAY(
      SELECT o.owner_id FROM element_owners o WHERE o.element_id = ${x}
      ${union}
      SELECT c.start_id FROM elements c WHERE c.end_id = ${x} AND c.type = 'CREATED' AND c.start_id <> ${x})`;

export default /* sql */ `
ALTER TABLE elements ADD COLUMN access_keys uuid[] NOT NULL DEFAULT '{}';

-- The keys of the given nodes, computed again; rows whose keys are already right (as sets) are not written.
CREATE FUNCTION trellis_refresh_access_keys(p_ids uuid[]) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE elements e SET access_keys = k.keys
  FROM (SELECT x.id, ${KEYS_OF('x.id')} AS keys FROM (SELECT DISTINCT unnest(p_ids) AS id) x) k
  WHERE e.id = k.id AND e.start_id IS NULL AND NOT (e.access_keys @> k.keys AND k.keys @> e.access_keys);
END
$fn$;

-- Every node's keys from scratch (bulk loads, repairs), set-wise.
CREATE FUNCTION trellis_rebuild_access_keys() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(trellis_owners_lock_key());
  UPDATE elements e SET access_keys = k.keys
  FROM (
    SELECT id, array_agg(key) AS keys FROM (
      SELECT o.element_id AS id, o.owner_id AS key FROM element_owners o
      UNION
      SELECT c.end_id, c.start_id FROM elements c WHERE c.type = 'CREATED' AND c.start_id <> c.end_id) s
    GROUP BY id) k
  WHERE e.id = k.id AND e.start_id IS NULL AND NOT (e.access_keys @> k.keys AND k.keys @> e.access_keys);
  UPDATE elements e SET access_keys = '{}'
  WHERE e.access_keys <> '{}'
    AND (e.start_id IS NOT NULL OR (
      NOT EXISTS (SELECT 1 FROM element_owners o WHERE o.element_id = e.id)
      AND NOT EXISTS (SELECT 1 FROM elements c WHERE c.end_id = e.id AND c.type = 'CREATED' AND c.start_id <> e.id)));
END
$fn$;

CREATE FUNCTION trellis_access_keys_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  roots uuid[];
BEGIN
  IF current_setting('trellis.defer_access_index', true) = 'on' THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' AND NEW.type = 'CREATED' THEN
    -- Usually the creator is a key already (POST writes it with the node): one probe, no lock.
    IF NOT EXISTS (SELECT 1 FROM elements e WHERE e.id = NEW.end_id AND e.start_id IS NULL AND NEW.start_id <> e.id AND NOT NEW.start_id = ANY (e.access_keys)) THEN
      RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(trellis_owners_lock_key());
    UPDATE elements e SET access_keys = e.access_keys || NEW.start_id
    WHERE e.id = NEW.end_id AND e.start_id IS NULL AND NEW.start_id <> e.id AND NOT NEW.start_id = ANY (e.access_keys);
  ELSIF TG_OP = 'INSERT' THEN
    -- An added OWNS. The access index trigger, which fired first, holds the owners lock: exclusively, or shared for
    -- a new childless node that no other transaction can see yet. Either way nothing else changes these keys now.
    -- Its end (one statement: this runs for every POST, whose keys are usually right already), then what is below.
    IF EXISTS (SELECT 1 FROM elements e, (SELECT ${KEYS_OF('NEW.end_id', 'UNION ALL')} AS keys) k
               WHERE e.id = NEW.end_id AND e.start_id IS NULL AND NOT (e.access_keys @> k.keys AND e.access_keys <@ k.keys)) THEN
      PERFORM trellis_refresh_access_keys(ARRAY[NEW.end_id]);
    END IF;
    IF EXISTS (SELECT 1 FROM element_owners o WHERE o.owner_id = NEW.end_id) THEN
      PERFORM trellis_refresh_access_keys(ARRAY(SELECT o.element_id FROM element_owners o WHERE o.owner_id = NEW.end_id));
    END IF;
  ELSE
    SELECT array_agg(e.id) INTO roots FROM elements e
    WHERE e.id IN (OLD.end_id, CASE WHEN TG_OP = 'UPDATE' THEN NEW.end_id END) AND e.start_id IS NULL;
    IF roots IS NOT NULL THEN
      PERFORM pg_advisory_xact_lock(trellis_owners_lock_key());
      PERFORM trellis_refresh_access_keys(roots || ARRAY(
        SELECT o.element_id FROM element_owners o
        WHERE o.owner_id = ANY (roots) AND 'OWNS' IN (OLD.type, CASE WHEN TG_OP = 'UPDATE' THEN NEW.type END)));
    END IF;
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER elements_access_keys_insert AFTER INSERT ON elements
  FOR EACH ROW WHEN (NEW.type IN ('OWNS', 'CREATED')) EXECUTE FUNCTION trellis_access_keys_trigger();
CREATE TRIGGER elements_access_keys_delete AFTER DELETE ON elements
  FOR EACH ROW WHEN (OLD.type IN ('OWNS', 'CREATED')) EXECUTE FUNCTION trellis_access_keys_trigger();
CREATE TRIGGER elements_access_keys_update AFTER UPDATE OF type, start_id, end_id ON elements
  FOR EACH ROW WHEN (OLD.type IN ('OWNS', 'CREATED') OR NEW.type IN ('OWNS', 'CREATED'))
  EXECUTE FUNCTION trellis_access_keys_trigger();

-- Rebuilding and checking the access index now covers the keys (same names, so callers and operators need no change).
ALTER FUNCTION trellis_rebuild_access_index() RENAME TO trellis_rebuild_access_closures;
CREATE FUNCTION trellis_rebuild_access_index() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM trellis_rebuild_access_closures();
  PERFORM trellis_rebuild_access_keys();
END
$fn$;

ALTER FUNCTION trellis_access_index_drift() RENAME TO trellis_access_closures_drift;
CREATE FUNCTION trellis_access_index_drift() RETURNS TABLE (closure text, a uuid, b uuid, problem text)
LANGUAGE sql STABLE AS $fn$
  WITH expected AS (
    SELECT o.element_id AS id, o.owner_id AS key FROM element_owners o JOIN elements e ON e.id = o.element_id AND e.start_id IS NULL
    UNION
    SELECT c.end_id, c.start_id FROM elements c JOIN elements e ON e.id = c.end_id AND e.start_id IS NULL
    WHERE c.type = 'CREATED' AND c.start_id <> c.end_id
  ),
  actual AS (SELECT DISTINCT e.id, k AS key FROM elements e, unnest(e.access_keys) k WHERE k <> e.id OR e.start_id IS NOT NULL)
  SELECT * FROM trellis_access_closures_drift()
  UNION ALL
  (SELECT 'access_keys', id, key, 'missing' FROM (SELECT * FROM expected EXCEPT SELECT * FROM actual) x)
  UNION ALL
  (SELECT 'access_keys', id, key, 'stale' FROM (SELECT * FROM actual EXCEPT SELECT * FROM expected) x)
$fn$;

-- Whatever the database already holds, then the index (built once over the filled column). A pending list of 256 kB
-- instead of the default 4 MB: every search reads the whole list of entries not yet merged into the index, and after
-- the benchmark's POST and PATCH scenarios that list made the text match 499 searches/s (p50 15.3 ms) where 256 kB
-- gave 663 (11.6 ms); the POSTs themselves measured the same (2,757 and 2,738 requests/s).
SELECT trellis_rebuild_access_keys();

DROP INDEX elements_search;
CREATE INDEX elements_search ON elements USING gin (search, ${searchKeysSql()}) WITH (gin_pending_list_limit = 256);
`;
