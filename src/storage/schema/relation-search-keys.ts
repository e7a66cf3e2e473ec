// Schema change 7: relations are filed in the search index under the keys of their end, their start and their own
// owners, instead of one key shared by every relation (docs/decisions/034-relation-search-keys.md). A search found
// every relation of the graph as a candidate of every caller and decided each on its row, so a list that narrows
// nothing by its text cost what the graph holds; now it costs what the caller may see.
//
// A relation's keys are a superset of who may search it (schema/access.ts, trellis_allows): an access relation is
// searchable by its start and by the owners of its end, any relation by who may read both ends (so who may read its
// end: the end itself, its owners and creators, the keys of the end), and by a grant on the relation or on an owner
// of it. The index expression adds the element's own id, as for nodes.
import { searchKeysSql } from './access-keys.js';

/** The keys of relation row `r`, from its end's row (nodes' keys are kept by the access-keys functions). */
const RELATION_KEYS = (r: string) => `ARRAY(SELECT DISTINCT k FROM unnest(
      COALESCE((SELECT x.access_keys || x.id FROM elements x WHERE x.id = ${r}.end_id), '{}')
      || ${r}.start_id
      || ARRAY(SELECT o.owner_id FROM element_owners o WHERE o.element_id = ${r}.id)) k)`;

const KEYS_OF_NODE = `ARRAY(
      SELECT o.owner_id FROM element_owners o WHERE o.element_id = x.id
      UNION
      SELECT c.start_id FROM elements c WHERE c.end_id = x.id AND c.type = 'CREATED' AND c.start_id <> x.id)`;

