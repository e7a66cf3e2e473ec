// The SQL of users and tokens (src/storage/queries/accounts.ts), on an in-memory PGlite with the real schema.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../../src/storage/db.js';
import {
  activeTokens,
  callerParams,
  callerSql,
  countRegistration,
  deleteExpiredTokens,
  deleteOldRegistrationCounts,
  deleteToken,
  identifierCollisions,
  insertToken,
  insertUser,
  replacePasswordHash,
  resolveCaller,
  revokeTokens,
  revokeTokensOfUser,
  userByIdentifier,
  userExists,
} from '../../../../src/storage/queries/accounts.js';
import { addNode, addRelation, addUser, migratedDb } from '../../helpers/database.js';

const now = new Date('2026-03-01T12:00:00Z');
const hours = (h: number) => new Date(now.getTime() + h * 3_600_000);

let db: Db;
beforeAll(async () => {
  db = await migratedDb();
});
afterAll(() => db.close());

/** A Token node and its tokens row; returns its id. */
async function token(
  userId: string,
  options: { hash?: string; state?: 'ACTIVE' | 'REVOKED'; issued?: Date; expires?: Date | null } = {},
): Promise<string> {
  const id = await addNode(db, 'Token', { state: options.state ?? 'ACTIVE' });
  await insertToken(db, {
    id,
    hash: options.hash ?? randomUUID(),
    userId,
    state: options.state ?? 'ACTIVE',
    issued: options.issued ?? hours(-1),
    expires: options.expires === undefined ? hours(1) : options.expires,
  });
  return id;
}

const tokenState = async (id: string) =>
  (await db.query<{ state: string }>('SELECT state FROM tokens WHERE id = $1', [id])).rows[0]?.state;

describe('users', () => {
  it('inserts a user, which then exists, and finds it by its exact identifier', async () => {
    const id = await addNode(db, 'User');
    expect(await userExists(db, id)).toBe(false);
    await insertUser(db, id, 'insert@example.org', '$argon2id$stored');
    expect(await userExists(db, id)).toBe(true);
    expect(await userByIdentifier(db, 'insert@example.org')).toEqual({ id, password_hash: '$argon2id$stored' });
    expect(await userByIdentifier(db, 'nobody@example.org')).toBeNull();
  });

  it('refuses a second user with the same identifier under the comparison rule (unique_violation)', async () => {
    await insertUser(db, await addNode(db, 'User'), 'Twice@Example.org', null);
    const error = await insertUser(db, await addNode(db, 'User'), 'twice@example.ORG', null).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: '23505' });
  });

  it('finds an e-mail address in any case and any Unicode normalisation, a plain name only in its normalisation', async () => {
    const mail = await addNode(db, 'User');
    await insertUser(db, mail, 'José@Example.org', null);
    expect((await userByIdentifier(db, 'jose\u0301@example.ORG'))?.id).toBe(mail);
    const name = await addNode(db, 'User');
    await insertUser(db, name, 'Ren\u00e9e', null);
    expect((await userByIdentifier(db, 'Rene\u0301e'))?.id).toBe(name);
    expect(await userByIdentifier(db, 'renée')).toBeNull();
  });

  it('lets a case duplicate log in with its exact spelling only, and lists the collisions holder first', async () => {
    const holder = await addNode(db, 'User');
    await insertUser(db, holder, 'dup@example.org', null);
    const duplicate = await addNode(db, 'User');
    await db.query('INSERT INTO users (id, identifier, case_duplicate) VALUES ($1, $2, true)', [
      duplicate,
      'DUP@example.org',
    ]);
    expect((await userByIdentifier(db, 'DUP@example.org'))?.id).toBe(duplicate);
    expect((await userByIdentifier(db, 'Dup@Example.org'))?.id).toBe(holder);
    expect(await identifierCollisions(db)).toEqual([
      { key: 'dup@example.org', id: holder, identifier: 'dup@example.org', case_duplicate: false },
      { key: 'dup@example.org', id: duplicate, identifier: 'DUP@example.org', case_duplicate: true },
    ]);
  });

  it('replaces a password hash only while it is still the one read', async () => {
    const id = await addNode(db, 'User');
    await insertUser(db, id, 'password@example.org', 'old');
    expect(await replacePasswordHash(db, id, 'stale', 'new')).toBe(false);
    expect((await userByIdentifier(db, 'password@example.org'))?.password_hash).toBe('old');
    expect(await replacePasswordHash(db, id, 'old', 'new')).toBe(true);
    expect((await userByIdentifier(db, 'password@example.org'))?.password_hash).toBe('new');
  });
});

