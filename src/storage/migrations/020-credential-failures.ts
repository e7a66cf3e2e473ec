// Credential guessing: failed log-ins counted in the database, and e-mail identifiers unique without regard to case.
//
// credential_failures holds one counter per identifier (hashed) and per client address, so that every instance on
// one PostgreSQL sees the same back-off (domain/accounts/throttle.ts decides from the count and the last failure;
// a counter without a failure for a while is forgotten, and a background job deletes it).
//
// An identifier that holds an '@' is an e-mail address, and two spellings of one address are one account: the unique
// index is over the lower-cased identifier. A database may already hold two spellings of one address (registered
// before this); both accounts are kept, each logging in with its exact spelling, and the one with the smallest id
// also with any other spelling. The others are marked case_duplicate and left out of the index.
export default /* sql */ `
ALTER TABLE users ADD COLUMN case_duplicate boolean NOT NULL DEFAULT false;

UPDATE users u SET case_duplicate = true
FROM (SELECT id, row_number() OVER (PARTITION BY lower(identifier) ORDER BY id) AS n
      FROM users WHERE strpos(identifier, '@') > 0) d
WHERE d.id = u.id AND d.n > 1;

CREATE UNIQUE INDEX users_identifier_folded ON users (lower(identifier))
  WHERE strpos(identifier, '@') > 0 AND NOT case_duplicate;

CREATE TABLE credential_failures (
  key           text PRIMARY KEY,
  failures      integer NOT NULL,
  last_failure  timestamptz NOT NULL
);
CREATE INDEX credential_failures_last ON credential_failures (last_failure);
`;
