// Every change of the access epoch (migration 016) is notified on the channel `trellis_access_epoch`, with the new
// epoch as its payload, when its transaction commits (a notification of a transaction that rolls back is never
// sent).
//
// Why. On PGlite this process is the database's only user, through one session, which listens on the channel: the
// notification reaches it in the reply to the COMMIT, so the process knows the epoch without reading it, and a
// remembered GET /<id> is the element's primary-key lookup alone (storage/access-decisions.ts, SessionAccessEpoch).
// Reading the one-row epoch table was about a quarter of that statement's time on PGlite (a sequential scan, which
// asks Emscripten's file system for the file's size). A trigger on the table, not a line in the bump function, so
// that any change of the row is notified, however it is made. On PostgreSQL nobody listens; the notification costs
// the rare transactions that move the epoch an entry in the server's notification queue.
export default /* sql */ `
CREATE FUNCTION trellis_notify_access_epoch() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM pg_notify('trellis_access_epoch', NEW.epoch::text);
  RETURN NULL;
END
$fn$;

CREATE TRIGGER access_epoch_notify AFTER INSERT OR UPDATE ON access_epoch
  FOR EACH ROW EXECUTE FUNCTION trellis_notify_access_epoch();
`;
