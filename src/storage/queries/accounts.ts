// SQL of users and tokens.
import type { Caller, Credentials } from '../../domain/accounts/types.js';
import { storedElementId } from '../../values.js';
import type { Queryable } from '../db.js';

/**
 * The user an identifier names: the exact spelling, else the user whose identifier is the same under the comparison
 * rule (Unicode NFC, e-mail addresses also without case: trellis_identifier_key in schema/accounts.ts). An account
 * marked case_duplicate (another account holds its key: a backup or an older version may have brought both) logs in
 * with its exact spelling only.
 */
export async function userByIdentifier(q: Queryable, identifier: string) {
  const { rows } = await q.query<{ id: string; password_hash: string | null }>(
    `SELECT id, password_hash FROM users
     WHERE identifier = $1 OR (trellis_identifier_key(identifier) = trellis_identifier_key($1) AND NOT case_duplicate)
     ORDER BY identifier = $1 DESC LIMIT 1`,
    [identifier],
    'user_by_identifier',
  );
  return rows[0] ?? null;
}

export interface IdentifierCollision {
  key: string;
  id: string;
  identifier: string;
  /** Logs in with its exact spelling only; false for the account that holds the key. */
  case_duplicate: boolean;
}

/** Every account whose identifier is the same as another's under the comparison rule, by key, the holder first. */
export async function identifierCollisions(q: Queryable): Promise<IdentifierCollision[]> {
  const { rows } = await q.query<IdentifierCollision>(
    `SELECT key, id, identifier, case_duplicate
     FROM (SELECT trellis_identifier_key(identifier) AS key, id, identifier, case_duplicate,
                  count(*) OVER (PARTITION BY trellis_identifier_key(identifier)) AS n
           FROM users) u
     WHERE n > 1 ORDER BY key, case_duplicate, id`,
  );
  return rows;
}

/**
 * Counts one registration attempt of `key` (a client address) and returns the count of its window, which starts
 * again at `now` when the one recorded began at or before `windowStartedBefore`. One statement, so that concurrent
 * attempts on several instances are counted exactly.
 */
export async function countRegistration(
  q: Queryable,
  key: string,
  now: Date,
  windowStartedBefore: Date,
): Promise<{ registrations: number; window_start: Date }> {
  const { rows } = await q.query<{ registrations: number; window_start: Date }>(
    `INSERT INTO registration_counts AS c (key, registrations, window_start) VALUES ($1, 1, $2)
     ON CONFLICT (key) DO UPDATE SET
       registrations = CASE WHEN c.window_start <= $3 THEN 1 ELSE least(c.registrations, 2147483646) + 1 END,
       window_start = CASE WHEN c.window_start <= $3 THEN $2 ELSE c.window_start END
     RETURNING registrations, window_start`,
    [key, now, windowStartedBefore],
    'registration_count',
  );
  return rows[0]!;
}

/** Deletes the counts of windows that began at or before `before`; returns how many. */
export async function deleteOldRegistrationCounts(q: Queryable, before: Date): Promise<number> {
  const { rowCount } = await q.query('DELETE FROM registration_counts WHERE window_start <= $1', [before]);
  return rowCount;
}

export async function userExists(q: Queryable, id: string): Promise<boolean> {
  const { rows } = await q.query('SELECT 1 FROM users WHERE id = $1', [id], 'user_exists');
  return rows.length > 0;
}

export async function insertUser(
  q: Queryable,
  id: string,
  identifier: string,
  passwordHash: string | null,
): Promise<void> {
  await q.query('INSERT INTO users (id, identifier, password_hash) VALUES ($1, $2, $3)', [
    id,
    identifier,
    passwordHash,
  ]);
}

/** Sets the user's password hash if it is still `previous`; false when it is not (changed meanwhile). */
export async function replacePasswordHash(
  q: Queryable,
  id: string,
  previous: string,
  passwordHash: string,
): Promise<boolean> {
  const { rowCount } = await q.query('UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2', [
    id,
    previous,
    passwordHash,
  ]);
  return rowCount > 0;
}

/**
 * SQL yielding at most one row (user_id, token_id, expires) for the credentials, with parameters $1 (token hash or
 * null), $2 (now) and $3 (anonymous user id or null): an active, unexpired token by its hash (one indexed lookup), or the
 * anonymous user if it exists. Statements embed it so that authentication costs no extra round trip. There is one
 * variant per kind of credentials rather than a UNION ALL of both, so that each plan holds only the lookup it needs
 * (bench/statement-cost.ts measures it); a statement that embeds it is prepared once per variant, told apart by
 * `suffix`.
 */
export function callerSql(credentials: Credentials): { sql: string; suffix: string } {
  return credentials.tokenHash !== undefined ? TOKEN_CALLER : ANONYMOUS_CALLER;
}

const TOKEN_CALLER = {
  sql: `SELECT t.user_id, t.id AS token_id, t.expires FROM tokens t
        WHERE t.hash = $1::text AND t.state = 'ACTIVE' AND (t.expires IS NULL OR t.expires > $2::timestamptz) AND $3::uuid IS NULL`,
  suffix: '',
};
const ANONYMOUS_CALLER = {
  sql: `SELECT u.id AS user_id, NULL::uuid AS token_id, NULL::timestamptz AS expires FROM users u
        WHERE u.id = $3::uuid AND $1::text IS NULL AND $2::timestamptz IS NOT NULL`,
  suffix: '_anonymous',
};