export const RELATION_SEARCH_KEYS = /* sql */ `
-- The keys of the given relations, computed again; rows whose keys are already right (as sets) are not written.
CREATE FUNCTION trellis_refresh_relation_keys(p_ids uuid[]) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  UPDATE elements e SET access_keys = k.keys
  FROM (SELECT r.id, ${RELATION_KEYS('r')} AS keys FROM elements r WHERE r.id = ANY(p_ids) AND r.start_id IS NOT NULL) k
  WHERE e.id = k.id AND NOT (e.access_keys @> k.keys AND k.keys @> e.access_keys);
END
$fn$;

-- The keys of the given elements computed again: nodes from their owners and creators, then, set-wise, the relations
-- among them and the relations that end at them, whose keys follow their end's.
CREATE OR REPLACE FUNCTION trellis_refresh_access_keys(p_ids uuid[]) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM set_config('trellis.keys_setwise', 'on', true);
  UPDATE elements e SET access_keys = k.keys
  FROM (SELECT x.id, ${KEYS_OF_NODE} AS keys FROM (SELECT DISTINCT unnest(p_ids) AS id) x) k
  WHERE e.id = k.id AND e.start_id IS NULL AND NOT (e.access_keys @> k.keys AND k.keys @> e.access_keys);
  PERFORM set_config('trellis.keys_setwise', 'off', true);
  PERFORM trellis_refresh_relation_keys(ARRAY(
    SELECT r.id FROM elements r WHERE r.end_id = ANY(p_ids)
    UNION
    SELECT r.id FROM elements r WHERE r.id = ANY(p_ids) AND r.start_id IS NOT NULL));
END
$fn$;

-- Every element's keys from scratch (bulk loads, repairs), set-wise: the nodes', then the relations' from them.
CREATE OR REPLACE FUNCTION trellis_rebuild_access_keys() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(trellis_owners_lock_key());
  PERFORM set_config('trellis.keys_setwise', 'on', true);
  UPDATE elements e SET access_keys = k.keys
  FROM (
    SELECT id, array_agg(key) AS keys FROM (
      SELECT o.element_id AS id, o.owner_id AS key FROM element_owners o
      UNION
      SELECT c.end_id, c.start_id FROM elements c WHERE c.type = 'CREATED' AND c.start_id <> c.end_id) s
    GROUP BY id) k
  WHERE e.id = k.id AND e.start_id IS NULL AND NOT (e.access_keys @> k.keys AND k.keys @> e.access_keys);
  UPDATE elements e SET access_keys = '{}'
  WHERE e.access_keys <> '{}' AND e.start_id IS NULL
    AND NOT EXISTS (SELECT 1 FROM element_owners o WHERE o.element_id = e.id)
    AND NOT EXISTS (SELECT 1 FROM elements c WHERE c.end_id = e.id AND c.type = 'CREATED' AND c.start_id <> e.id);
  UPDATE elements e SET access_keys = k.keys
  FROM (
    SELECT r.id, ARRAY(SELECT DISTINCT u FROM unnest(x.access_keys || x.id || r.start_id || COALESCE(ro.owners, '{}')) u) AS keys
    FROM elements r
    JOIN elements x ON x.id = r.end_id
    LEFT JOIN (SELECT element_id, array_agg(owner_id) AS owners FROM element_owners GROUP BY element_id) ro ON ro.element_id = r.id
    WHERE r.start_id IS NOT NULL) k
  WHERE e.id = k.id AND NOT (e.access_keys @> k.keys AND k.keys @> e.access_keys);
  PERFORM set_config('trellis.keys_setwise', 'off', true);
END
$fn$;

-- A relation written without its keys (POST / of a relation; POST of a node writes its two relations' keys itself)
-- or moved to other ends gets them here, before the row and its index entries are written.
CREATE FUNCTION trellis_relation_keys_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF current_setting('trellis.defer_access_index', true) = 'on' THEN
    RETURN NEW;
  END IF;
  NEW.access_keys := ${RELATION_KEYS('NEW')};
  RETURN NEW;
END
$fn$;

CREATE TRIGGER elements_relation_keys_insert BEFORE INSERT ON elements
  FOR EACH ROW WHEN (NEW.start_id IS NOT NULL AND NEW.access_keys = '{}') EXECUTE FUNCTION trellis_relation_keys_trigger();
CREATE TRIGGER elements_relation_keys_update BEFORE UPDATE OF start_id, end_id ON elements
  FOR EACH ROW WHEN (NEW.start_id IS NOT NULL AND (OLD.start_id IS DISTINCT FROM NEW.start_id OR OLD.end_id IS DISTINCT FROM NEW.end_id))
  EXECUTE FUNCTION trellis_relation_keys_trigger();

-- A node's keys changed one row at a time (a CREATED added grows its end's keys: trellis_access_keys_trigger): the
-- relations ending there follow. The set-wise functions above do that themselves, for all their rows at once.
CREATE FUNCTION trellis_node_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF current_setting('trellis.keys_setwise', true) IS DISTINCT FROM 'on' THEN
    PERFORM trellis_refresh_relation_keys(ARRAY(SELECT r.id FROM elements r WHERE r.end_id = NEW.id));
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER elements_node_keys_changed AFTER UPDATE OF access_keys ON elements
  FOR EACH ROW WHEN (NEW.start_id IS NULL AND OLD.access_keys IS DISTINCT FROM NEW.access_keys)
  EXECUTE FUNCTION trellis_node_keys_changed();

-- The drift check (schema/access.ts) with the relations' keys: those of their end as stored (the end's own are
-- checked as a node's), the end, the start and the relation's owners.
CREATE OR REPLACE FUNCTION trellis_access_index_drift() RETURNS TABLE (closure text, a uuid, b uuid, problem text)
LANGUAGE sql STABLE AS $fn$
  WITH node_keys AS (
    SELECT o.element_id AS id, o.owner_id AS key FROM element_owners o JOIN elements e ON e.id = o.element_id AND e.start_id IS NULL
    UNION
    SELECT c.end_id, c.start_id FROM elements c JOIN elements e ON e.id = c.end_id AND e.start_id IS NULL
    WHERE c.type = 'CREATED' AND c.start_id <> c.end_id
  ),
  relation_keys AS (
    SELECT r.id, k AS key FROM elements r JOIN elements x ON x.id = r.end_id, unnest(x.access_keys || x.id || r.start_id) k
    WHERE r.start_id IS NOT NULL
    UNION
    SELECT o.element_id, o.owner_id FROM element_owners o JOIN elements r ON r.id = o.element_id AND r.start_id IS NOT NULL
  ),
  expected AS (SELECT * FROM node_keys UNION SELECT * FROM relation_keys),
  actual AS (SELECT DISTINCT e.id, k AS key FROM elements e, unnest(e.access_keys) k WHERE k <> e.id OR e.start_id IS NOT NULL)
  SELECT * FROM trellis_access_closures_drift()
  UNION ALL
  (SELECT 'access_keys', id, key, 'missing' FROM (SELECT * FROM expected EXCEPT SELECT * FROM actual) x)
  UNION ALL
  (SELECT 'access_keys', id, key, 'stale' FROM (SELECT * FROM actual EXCEPT SELECT * FROM expected) x)
$fn$;

-- Lists by creation time, newest or oldest first (storage/search/list-walk.ts): the id breaks ties in the same
-- direction, so the index serves both.
CREATE INDEX elements_created ON elements (created, id);

DROP INDEX elements_search;
SELECT trellis_rebuild_access_keys();
CREATE INDEX elements_search ON elements USING gin (search, ${searchKeysSql()}) WITH (gin_pending_list_limit = 256);
`;
