// The access model (docs/architecture.md) as SQL functions, so that every capability (elements, collections, files,
// uploads, search, Cypher paths) asks the same question the same way, set-based, inside its own statement; the
// access index those functions read; the search keys; and the access epoch. PL/pgSQL rather than LANGUAGE sql where
// a function cannot be inlined: PL/pgSQL keeps its plans for the session (docs/decisions/011-access-index.md).

// The keys of node `x` from scratch: its owners and its creators, the node itself left out (the index expression
// adds it, and an ownership cycle would otherwise list it). UNION ALL where only set comparisons read the array.
const KEYS_OF = (x: string, union = 'UNION') => `ARRAY(
      SELECT o.owner_id FROM element_owners o WHERE o.element_id = ${x}
      ${union}
      SELECT c.start_id FROM elements c WHERE c.end_id = ${x} AND c.type = 'CREATED' AND c.start_id <> ${x})`;

/**
 * The access index: the two transitive closures of the graph that the rules need, kept up to date by triggers in
 * the transaction that changes the graph, so that a check is a handful of index probes instead of two recursive
 * walks (docs/decisions/011-access-index.md).
 *
 *   element_owners(element_id, owner_id)    every element with an OWNS path to element_id (itself implied, not stored)
 *   group_memberships(member_id, group_id)  every element reachable from member_id over IS_IN_GROUP (itself implied)
 *
 * Consistency under concurrency: a closure row derives from relations other transactions may be changing, so every
 * change that rebuilds part of a closure takes a transaction-level advisory lock exclusively and rebuilds from a
 * fresh snapshot after it (READ COMMITTED), serialising such changes across all instances on the database. The one
 * frequent change, a new element attached below its parent by OWNS in the transaction that creates it, takes the
 * lock shared: it cannot have descendants yet and nothing else can reach it before commit, so creations never wait
 * for each other. Bulk loads (backup:load, the benchmark's data set) set `trellis.defer_access_index = on` for their
 * transaction and call trellis_rebuild_access_index() before committing.
 */