describe('registration counts', () => {
  it('counts attempts in a window, starts a new window after it, and deletes windows that are over', async () => {
    const start = new Date('2026-03-01T10:00:00Z');
    const before = (d: Date) => new Date(d.getTime() - 3_600_000);
    expect(await countRegistration(db, '192.0.2.1', start, before(start))).toEqual({
      registrations: 1,
      window_start: start,
    });
    const later = new Date('2026-03-01T10:30:00Z');
    expect(await countRegistration(db, '192.0.2.1', later, before(later))).toEqual({
      registrations: 2,
      window_start: start,
    });
    // Another key has its own count.
    expect((await countRegistration(db, '192.0.2.2', later, before(later))).registrations).toBe(1);
    // An hour after the window began, it starts again.
    const next = new Date('2026-03-01T11:00:00Z');
    expect(await countRegistration(db, '192.0.2.1', next, before(next))).toEqual({
      registrations: 1,
      window_start: next,
    });
    expect(await deleteOldRegistrationCounts(db, later)).toBe(1);
    const { rows } = await db.query<{ key: string }>('SELECT key FROM registration_counts ORDER BY key');
    expect(rows).toEqual([{ key: '192.0.2.1' }]);
  });

  it('stops counting at the largest integer instead of failing', async () => {
    const start = new Date('2026-03-02T10:00:00Z');
    await db.query('INSERT INTO registration_counts (key, registrations, window_start) VALUES ($1, $2, $3)', [
      'flood',
      2147483647,
      start,
    ]);
    expect((await countRegistration(db, 'flood', start, new Date(0))).registrations).toBe(2147483647);
  });
});

