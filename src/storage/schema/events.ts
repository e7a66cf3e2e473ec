// Schema change 5: the change feed's outbox (domain/events, docs/events.md, docs/decisions/028-event-order.md).
// Triggers on `elements` write one row per committed change in the transaction that makes it, so a rollback writes
// nothing and a crash after the commit loses nothing. A row's place in the feed is (xid, seq):
//
//   xid  the writing transaction's id, raised to the last xid that wrote the same element (elements.event_xid), so
//        that a transaction which took its id early but got the element's row lock late still sorts after the one
//        it waited for;
//   seq  drawn from a sequence after the row lock is held, so two changes of one element compare in commit order.
//
// A reader takes only rows whose xid is below its snapshot's xmin, ids of other databases aside (schema change 10):
// every transaction here with such an id has ended, so no row can appear later below that point, and a reader never
// skips a slow writer's row.
import { elementJsonSql } from '../queries/element-json.js';

/** The channel every commit that wrote events notifies (no payload: readers read the outbox). */
export const EVENTS_CHANNEL = 'trellis_events';

// The principals through which a grant lets someone READ node `x` (schema/access.ts trellis_node_allows): the node
// itself, its creators, and the start of every OWNS or HAS_READ_ACCESS that ends at it or at one of its owners.
const NODE_READERS = (x: string) => `ARRAY(
    SELECT ${x}
    UNION SELECT c.start_id FROM elements c WHERE c.end_id = ${x} AND c.type = 'CREATED'
    UNION SELECT g.start_id FROM (SELECT ${x} AS id UNION ALL SELECT o.owner_id FROM element_owners o WHERE o.element_id = ${x}) up
      JOIN elements g ON g.end_id = up.id AND g.type IN ('OWNS', 'HAS_READ_ACCESS'))`;

const PARENTS = (x: string) => `ARRAY(SELECT p.start_id FROM elements p WHERE p.end_id = ${x} AND p.type = 'OWNS')`;

export const EVENTS = /* sql */ `
-- A new row takes its transaction's id from the default; a change raises it in the BEFORE UPDATE trigger.
ALTER TABLE elements ADD COLUMN event_xid xid8 DEFAULT pg_current_xact_id();

CREATE SEQUENCE element_events_seq;

CREATE TABLE element_events (
  xid         xid8 NOT NULL,
  seq         bigint NOT NULL,
  at          timestamptz NOT NULL DEFAULT now(),
  -- created, changed, deleted, file-created, file-replaced, file-removed
  change      text NOT NULL,
  element_id  uuid NOT NULL,
  start_id    uuid,
  end_id      uuid,
  type        text NOT NULL,
  -- the element as GET /<id> renders it after the change; null for a deletion
  body        text,
  -- deletions only (the element is gone when the event is delivered): the nodes it was a child of (for a relation,
  -- the nodes both its ends were children of, and an OWNS relation's start), and the principals that could read it
  -- (for a relation, the readers of each end, each holding the relation's own readers too)
  parents     uuid[],
  readers     uuid[],
  readers_end uuid[],
  PRIMARY KEY (xid, seq)
);
CREATE INDEX element_events_at ON element_events (at);

-- The last (xid, seq) pruned: a cursor at or below it has lost events.
CREATE TABLE element_events_horizon (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  xid       xid8 NOT NULL,
  seq       bigint NOT NULL
);
INSERT INTO element_events_horizon (xid, seq) VALUES ('0', 0);

-- Bulk loads (backup:load) defer the access index and write no events: a subscriber refetches after a load.
CREATE FUNCTION trellis_events_on() RETURNS boolean LANGUAGE sql STABLE AS $fn$
  SELECT current_setting('trellis.defer_access_index', true) IS DISTINCT FROM 'on'
$fn$;

CREATE FUNCTION trellis_event_xid_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  NEW.event_xid := GREATEST(pg_current_xact_id(), OLD.event_xid);
  RETURN NEW;
END
$fn$;

CREATE TRIGGER elements_event_xid BEFORE UPDATE OF type, start_id, end_id, data, file, created, updated
  ON elements FOR EACH ROW EXECUTE FUNCTION trellis_event_xid_trigger();

-- Creations and changes: one INSERT per statement from its transition tables (a create's node, OWNS and CREATED
-- in one go), and one NOTIFY. The sequence is drawn at the end of the statement, under the rows' locks.
CREATE FUNCTION trellis_elements_created_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NOT trellis_events_on() THEN
    RETURN NULL;
  END IF;
  INSERT INTO element_events (xid, seq, change, element_id, start_id, end_id, type, body)
    SELECT n.event_xid, nextval('element_events_seq'), 'created', n.id, n.start_id, n.end_id, n.type,
           ${elementJsonSql('n')}
    FROM new_rows n;
  IF FOUND THEN
    PERFORM pg_notify('${EVENTS_CHANNEL}', '');
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER elements_event_created AFTER INSERT ON elements REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION trellis_elements_created_trigger();

CREATE FUNCTION trellis_elements_changed_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF NOT trellis_events_on() THEN
    RETURN NULL;
  END IF;
  INSERT INTO element_events (xid, seq, change, element_id, start_id, end_id, type, body)
    SELECT c.event_xid, nextval('element_events_seq'), c.change, c.id, c.start_id, c.end_id, c.type, c.body
    FROM (
      SELECT n.event_xid, n.id, n.start_id, n.end_id, n.type, ${elementJsonSql('n')} AS body,
        CASE
          WHEN o.data IS DISTINCT FROM n.data OR o.type IS DISTINCT FROM n.type
            OR o.start_id IS DISTINCT FROM n.start_id OR o.end_id IS DISTINCT FROM n.end_id THEN 'changed'
          WHEN o.file IS DISTINCT FROM n.file THEN
            CASE WHEN o.file IS NULL THEN 'file-created' WHEN n.file IS NULL THEN 'file-removed' ELSE 'file-replaced' END
          WHEN o.created IS DISTINCT FROM n.created OR o.updated IS DISTINCT FROM n.updated THEN 'changed'
        END AS change
      FROM new_rows n JOIN old_rows o ON o.id = n.id
    ) c
    WHERE c.change IS NOT NULL;
  IF FOUND THEN
    PERFORM pg_notify('${EVENTS_CHANNEL}', '');
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER elements_event_changed AFTER UPDATE ON elements REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION trellis_elements_changed_trigger();

-- Before the row goes: its parents and readers are computed while its relations still exist (a node's cascade
-- deletes them afterwards).
CREATE FUNCTION trellis_element_deleted_trigger() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  v_parents uuid[];
  v_readers uuid[];
  v_readers_end uuid[];
  v_own uuid[];
BEGIN
  IF NOT trellis_events_on() THEN
    RETURN OLD;
  END IF;
  IF OLD.start_id IS NULL THEN
    v_parents := ${PARENTS('OLD.id')};
    v_readers := ${NODE_READERS('OLD.id')};
  ELSE
    v_parents := ARRAY(SELECT unnest(${PARENTS('OLD.start_id')}) INTERSECT SELECT unnest(${PARENTS('OLD.end_id')}));
    IF OLD.type = 'OWNS' THEN
      v_parents := v_parents || OLD.start_id;
    END IF;
    -- Who may read the relation whatever its ends (schema/access.ts trellis_allows): grants on it, and for an
    -- access-granting relation its start and the owners of its end.
    v_own := ARRAY(SELECT g.start_id FROM elements g WHERE g.end_id = OLD.id AND g.type IN ('OWNS', 'HAS_READ_ACCESS'));
    IF trellis_is_access_type(OLD.type) THEN
      v_own := v_own || OLD.start_id || ARRAY(
        SELECT g.start_id FROM (SELECT OLD.end_id AS id UNION ALL SELECT o.owner_id FROM element_owners o WHERE o.element_id = OLD.end_id) up
        JOIN elements g ON g.end_id = up.id AND g.type = 'OWNS');
    END IF;
    v_readers := ${NODE_READERS('OLD.start_id')} || v_own;
    v_readers_end := ${NODE_READERS('OLD.end_id')} || v_own;
  END IF;
  INSERT INTO element_events (xid, seq, change, element_id, start_id, end_id, type, parents, readers, readers_end)
    VALUES (GREATEST(pg_current_xact_id(), OLD.event_xid), nextval('element_events_seq'), 'deleted', OLD.id,
            OLD.start_id, OLD.end_id, OLD.type, v_parents, v_readers, v_readers_end);
  PERFORM pg_notify('${EVENTS_CHANNEL}', '');
  RETURN OLD;
END
$fn$;

CREATE TRIGGER elements_event_deleted BEFORE DELETE ON elements
  FOR EACH ROW EXECUTE FUNCTION trellis_element_deleted_trigger();
`;

