// Nodes and relations in one table: a relation is an element with start and end. Deleting an element deletes
// the relations attached to it (ON DELETE CASCADE), transitively.
export default /* sql */ `
CREATE EXTENSION IF NOT EXISTS pg_trgm;

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
  CONSTRAINT elements_relation_ends CHECK ((start_id IS NULL) = (end_id IS NULL))
);

-- Access walks go from an element up to its owners: incoming relations by (end, type).
CREATE INDEX elements_end_type ON elements (end_id, type) INCLUDE (start_id) WHERE end_id IS NOT NULL;
-- Group membership, children and related walk outgoing relations by (start, type).
CREATE INDEX elements_start_type ON elements (start_id, type) INCLUDE (end_id) WHERE start_id IS NOT NULL;
CREATE INDEX elements_type ON elements (type);
`;