export const ACCESS_INDEX = /* sql */ `
-- No foreign keys: the triggers remove the rows of deleted elements (deleting an element deletes its relations,
-- whose triggers rebuild what depended on them), and each foreign key would cost every node creation a check that
-- locks the referenced rows.
CREATE TABLE element_owners (
  element_id uuid NOT NULL,
  owner_id   uuid NOT NULL,
  PRIMARY KEY (element_id, owner_id)
);
CREATE INDEX element_owners_owner ON element_owners (owner_id);

CREATE TABLE group_memberships (
  member_id uuid NOT NULL,
  group_id  uuid NOT NULL,
  PRIMARY KEY (member_id, group_id)
);
CREATE INDEX group_memberships_group ON group_memberships (group_id);

-- Lock keys: one per closure (advisory locks are per database, so every instance on it shares them).
CREATE FUNCTION trellis_owners_lock_key() RETURNS bigint LANGUAGE sql IMMUTABLE AS $fn$ SELECT 7401001::bigint $fn$;
CREATE FUNCTION trellis_groups_lock_key() RETURNS bigint LANGUAGE sql IMMUTABLE AS $fn$ SELECT 7401002::bigint $fn$;

-- Recomputes element_owners for the given elements and everything they own, walking up from each one.
CREATE FUNCTION trellis_reindex_owners(p_roots uuid[]) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  sub uuid[];
BEGIN
  WITH RECURSIVE d(id) AS (
    SELECT e.id FROM elements e WHERE e.id = ANY(p_roots)
    UNION
    SELECT r.end_id FROM d, LATERAL (
      SELECT r.end_id FROM elements r WHERE r.start_id = d.id AND r.type = 'OWNS' OFFSET 0) r
  )
  SELECT array_agg(id) INTO sub FROM d;
  IF sub IS NULL THEN
    RETURN;
  END IF;
  DELETE FROM element_owners o WHERE o.element_id = ANY(sub);
  INSERT INTO element_owners (element_id, owner_id)
    WITH RECURSIVE up(element_id, owner_id) AS (
      SELECT s.id, r.start_id FROM unnest(sub) s(id), LATERAL (
        SELECT r.start_id FROM elements r WHERE r.end_id = s.id AND r.type = 'OWNS' OFFSET 0) r
      UNION
      SELECT up.element_id, r.start_id FROM up, LATERAL (
        SELECT r.start_id FROM elements r WHERE r.end_id = up.owner_id AND r.type = 'OWNS' OFFSET 0) r
    )
    SELECT element_id, owner_id FROM up WHERE owner_id <> element_id;
END
$fn$;

-- Recomputes group_memberships of the given members and of every member that reaches them.
CREATE FUNCTION trellis_reindex_groups(p_members uuid[]) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  affected uuid[];
BEGIN
  SELECT array_agg(DISTINCT x) INTO affected FROM (
    SELECT unnest(p_members) AS x
    UNION ALL
    SELECT m.member_id FROM group_memberships m WHERE m.group_id = ANY(p_members)) s;
  DELETE FROM group_memberships WHERE member_id = ANY(affected);
  INSERT INTO group_memberships (member_id, group_id)
    WITH RECURSIVE g(member_id, group_id) AS (
      SELECT e.id, r.end_id FROM elements e, LATERAL (
        SELECT r.end_id FROM elements r WHERE r.start_id = e.id AND r.type = 'IS_IN_GROUP' OFFSET 0) r
      WHERE e.id = ANY(affected)
      UNION
      SELECT g.member_id, r.end_id FROM g, LATERAL (
        SELECT r.end_id FROM elements r WHERE r.start_id = g.group_id AND r.type = 'IS_IN_GROUP' OFFSET 0) r
    )
    SELECT member_id, group_id FROM g WHERE group_id <> member_id;
END
$fn$;

-- Both closures from scratch (part of trellis_rebuild_access_index).
CREATE FUNCTION trellis_rebuild_access_closures() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(trellis_owners_lock_key());
  PERFORM pg_advisory_xact_lock(trellis_groups_lock_key());
  DELETE FROM element_owners;
  INSERT INTO element_owners (element_id, owner_id)
    WITH RECURSIVE up(element_id, owner_id) AS (
      SELECT r.end_id, r.start_id FROM elements r WHERE r.type = 'OWNS'
      UNION
      SELECT up.element_id, r.start_id FROM up, LATERAL (
        SELECT r.start_id FROM elements r WHERE r.end_id = up.owner_id AND r.type = 'OWNS' OFFSET 0) r
    )
    SELECT element_id, owner_id FROM up WHERE owner_id <> element_id;
  DELETE FROM group_memberships;
  INSERT INTO group_memberships (member_id, group_id)
    WITH RECURSIVE g(member_id, group_id) AS (
      SELECT r.start_id, r.end_id FROM elements r WHERE r.type = 'IS_IN_GROUP'
      UNION
      SELECT g.member_id, r.end_id FROM g, LATERAL (
        SELECT r.end_id FROM elements r WHERE r.start_id = g.group_id AND r.type = 'IS_IN_GROUP' OFFSET 0) r
    )
    SELECT member_id, group_id FROM g WHERE group_id <> member_id;
END
$fn$;

-- Rows where the maintained closures differ from a walk of the relations (empty when consistent; part of
-- trellis_access_index_drift). The walk is written independently of the rebuild above on purpose (plain joins, no
-- shared view), so that one mistake cannot hide in both.
CREATE FUNCTION trellis_access_closures_drift() RETURNS TABLE (closure text, a uuid, b uuid, problem text)
LANGUAGE sql STABLE AS $fn$
  WITH RECURSIVE up(element_id, owner_id) AS (
    SELECT r.end_id, r.start_id FROM elements r WHERE r.type = 'OWNS'
    UNION
    SELECT up.element_id, r.start_id FROM up JOIN elements r ON r.end_id = up.owner_id AND r.type = 'OWNS'
  ),
  owners AS (SELECT element_id, owner_id FROM up WHERE owner_id <> element_id),
  g(member_id, group_id) AS (
    SELECT r.start_id, r.end_id FROM elements r WHERE r.type = 'IS_IN_GROUP'
    UNION
    SELECT g.member_id, r.end_id FROM g JOIN elements r ON r.start_id = g.group_id AND r.type = 'IS_IN_GROUP'
  ),
  groups AS (SELECT member_id, group_id FROM g WHERE group_id <> member_id)
  (SELECT 'element_owners', element_id, owner_id, 'missing' FROM (SELECT * FROM owners EXCEPT SELECT * FROM element_owners) x)
  UNION ALL
  (SELECT 'element_owners', element_id, owner_id, 'stale' FROM (SELECT * FROM element_owners EXCEPT SELECT * FROM owners) x)
  UNION ALL
  (SELECT 'group_memberships', member_id, group_id, 'missing' FROM (SELECT * FROM groups EXCEPT SELECT * FROM group_memberships) x)
  UNION ALL
  (SELECT 'group_memberships', member_id, group_id, 'stale' FROM (SELECT * FROM group_memberships EXCEPT SELECT * FROM groups) x)
$fn$;

-- Was this row written by the current (top-level) transaction? xmin holds the low 32 bits of the transaction id.
-- A row written in a subtransaction answers false, which only sends it down the slower, exclusive path.
CREATE FUNCTION trellis_written_here(p_xmin xid) RETURNS boolean LANGUAGE sql VOLATILE AS $fn$
  SELECT p_xmin::text::bigint = (txid_current() % 4294967296)
$fn$;

CREATE FUNCTION trellis_access_index_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  fresh boolean;
BEGIN
  IF current_setting('trellis.defer_access_index', true) = 'on' THEN
    RETURN NULL;
  END IF;
  IF (TG_OP <> 'INSERT' AND OLD.type = 'OWNS') OR (TG_OP <> 'DELETE' AND NEW.type = 'OWNS') THEN
    IF TG_OP = 'INSERT' THEN
      -- A new, childless element attached by the transaction that created it: its owners are its parent and the
      -- parent's owners.
      SELECT trellis_written_here(e.xmin)
             AND NOT EXISTS (SELECT 1 FROM elements c WHERE c.start_id = NEW.end_id AND c.type = 'OWNS')
        INTO fresh FROM elements e WHERE e.id = NEW.end_id;
    END IF;
    IF fresh THEN
      PERFORM pg_advisory_xact_lock_shared(trellis_owners_lock_key());
      INSERT INTO element_owners (element_id, owner_id)
        SELECT NEW.end_id, NEW.start_id WHERE NEW.start_id <> NEW.end_id
        UNION
        SELECT NEW.end_id, o.owner_id FROM element_owners o WHERE o.element_id = NEW.start_id AND o.owner_id <> NEW.end_id
        ON CONFLICT DO NOTHING;
    ELSIF EXISTS (SELECT 1 FROM elements e WHERE e.id IN (OLD.end_id, NEW.end_id)) THEN
      PERFORM pg_advisory_xact_lock(trellis_owners_lock_key());
      PERFORM trellis_reindex_owners(ARRAY_REMOVE(ARRAY[
        CASE WHEN TG_OP <> 'INSERT' THEN OLD.end_id END, CASE WHEN TG_OP <> 'DELETE' THEN NEW.end_id END], NULL));
    ELSE
      -- The owned element itself is gone: its rows go too (what it owned has relations, and triggers, of its own).
      DELETE FROM element_owners WHERE element_id = OLD.end_id;
    END IF;
  END IF;
  IF (TG_OP <> 'INSERT' AND OLD.type = 'IS_IN_GROUP') OR (TG_OP <> 'DELETE' AND NEW.type = 'IS_IN_GROUP') THEN
    PERFORM pg_advisory_xact_lock(trellis_groups_lock_key());
    PERFORM trellis_reindex_groups(ARRAY_REMOVE(ARRAY[
      CASE WHEN TG_OP <> 'INSERT' THEN OLD.start_id END, CASE WHEN TG_OP <> 'DELETE' THEN NEW.start_id END], NULL));
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER elements_access_index_insert AFTER INSERT ON elements
  FOR EACH ROW WHEN (NEW.type IN ('OWNS', 'IS_IN_GROUP')) EXECUTE FUNCTION trellis_access_index_trigger();
CREATE TRIGGER elements_access_index_delete AFTER DELETE ON elements
  FOR EACH ROW WHEN (OLD.type IN ('OWNS', 'IS_IN_GROUP')) EXECUTE FUNCTION trellis_access_index_trigger();
CREATE TRIGGER elements_access_index_update AFTER UPDATE OF type, start_id, end_id ON elements
  FOR EACH ROW WHEN (OLD.type IN ('OWNS', 'IS_IN_GROUP') OR NEW.type IN ('OWNS', 'IS_IN_GROUP'))
  EXECUTE FUNCTION trellis_access_index_trigger();
`;

