// The access epoch: a counter that changes in every transaction that could take a permission away from anyone or
// invalidate a token, so that an access decision made under one value of it still holds under any snapshot that
// reads the same value.
//
// Why. Every access rule (docs/architecture.md "Access model") is monotone: it asks whether some relation exists (an OWNS
// path, a group membership, a HAS_*_ACCESS grant, a CREATED relation, READ on a relation's ends). Adding elements or
// relations, and changing `data`, can only add permissions. Permissions are taken away only by deleting an element
// (its relations go with it), by changing a relation's type or ends, or by emptying the table (and a rebuild of the
// access index, which repairs drift, is counted as one too). Those bump the epoch,
// in their own transaction, so a statement sees the new epoch exactly when it sees the change. GET /<id> and
// PATCH /<id> keep the decisions they made, with the epoch read in the same statement (storage/access-decisions.ts);
// while the epoch is unchanged their statement is the element and the epoch alone, without the token lookup and the
// access check. A token stops working when it is revoked or changed (an UPDATE of tokens), deleted, or its user
// deleted: those bump the epoch too; its expiry needs no commit and is checked by the process. This is how
// Zanzibar-style systems cache decisions: a decision is tied to a snapshot of the data it was made from
// (docs/decisions/014-remembered-decisions.md).
//
// Deleting any element bumps, not only relations that grant access: a relation deleted and created again with the
// same id (clients may choose ids) between different ends must not inherit a decision made for the old one.
//
// Contention. The bump is a deferred constraint trigger, so the epoch row is written at commit, once per
// transaction, and its row lock is held only while the transaction commits. Deletions therefore commit one after
// the other; they are rare next to reads, and deletions of access-granting relations already take the owners lock
// of migration 005 exclusively.
export default /* sql */ `
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

-- A rebuild of the access index repairs drift, which may take permissions away.
CREATE OR REPLACE FUNCTION trellis_rebuild_access_index() RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM trellis_rebuild_access_closures();
  PERFORM trellis_rebuild_access_keys();
  PERFORM trellis_bump_access_epoch();
END
$fn$;
`;
