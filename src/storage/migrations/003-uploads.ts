// Resumable uploads: the bytes live in the blob store under the upload id; this row is the truth about them (an
// interrupted append may leave more bytes in the blob than `offset` says: the next append cuts them off).
//
// The incremental SHA-256 is not stored: Node's crypto cannot export a hash state. Each instance keeps the live
// hash of the uploads it serves in memory and recomputes it from the stored bytes when it has none (see
// src/domain/upload-hashes.ts).
export default /* sql */ `
CREATE TABLE uploads (
  id               uuid PRIMARY KEY,
  -- null once the target element was deleted: the upload is cancelled, the cleanup job removes the row and bytes
  element_id       uuid REFERENCES elements (id) ON DELETE SET NULL,
  user_id          uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  "offset"         bigint NOT NULL DEFAULT 0,
  -- the declared total (Upload-Length at creation), fixed for good; null when none was declared
  length           bigint,
  -- appends that stored at least one byte (limited by file.uploadChunkDigitsLength)
  chunks           integer NOT NULL DEFAULT 0,
  extension        text NOT NULL DEFAULT 'bin',
  -- SHA-256 from Repr-Digest/Content-Digest of the creating request, checked when the upload completes
  expected_sha256  bytea,
  -- the request currently appending (creation or PATCH) holds a lease; one that is not renewed in time expires,
  -- so a dead instance never blocks the upload for good
  lease_token      uuid,
  lease_until      timestamptz,
  created          timestamptz NOT NULL,
  expires          timestamptz NOT NULL
);
CREATE INDEX uploads_expires ON uploads (expires);
CREATE INDEX uploads_element ON uploads (element_id);
CREATE INDEX uploads_cancelled ON uploads (id) WHERE element_id IS NULL;
`;