/**
 * Schema change 8: the changes trigger joins its two transition tables, which have no statistics, so the planner
 * took one row each and chose a nested loop: an UPDATE of n rows compared n² pairs (moving a tree of 10,000 nodes
 * rewrote 20,000 relations' search keys and spent 38 s there). Without nested loops it hashes or merges them.
 */
export const EVENTS_JOIN = /* sql */ `
ALTER FUNCTION trellis_elements_changed_trigger() SET enable_nestloop = off;
`;

/**
 * Schema change 10: the point below which the outbox is final (its stable point), for this database only. Transaction ids are shared by
 * every database on the server, so the snapshot's xmin waits for a long writer in another database too (a
 * migration, a bulk load, another application), and the feed and the webhooks stalled behind it. Running ids that
 * pg_stat_activity places in another database cannot write here and are passed over; an id it cannot place (a
 * prepared transaction, a backend that ended since) still holds the point, and so does the snapshot's xmax, below
 * which every id has been handed out. STABLE, so that it reads the calling statement's snapshot: a VOLATILE function
 * takes a later one, and a reader would move past rows committed after its own snapshot without having seen them.
 */
export const EVENTS_STABLE = /* sql */ `
CREATE FUNCTION trellis_events_stable() RETURNS xid8 LANGUAGE sql STABLE AS $fn$
  WITH snap AS MATERIALIZED (SELECT pg_current_snapshot() AS s),
  elsewhere AS MATERIALIZED (
    SELECT a.backend_xid::text::bigint AS xid32 FROM pg_stat_activity a
    WHERE a.backend_xid IS NOT NULL
      AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
  )
  SELECT COALESCE(
    (SELECT min(x) FROM snap, pg_snapshot_xip(snap.s) x
     WHERE NOT EXISTS (SELECT 1 FROM elsewhere o WHERE o.xid32 = x::text::bigint % 4294967296)),
    (SELECT pg_snapshot_xmax(s) FROM snap))
$fn$;
`;