describe('callers and tokens', () => {
  it('resolves an active, unexpired token to its user, and nothing else', async () => {
    const user = await addUser(db, 'caller@example.org');
    const active = await token(user, { hash: 'hash-active' });
    await token(user, { hash: 'hash-revoked', state: 'REVOKED' });
    await token(user, { hash: 'hash-expired', expires: hours(-0.5) });
    await token(user, { hash: 'hash-forever', expires: null });
    expect(await resolveCaller(db, { tokenHash: 'hash-active' }, now)).toEqual({ userId: user, tokenId: active });
    expect(await resolveCaller(db, { tokenHash: 'hash-revoked' }, now)).toBeNull();
    expect(await resolveCaller(db, { tokenHash: 'hash-expired' }, now)).toBeNull();
    expect(await resolveCaller(db, { tokenHash: 'hash-unknown' }, now)).toBeNull();
    expect((await resolveCaller(db, { tokenHash: 'hash-forever' }, now))?.userId).toBe(user);
  });

  it('resolves the anonymous user when it exists, without a token', async () => {
    const anonymous = await addUser(db, 'anonymous');
    expect(await resolveCaller(db, { anonymousUserId: anonymous }, now)).toEqual({ userId: anonymous, tokenId: null });
    expect(await resolveCaller(db, { anonymousUserId: randomUUID() }, now)).toBeNull();
  });

  it('has one statement per kind of credentials, with the parameters in their order', () => {
    const token = callerSql({ tokenHash: 'h' });
    const anonymous = callerSql({ anonymousUserId: 'a' });
    expect(token.suffix).toBe('');
    expect(anonymous.suffix).toBe('_anonymous');
    expect(token.sql).not.toBe(anonymous.sql);
    expect(callerParams({ tokenHash: 'h' }, now)).toEqual(['h', '2026-03-01T12:00:00.000Z', null]);
    expect(callerParams({ anonymousUserId: 'a' }, now)).toEqual([null, '2026-03-01T12:00:00.000Z', 'a']);
  });

  it('lists the active tokens by user, group (transitively), issue time and expiry, oldest first', async () => {
    const ann = await addUser(db, 'ann@tokens.org');
    const bob = await addUser(db, 'bob@tokens.org');
    const team = await addNode(db, 'Group');
    const company = await addNode(db, 'Group');
    await addRelation(db, 'IS_IN_GROUP', bob, team);
    await addRelation(db, 'IS_IN_GROUP', team, company);
    const annOld = await token(ann, { issued: hours(-30), expires: null });
    const annNew = await token(ann, { issued: hours(-2) });
    const bobs = await token(bob, { issued: hours(-20) });
    await token(ann, { issued: hours(-10), state: 'REVOKED' });
    await token(bob, { issued: hours(-10), expires: hours(-1) });
    const ids = async (filter: Parameters<typeof activeTokens>[1]) => (await activeTokens(db, filter)).map((t) => t.id);
    expect(await ids({ now, userIds: [ann, bob] })).toEqual([annOld, bobs, annNew]);
    expect(await ids({ now, groupId: company })).toEqual([bobs]);
    expect(await ids({ now, userIds: [ann, bob], issuedBefore: hours(-5) })).toEqual([annOld, bobs]);
    expect(await ids({ now, userIds: [ann, bob], issuedAfter: hours(-25) })).toEqual([bobs, annNew]);
    expect(await ids({ now, userIds: [ann, bob], withoutExpirationDate: true })).toEqual([annOld]);
    expect(await ids({ now, userIds: [ann, bob], withExpirationDate: true })).toEqual([bobs, annNew]);
    const [first] = await activeTokens(db, { now, userIds: [ann] });
    expect(first).toEqual({
      id: annOld,
      user_id: ann,
      identifier: 'ann@tokens.org',
      issued: hours(-30),
      expires: null,
    });
  });

  it("revokes a user's active tokens, in the tokens table and in the Token elements' data", async () => {
    const user = await addUser(db, 'revoke@tokens.org');
    const other = await addUser(db, 'keep@tokens.org');
    const one = await token(user);
    const two = await token(user, { expires: null });
    const kept = await token(other);
    expect(await revokeTokensOfUser(db, user, now)).toBe(2);
    expect(await tokenState(one)).toBe('REVOKED');
    expect(await tokenState(two)).toBe('REVOKED');
    expect(await tokenState(kept)).toBe('ACTIVE');
    const { rows } = await db.query<{ data: unknown; updated: Date }>(
      'SELECT data, updated FROM elements WHERE id = $1',
      [one],
    );
    expect(rows).toEqual([{ data: { state: 'REVOKED' }, updated: now }]);
    // Nothing left to revoke.
    expect(await revokeTokensOfUser(db, user, now)).toBe(0);
    expect(await revokeTokens(db, [one, kept], now)).toBe(1);
    expect(await tokenState(kept)).toBe('REVOKED');
  });

  it('deletes the tokens that expired before an instant, with their elements', async () => {
    const user = await addUser(db, 'expiry@tokens.org');
    const gone = await token(user, { expires: new Date('2020-01-01T00:00:00Z') });
    const stays = await token(user, { expires: null });
    expect(await deleteExpiredTokens(db, new Date('2021-01-01T00:00:00Z'))).toBe(1);
    expect(await tokenState(gone)).toBeUndefined();
    expect((await db.query('SELECT 1 FROM elements WHERE id = $1', [gone])).rows).toEqual([]);
    expect(await tokenState(stays)).toBe('ACTIVE');
  });

  it('deletes a token with its element, which stops it authenticating', async () => {
    const user = await addUser(db, 'delete@tokens.org');
    const id = await token(user, { hash: 'hash-deleted' });
    expect((await resolveCaller(db, { tokenHash: 'hash-deleted' }, now))?.tokenId).toBe(id);
    await deleteToken(db, id);
    expect(await tokenState(id)).toBeUndefined();
    expect((await db.query('SELECT 1 FROM elements WHERE id = $1', [id])).rows).toEqual([]);
    expect(await resolveCaller(db, { tokenHash: 'hash-deleted' }, now)).toBeNull();
  });
});
