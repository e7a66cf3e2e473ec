// Changes to the account tables after the baseline (schema/index.ts applies them in order, once each).

/**
 * Identifiers compare in Unicode NFC, e-mail addresses (those with an '@') also without regard to case: `josé` typed
 * as one code point and as e + U+0301 is one identifier. Case is mapped before normalising, as RFC 8265 does, so that
 * a decomposed capital (E + U+0301) folds wherever its base letter does. trellis_identifier_key is that key; a unique
 * index on it replaces the baseline's index on lower(identifier). Accounts that already collide under the new rule
 * are kept, not refused (the start must not fail over them): in each group the one that already held the key, else
 * the smallest id, keeps it, and the others are marked case_duplicate (log in with their exact spelling only), as
 * backup:load marks them. `trellis user:check-identifiers` lists them.
 */
export const NORMALISED_IDENTIFIERS = /* sql */ `
CREATE FUNCTION trellis_identifier_key(p_identifier text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
  SELECT CASE WHEN strpos(p_identifier, '@') > 0 THEN normalize(lower(p_identifier), NFC)
              ELSE normalize(p_identifier, NFC) END
$fn$;

UPDATE users SET case_duplicate = true
FROM (SELECT id, row_number() OVER (PARTITION BY trellis_identifier_key(identifier) ORDER BY case_duplicate, id) AS n
      FROM users) ranked
WHERE users.id = ranked.id AND ranked.n > 1 AND NOT users.case_duplicate;

DROP INDEX users_identifier_folded;
CREATE UNIQUE INDEX users_identifier_normalised ON users (trellis_identifier_key(identifier)) WHERE NOT case_duplicate;
`;

/**
 * Registrations per client address in the current window (domain/accounts/registration-throttle.ts), shared by every
 * instance on one PostgreSQL; a background job deletes the rows of windows that are over.
 */
export const REGISTRATION_COUNTS = /* sql */ `
CREATE TABLE registration_counts (
  key           text PRIMARY KEY,
  registrations integer NOT NULL,
  window_start  timestamptz NOT NULL
);
CREATE INDEX registration_counts_window ON registration_counts (window_start);
`;
