// Users and tokens are elements (User and Token nodes); these tables hold what only the server may see and what
// authentication looks up: the unique identifier, the password hash, the token hash and its state.
export default /* sql */ `
CREATE TABLE users (
  id             uuid PRIMARY KEY REFERENCES elements (id) ON DELETE CASCADE,
  identifier     text NOT NULL UNIQUE,
  password_hash  text
);

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
`;
