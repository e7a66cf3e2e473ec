// The access index: the two transitive closures that the access walks of migration 004 recomputed on every check,
// kept up to date by triggers in the transaction that changes the graph. A check becomes a handful of index probes
// instead of two recursive walks (docs/decisions/011-access-index.md). The rules themselves are unchanged: the functions of migration 004 keep their
// signatures and meaning and now read the closures.
//
//   element_owners(element_id, owner_id)    every element with an OWNS path to element_id (the element itself is
//                                           implied, never stored)
//   group_memberships(member_id, group_id)  every element reachable from member_id over IS_IN_GROUP (the member
//                                           itself is implied, never stored)
//
// Consistency under concurrency. A closure row is derived from relations that other transactions may be changing,
// so two concurrent changes could each miss the other's (write skew). Every change that rebuilds part of a closure
// takes a transaction-level advisory lock exclusively and rebuilds from a fresh snapshot after it (READ COMMITTED:
// every statement of a trigger function sees what committed before it started), so such changes are serialised
// across all instances on the database. The one frequent change, a new element attached below its parent by OWNS
// in the transaction that creates it (POST /, POST /<id>), takes the lock shared: the new element cannot have
// descendants yet and nothing else can reach it before commit, and its rows only read its parent's rows, which
// change under the exclusive lock alone. Creating elements therefore never waits for other creations.
//
// Bulk loads (backup:load, the benchmark's data set) set `trellis.defer_access_index = on` for their transaction and
// call trellis_rebuild_access_index() before committing.
export default /* sql */ `
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

-- Both closures from scratch (bulk loads; repairs).
CREATE FUNCTION trellis_rebuild_access_index() RETURNS void LANGUAGE plpgsql AS $fn$
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

-- Rows where the maintained closures differ from a walk of the relations (empty when consistent). For tests and
-- for an operator who wants to check a database. The walk is written independently of the rebuild above on
-- purpose (plain joins, no shared view), so that one mistake cannot hide in both.
CREATE FUNCTION trellis_access_index_drift() RETURNS TABLE (closure text, a uuid, b uuid, problem text)
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

-- Whatever the database already holds.
SELECT trellis_rebuild_access_index();

-- The functions of migration 004, same signatures and rules, reading the closures instead of walking. Still
-- PL/pgSQL: a LANGUAGE sql function that cannot be inlined is planned again on every call (measured: the
-- collection statement's principals/inheritance step took 0.22 ms as SQL functions).
CREATE OR REPLACE FUNCTION trellis_principals(p_user uuid) RETURNS uuid[] LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  RETURN p_user || ARRAY(SELECT m.group_id FROM group_memberships m WHERE m.member_id = p_user);
END
$fn$;

CREATE OR REPLACE FUNCTION trellis_granted(p_principals uuid[], p_target uuid, p_types text[]) RETURNS boolean
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
`;
