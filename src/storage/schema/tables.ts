// The tables. Nodes and relations share `elements` (a relation is an element with start and end); users, tokens and
// uploads hold what only the server may see. The closures and keys of the access model are in schema/access.ts.
export const EXTENSIONS = /* sql */ `
CREATE EXTENSION IF NOT EXISTS pg_trgm;
`;

export const TABLES = /* sql */ `
-- Deleting an element deletes the relations attached to it (ON DELETE CASCADE), transitively.
CREATE TABLE elements (
  id        uuid PRIMARY KEY,
  type      text NOT NULL,
  start_id  uuid REFERENCES elements (id) ON DELETE CASCADE,
  end_id    uuid REFERENCES elements (id) ON DELETE CASCADE,
  -- client-visible properties (never a key starting with "_", never created/updated/file/hasFile)
  data      jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- internal "_"-prefixed properties (e.g. from a backup); never sent to clients
  internal  jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- file metadata {contentLength, extension, mimeType, hash: {sha256}} when a file is attached
  file      jsonb,
  created   timestamptz NOT NULL,
  updated   timestamptz NOT NULL,
  -- the search document (schema/search.ts), computed by the database in every write that changes data
  search    tsvector GENERATED ALWAYS AS (trellis_search_document(data)) STORED,
  -- a node's owners and creators: what a grant can reach it through, filed in the search index (schema/access.ts)
  access_keys uuid[] NOT NULL DEFAULT '{}',
  CONSTRAINT elements_relation_ends CHECK ((start_id IS NULL) = (end_id IS NULL))
);

-- Access walks go from an element up to its owners: incoming relations by (end, type).
CREATE INDEX elements_end_type ON elements (end_id, type) INCLUDE (start_id) WHERE end_id IS NOT NULL;
-- Group membership, children and related walk outgoing relations by (start, type).
CREATE INDEX elements_start_type ON elements (start_id, type) INCLUDE (end_id) WHERE start_id IS NOT NULL;
-- Lookups by type (nodes or relations of a type); a lookup by type alone is an index-only scan of it as well, so
-- there is no index on type alone (every element written would pay for both).
CREATE INDEX elements_type_kind ON elements (type, (start_id IS NULL));

-- Users and tokens are elements (User and Token nodes); these rows hold what authentication looks up.
CREATE TABLE users (
  id             uuid PRIMARY KEY REFERENCES elements (id) ON DELETE CASCADE,
  identifier     text NOT NULL UNIQUE,
  password_hash  text,
  -- another account holds the same e-mail address in another case: this one logs in with its exact spelling only
  -- (backup:load marks all spellings but the one with the smallest id)
  case_duplicate boolean NOT NULL DEFAULT false
);
-- An identifier holding an '@' is an e-mail address, and two spellings of one address are one account.
CREATE UNIQUE INDEX users_identifier_folded ON users (lower(identifier))
  WHERE strpos(identifier, '@') > 0 AND NOT case_duplicate;

CREATE TABLE tokens (
  id          uuid PRIMARY KEY REFERENCES elements (id) ON DELETE CASCADE,
  -- SHA3-256 hex of the whole "secret-token:..." string
  hash        text NOT NULL UNIQUE,
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  state       text NOT NULL CHECK (state IN ('ACTIVE', 'REVOKED')),
  issued      timestamptz NOT NULL,
  expires     timestamptz
);
CREATE INDEX tokens_user ON tokens (user_id);
CREATE INDEX tokens_expires ON tokens (expires) WHERE expires IS NOT NULL;

-- Failed log-ins, one counter per identifier (hashed) and per client address, so that every instance on one
-- PostgreSQL sees the same back-off (domain/accounts/throttle.ts); a background job deletes old counters.
CREATE TABLE credential_failures (
  key           text PRIMARY KEY,
  failures      integer NOT NULL,
  last_failure  timestamptz NOT NULL
);
CREATE INDEX credential_failures_last ON credential_failures (last_failure);

-- Resumable uploads: the bytes live in the blob store under the upload id; this row is the truth about them (an
-- interrupted append may leave more bytes in the blob than \`offset\` says: the next append cuts them off). The
-- incremental SHA-256 is not stored (Node's crypto cannot export a hash state): each instance keeps it in memory
-- and recomputes it from the stored bytes when it has none.
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
  expires          timestamptz NOT NULL,
  -- the If-Match / If-None-Match of the start, evaluated again against the file a completion would replace (under
  -- the element's row lock), so a file written by someone else in between is not lost without a sign
  if_match         text,
  if_none_match    text
);
CREATE INDEX uploads_expires ON uploads (expires);
CREATE INDEX uploads_element ON uploads (element_id);
CREATE INDEX uploads_cancelled ON uploads (id) WHERE element_id IS NULL;
`;

/**
 * The limits on what one element holds, checked by the database where only it sees the result: a PATCH merges its
 * properties into the stored ones in its UPDATE, so a series of changes, each within the limits, could otherwise
 * grow an element without bound (docs/decisions/008-element-data-limits.md).
 */
export const DATA_LIMITS = /* sql */ `
CREATE FUNCTION trellis_checked_data(p_data jsonb, p_max_bytes integer, p_max_values integer) RETURNS jsonb
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
BEGIN
  IF octet_length(p_data::text) > p_max_bytes THEN
    RAISE EXCEPTION 'element data larger than % bytes', p_max_bytes USING ERRCODE = '54000', HINT = 'trellis:maxDataSizeInBytes';
  END IF;
  -- Every key and array item at every level, and the data itself.
  IF (SELECT count(*) FROM jsonb_path_query(p_data, 'strict $.**')) - 1 > p_max_values THEN
    RAISE EXCEPTION 'element data with more than % keys and array items', p_max_values USING ERRCODE = '54000', HINT = 'trellis:maxValues';
  END IF;
  RETURN p_data;
END
$fn$;
`;
