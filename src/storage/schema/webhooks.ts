// Schema change 9: webhooks (domain/webhooks, docs/webhooks.md). A webhook follows the change feed's outbox from its
// own cursor: the last event it delivered, skipped or gave up on. Instances claim due webhooks with a lease, so one of
// them delivers each event; a killed instance's lease runs out and another goes on from the cursor.
export const WEBHOOKS = /* sql */ `
CREATE TABLE webhooks (
  id              uuid PRIMARY KEY,
  -- the User whose access decides what is sent; a webhook goes with its owner
  owner_id        uuid NOT NULL REFERENCES elements (id) ON DELETE CASCADE,
  url             text NOT NULL,
  -- the changes sent (created, changed, deleted, file-created, file-replaced, file-removed)
  events          text[] NOT NULL,
  -- all, ids or parent; watched holds the ids or the parent
  scope           text NOT NULL CHECK (scope IN ('all', 'ids', 'parent')),
  watched         uuid[] NOT NULL DEFAULT '{}',
  description     text NOT NULL DEFAULT '',
  -- the signing secret, sealed with the instance's webhook key (never stored in the clear), and the one it replaced
  -- while both sign (secretOverlapInSeconds)
  secret          bytea NOT NULL,
  previous_secret bytea,
  previous_until  timestamptz,
  enabled         boolean NOT NULL DEFAULT true,
  disabled_reason text,
  disabled_at     timestamptz,
  cursor_xid      xid8 NOT NULL,
  cursor_seq      bigint NOT NULL,
  -- failed attempts of the event after the cursor, and when the next attempt is due
  attempts        integer NOT NULL DEFAULT 0,
  due             timestamptz NOT NULL DEFAULT now(),
  -- the instance working it holds a lease until then, under its token
  lease_until     timestamptz,
  lease_token     uuid,
  created         timestamptz NOT NULL DEFAULT now(),
  updated         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_owner ON webhooks (owner_id, created, id);
CREATE INDEX webhooks_due ON webhooks (due) WHERE enabled;

CREATE TABLE webhook_deliveries (
  id          uuid PRIMARY KEY,
  webhook_id  uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  -- the webhook-id header: the same on every attempt of one event to one webhook
  message_id  text NOT NULL,
  event_type  text NOT NULL,
  -- the body sent, for a redelivery
  payload     text NOT NULL,
  attempted   timestamptz NOT NULL,
  attempt     integer NOT NULL,
  status      integer,
  error       text,
  duration_ms integer NOT NULL,
  response    text,
  next_retry  timestamptz
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, attempted DESC, id DESC);
CREATE INDEX webhook_deliveries_attempted ON webhook_deliveries (attempted);
`;