/**
 * The rules, read from the access index. Relations: an access-granting relation is managed by the owners of its end
 * and readable (and droppable) by its start user; any relation is readable with READ on both ends; other relations
 * are changed with UPDATE and deleted with DELETE on their start, and only by who may read them (else a 204 against
 * a 404 would tell whether the element at the other end still exists).
 */
export const ACCESS_RULES = /* sql */ `
-- The user and every group it is in, transitively.
CREATE FUNCTION trellis_principals(p_user uuid) RETURNS uuid[] LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN p_user || ARRAY(SELECT m.group_id FROM group_memberships m WHERE m.member_id = p_user);
END
$fn$;

-- Relation types that grant a permission on their end and on everything it owns. READ implies SEARCH.
CREATE FUNCTION trellis_grant_types(p_perm text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE p_perm
    WHEN 'SEARCH' THEN ARRAY['OWNS', 'HAS_SEARCH_ACCESS', 'HAS_READ_ACCESS']
    ELSE ARRAY['OWNS', 'HAS_' || p_perm || '_ACCESS']
  END
$fn$;

-- Does a relation of one of these types lead from a principal to the target or to an element owning it? One index
-- probe of (end_id, type) per owner, stopping at the first hit (LATERAL ... LIMIT 1): a plain join lets the planner
-- scan every relation that starts at any principal instead.
CREATE FUNCTION trellis_granted(p_principals uuid[], p_target uuid, p_types text[]) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN EXISTS (
    SELECT 1 FROM (
      SELECT p_target AS id
      UNION ALL
      SELECT o.owner_id FROM element_owners o WHERE o.element_id = p_target
    ) up, LATERAL (
      SELECT 1 FROM elements g
      WHERE g.end_id = up.id AND g.type = ANY(p_types) AND g.start_id = ANY(p_principals)
      LIMIT 1
    ) hit);
END
$fn$;

-- Node-level permission: owners and grant holders; READ/SEARCH also for the creator; READ, SEARCH and CREATE on
-- every principal of the caller (the user itself and the groups it is in: members see their groups and create in
-- them, and a user creates in its own node).
CREATE FUNCTION trellis_node_allows(p_user uuid, p_principals uuid[], p_perm text, p_target uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  IF p_target IS NULL OR p_user IS NULL THEN
    RETURN false;
  END IF;
  IF p_perm IN ('READ', 'SEARCH', 'CREATE') AND p_target = ANY (p_principals) THEN
    RETURN true;
  END IF;
  IF p_perm IN ('READ', 'SEARCH') AND EXISTS (
      SELECT 1 FROM elements c WHERE c.end_id = p_target AND c.type = 'CREATED' AND c.start_id = p_user) THEN
    RETURN true;
  END IF;
  RETURN trellis_granted(p_principals, p_target, trellis_grant_types(p_perm));
END
$fn$;

CREATE FUNCTION trellis_is_access_type(p_type text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $fn$
  SELECT p_type IN ('OWNS', 'IS_IN_GROUP', 'CREATED', 'HAS_READ_ACCESS', 'HAS_SEARCH_ACCESS', 'HAS_CREATE_ACCESS',
                    'HAS_UPDATE_ACCESS', 'HAS_DELETE_ACCESS')
$fn$;

-- Element permission (nodes and relations).
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
  ELSIF p_perm IN ('UPDATE', 'DELETE', 'CREATE') AND trellis_node_allows(p_user, p_principals, p_perm, p_start)
        AND trellis_allows(p_user, p_principals, 'READ', p_id, p_start, p_end, p_type) THEN
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

/**
 * The search keys (`elements.access_keys`, filed in the search index with schema/access-keys.ts's expression): the
 * elements through which a grant can reach a node, its owners and its creators. They narrow what the index yields;
 * a search still applies the exact rule to every row, so keys need only be a superset of who may search the node
 * (docs/decisions/012-access-keys-in-the-search-index.md). Kept by a trigger that fires after the access index
 * trigger (triggers fire in name order) and under the same advisory lock. POST writes a new node's keys in its
 * INSERT, so the trigger usually finds nothing to do.
 */
export const ACCESS_KEYS = /* sql */ `
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

