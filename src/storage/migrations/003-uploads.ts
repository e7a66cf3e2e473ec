// Resumable uploads: the bytes live in the blob store under the upload id; this row is the truth about them.
export default /* sql */ `
CREATE TABLE uploads (
  id          uuid PRIMARY KEY,
  element_id  uuid NOT NULL REFERENCES elements (id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  "offset"    bigint NOT NULL DEFAULT 0,
  length      bigint,
  chunks      integer NOT NULL DEFAULT 0,
  extension   text NOT NULL DEFAULT 'bin',
  -- serialised incremental SHA-256 state of the bytes stored so far (null: recompute from the stored bytes)
  hash_state  bytea,
  created     timestamptz NOT NULL,
  expires     timestamptz NOT NULL
);
CREATE INDEX uploads_expires ON uploads (expires);
CREATE INDEX uploads_element ON uploads (element_id);
`;