export const callerParams = (credentials: Credentials, now: Date) => [
  credentials.tokenHash ?? null,
  now.toISOString(), // (cheaper than the driver's local-time formatting of a Date; the SQL casts it)
  credentials.anonymousUserId ?? null,
];

export async function resolveCaller(q: Queryable, credentials: Credentials, now: Date): Promise<Caller | null> {
  const caller = callerSql(credentials);
  const { rows } = await q.query<{ user_id: string; token_id: string | null }>(
    caller.sql,
    callerParams(credentials, now),
    `resolve_caller${caller.suffix}`,
  );
  return rows[0]
    ? {
        userId: storedElementId(rows[0].user_id),
        tokenId: rows[0].token_id === null ? null : storedElementId(rows[0].token_id),
      }
    : null;
}

export async function insertToken(
  q: Queryable,
  token: { id: string; hash: string; userId: string; state: 'ACTIVE' | 'REVOKED'; issued: Date; expires: Date | null },
): Promise<void> {
  await q.query('INSERT INTO tokens (id, hash, user_id, state, issued, expires) VALUES ($1, $2, $3, $4, $5, $6)', [
    token.id,
    token.hash,
    token.userId,
    token.state,
    token.issued,
    token.expires,
  ]);
}

/** Deletes a Token element, and so its token row. */
export async function deleteToken(q: Queryable, id: string): Promise<void> {
  await q.query('DELETE FROM elements WHERE id = $1', [id]);
}

/** Deletes the Token elements (and so their token rows) that expired before `before`. Returns how many. */
export async function deleteExpiredTokens(q: Queryable, before: Date): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM elements WHERE id IN (SELECT id FROM tokens WHERE expires IS NOT NULL AND expires < $1)`,
    [before],
  );
  return rowCount;
}

export interface TokenFilter {
  userIds?: string[];
  groupId?: string;
  issuedBefore?: Date;
  issuedAfter?: Date;
  withExpirationDate?: boolean;
  withoutExpirationDate?: boolean;
  /** Tokens that expired before this instant are no longer active. */
  now: Date;
}

export interface TokenListing {
  id: string;
  user_id: string;
  identifier: string;
  issued: Date;
  expires: Date | null;
}

/** Active tokens matching the filter (token:revoke). Group members are found transitively through IS_IN_GROUP. */
export async function activeTokens(q: Queryable, filter: TokenFilter): Promise<TokenListing[]> {
  const values: unknown[] = [filter.now];
  const where: string[] = [`t.state = 'ACTIVE'`, '(t.expires IS NULL OR t.expires > $1)'];
  const add = (sql: string, value: unknown) => {
    values.push(value);
    where.push(sql.replace('?', `$${values.length}`));
  };
  if (filter.userIds) add('t.user_id = ANY(?::uuid[])', filter.userIds);
  if (filter.groupId)
    add(
      `t.user_id IN (WITH RECURSIVE members(id) AS (
         SELECT ?::uuid
         UNION
         SELECT r.start_id FROM elements r JOIN members m ON r.end_id = m.id WHERE r.type = 'IS_IN_GROUP'
       ) SELECT id FROM members)`,
      filter.groupId,
    );
  if (filter.issuedBefore) add('t.issued < ?', filter.issuedBefore);
  if (filter.issuedAfter) add('t.issued > ?', filter.issuedAfter);
  if (filter.withExpirationDate) where.push('t.expires IS NOT NULL');
  if (filter.withoutExpirationDate) where.push('t.expires IS NULL');
  const { rows } = await q.query<TokenListing>(
    `SELECT t.id, t.user_id, u.identifier, t.issued, t.expires FROM tokens t JOIN users u ON u.id = t.user_id
     WHERE ${where.join(' AND ')} ORDER BY t.issued, t.id`,
    values,
  );
  return rows;
}

/** Revokes every active token of the user (a password change). Returns how many. */
export async function revokeTokensOfUser(q: Queryable, userId: string, now: Date): Promise<number> {
  const { rows } = await q.query<{ id: string }>(`SELECT id FROM tokens WHERE user_id = $1 AND state = 'ACTIVE'`, [
    userId,
  ]);
  return rows.length === 0
    ? 0
    : revokeTokens(
        q,
        rows.map((r) => r.id),
        now,
      );
}

export async function revokeTokens(q: Queryable, ids: string[], now: Date): Promise<number> {
  const { rowCount } = await q.query(
    `UPDATE tokens SET state = 'REVOKED' WHERE id = ANY($1::uuid[]) AND state = 'ACTIVE'`,
    [ids],
  );
  await q.query(
    `UPDATE elements SET data = data || '{"state":"REVOKED"}'::jsonb, updated = $2 WHERE id = ANY($1::uuid[])`,
    [ids, now],
  );
  return rowCount;
}