-- A CREATED added grows its end's keys by its start (shared lock: READ COMMITTED re-reads the row for
-- \`access_keys ||\`). An OWNS added, or an OWNS or CREATED removed or changed, computes the keys of its end (and,
-- for OWNS, of everything below it) again: a POST computes its node's keys before it waits for the lock, and they
-- may hold an owner that a concurrent revocation has just removed.
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

-- Rows where the closures or the keys differ from what the relations say (empty when consistent). For tests and
-- for an operator who wants to check a database.
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
`;

/**
 * The access epoch: a counter that changes in every transaction that could take a permission away from anyone or
 * invalidate a token, so that a remembered access decision holds while the epoch it was made under is unchanged
 * (docs/decisions/014-remembered-decisions.md). Every rule is monotone, so only deleting an element, changing a
 * relation's type or ends, emptying a table, changing or deleting a token or deleting a user, and rebuilding the
 * access index (which repairs drift) bump it; any deleted element does, so that a relation deleted and created again
 * with the same id between other ends cannot inherit a decision. The bump is a deferred constraint trigger: the
 * epoch row is written once per transaction, at commit, and its row lock is held only while it commits. Every change
 * is notified on `trellis_access_epoch` (payload: the new epoch), which the PGlite session listens on so that it
 * knows the epoch without reading it.
 */
export const ACCESS_EPOCH = /* sql */ `
CREATE TABLE access_epoch (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  epoch     bigint NOT NULL
);
INSERT INTO access_epoch (epoch) VALUES (1);

CREATE FUNCTION trellis_bump_access_epoch() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  IF current_setting('trellis.access_epoch_bumped', true) IS DISTINCT FROM 'on' THEN
    UPDATE access_epoch SET epoch = epoch + 1;
    -- local: reset when the transaction ends (and when a subtransaction that set it rolls back)
    PERFORM set_config('trellis.access_epoch_bumped', 'on', true);
  END IF;
END
$fn$;

CREATE FUNCTION trellis_access_epoch_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM trellis_bump_access_epoch();
  RETURN NULL;
END
$fn$;

CREATE CONSTRAINT TRIGGER elements_access_epoch_delete AFTER DELETE ON elements
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION trellis_access_epoch_trigger();
CREATE CONSTRAINT TRIGGER elements_access_epoch_update AFTER UPDATE OF type, start_id, end_id ON elements
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (OLD.type IS DISTINCT FROM NEW.type OR OLD.start_id IS DISTINCT FROM NEW.start_id OR OLD.end_id IS DISTINCT FROM NEW.end_id)
  EXECUTE FUNCTION trellis_access_epoch_trigger();
CREATE CONSTRAINT TRIGGER tokens_access_epoch_update AFTER UPDATE ON tokens
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION trellis_access_epoch_trigger();
CREATE CONSTRAINT TRIGGER tokens_access_epoch_delete AFTER DELETE ON tokens
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION trellis_access_epoch_trigger();
CREATE CONSTRAINT TRIGGER users_access_epoch_delete AFTER DELETE ON users
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION trellis_access_epoch_trigger();
CREATE TRIGGER elements_access_epoch_truncate AFTER TRUNCATE ON elements
  FOR EACH STATEMENT EXECUTE FUNCTION trellis_access_epoch_trigger();
CREATE TRIGGER tokens_access_epoch_truncate AFTER TRUNCATE ON tokens
  FOR EACH STATEMENT EXECUTE FUNCTION trellis_access_epoch_trigger();
CREATE TRIGGER users_access_epoch_truncate AFTER TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION trellis_access_epoch_trigger();

-- A trigger on the table rather than a line in the bump function, so that any change of the row is notified.
CREATE FUNCTION trellis_notify_access_epoch() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('trellis_access_epoch', NEW.epoch::text);
  RETURN NULL;
END
$fn$;

CREATE TRIGGER access_epoch_notify AFTER INSERT OR UPDATE ON access_epoch
  FOR EACH ROW EXECUTE FUNCTION trellis_notify_access_epoch();

-- Both closures and the keys from scratch (bulk loads, repairs); a rebuild repairs drift, which may take
-- permissions away.
CREATE FUNCTION trellis_rebuild_access_index() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM trellis_rebuild_access_closures();
  PERFORM trellis_rebuild_access_keys();
  PERFORM trellis_bump_access_epoch();
END
$fn$;
`;
