import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { hashToken } from '../../src/domain/accounts/tokens.js';
import { activeTokens } from '../../src/storage/queries/accounts.js';
import type { ElementId } from '../../src/values.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

const register = (h: Harness, body: unknown) => h.request('POST', '/register', { body });
const login = (h: Harness, identifier: string, password: string, extra: Record<string, unknown> = {}) =>
  h.request('POST', '/token', { body: { type: 'Token', uniqueUserIdentifier: identifier, password, ...extra } });
const changeBody = (identifier: string, currentPassword: string, newPassword: string) =>
  ({ type: 'ActionChangePassword', uniqueUserIdentifier: identifier, currentPassword, newPassword }) as Record<
    string,
    unknown
  >;

async function allText(h: Harness): Promise<string> {
  const { rows } = await h.db.query<{ t: string }>(`SELECT string_agg(data::text, ' ') AS t FROM elements`);
  return rows[0]?.t ?? '';
}

describeBackends('accounts', (h) => {
  it('registers a user: 201, Location, the node readable by its user, no hash anywhere', async () => {
    const res = await register(h(), {
      type: 'User',
      uniqueUserIdentifier: 'alice@example.dev',
      password: 'pw-alice',
      data: { name: 'Alice' },
    });
    expect(res.status).toBe(201);
    expect(res.text).toBe('');
    const location = res.headers.get('location')!;
    expect(location).toMatch(/^\/[0-9a-f-]{36}$/);
    const tok = await login(h(), 'alice@example.dev', 'pw-alice');
    expect(tok.status).toBe(201);
    expect(tok.json).toEqual({
      type: '_TokenResponse',
      token: expect.stringMatching(/^secret-token:[0-9A-Za-v]{1,22}$/),
    });
    const me = await h().request('GET', '/me', { token: tok.json.token });
    expect(me.status).toBe(200);
    expect(me.json).toMatchObject({
      type: 'User',
      id: location.slice(1),
      data: { name: 'Alice', email: 'alice@example.dev' },
    });
    expect(me.headers.get('etag')).toMatch(/^"/);
    const own = await h().request('GET', location, { token: tok.json.token });
    expect(own.status).toBe(200);
    expect(own.text).toBe(me.text);
    // The password hash is stored only in users.password_hash, as argon2id.
    const { rows } = await h().db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [
      location.slice(1),
    ]);
    expect(rows[0]!.password_hash).toMatch(/^\$argon2id\$/);
    expect(me.text).not.toContain('argon2');
    expect(await allText(h())).not.toContain('argon2');
    expect(await allText(h())).not.toContain(tok.json.token);
  });

  it('rejects bad registrations precisely and stores nothing', async () => {
    const before = (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const cases: [unknown, number, string][] = [
      [{ type: 'User', password: 'long enough' }, 400, 'missing-property'],
      [{ type: 'User', uniqueUserIdentifier: 'b@x.dev' }, 400, 'missing-property'],
      [{ uniqueUserIdentifier: 'b@x.dev', password: 'long enough' }, 400, 'missing-property'],
      [{ type: 'Token', uniqueUserIdentifier: 'b@x.dev', password: 'long enough' }, 400, 'bad-content'],
      [{ type: 'User', uniqueUserIdentifier: 42, password: 'long enough' }, 400, 'bad-content'],
      [
        { type: 'User', uniqueUserIdentifier: 'b@x.dev', password: 'long enough', data: { email: 'other@x.dev' } },
        400,
        'forbidden-property',
      ],
      [
        { type: 'User', uniqueUserIdentifier: 'b@x.dev', password: 'long enough', data: { _passwordHash: 'x' } },
        400,
        'forbidden-property',
      ],
      [
        { type: 'User', uniqueUserIdentifier: 'b@x.dev', password: 'long enough', data: { created: 'x' } },
        400,
        'forbidden-property',
      ],
      [[1, 2], 400, 'bad-content'],
      // Longer than an identifier may be (PostgreSQL's unique index takes about 2,700 bytes).
      // (random, since PostgreSQL compresses a repetitive one enough to fit)
      [
        { type: 'User', uniqueUserIdentifier: randomBytes(3000).toString('base64'), password: 'long enough' },
        400,
        'bad-content',
      ],
      [{ type: 'User', uniqueUserIdentifier: 'é'.repeat(513), password: 'long enough' }, 400, 'bad-content'],
    ];
    for (const [body, status, slug] of cases) {
      const res = await register(h(), body);
      expect(res.status, JSON.stringify(body).slice(0, 120)).toBe(status);
      expect(res.json.type).toBe(`${h().url}/error/${status}/${slug}`);
    }
    const after = (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    expect(after).toBe(before);
    // The longest identifier there is, of characters that take 4 bytes each, registers and logs in.
    const longest = '😀'.repeat(256);
    expect((await register(h(), { type: 'User', uniqueUserIdentifier: longest, password: 'pw-longest' })).status).toBe(
      201,
    );
    expect(
      (
        await h().request('POST', '/token', {
          body: { type: 'Token', uniqueUserIdentifier: longest, password: 'pw-longest' },
        })
      ).status,
    ).toBe(201);
  });

  it('gives one 201 and one reserved-identifier for two concurrent registrations of one identifier', async () => {
    const body = { type: 'User', uniqueUserIdentifier: 'race@example.dev', password: 'pw-long-enough' };
    const results = await Promise.all([register(h(), body), register(h(), body), register(h(), body)]);
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 400, 400]);
    for (const r of results.filter((r) => r.status === 400))
      expect(r.json.type).toMatch(/\/error\/400\/reserved-identifier$/);
    const { rows } = await h().db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM elements WHERE type = 'User' AND data->>'email' = 'race@example.dev'`,
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('treats e-mail identifiers without regard to case: one account per address, stored as registered', async () => {
    const first = await register(h(), {
      type: 'User',
      uniqueUserIdentifier: 'Mixed.Case@Example.dev',
      password: 'mixed-secret',
    });
    expect(first.status).toBe(201);
    for (const spelling of ['mixed.case@example.dev', 'MIXED.CASE@EXAMPLE.DEV']) {
      const again = await register(h(), { type: 'User', uniqueUserIdentifier: spelling, password: 'other-secret' });
      expect(again.status, spelling).toBe(400);
      expect(again.json.type).toBe(`${h().url}/error/400/reserved-identifier`);
    }
    for (const spelling of ['Mixed.Case@Example.dev', 'mixed.case@example.dev', 'MIXED.CASE@example.DEV']) {
      const tok = await login(h(), spelling, 'mixed-secret');
      expect(tok.status, spelling).toBe(201);
      const me = await h().request('GET', '/me', { token: tok.json.token });
      expect(me.json).toMatchObject({
        id: first.headers.get('location')!.slice(1),
        data: { email: 'Mixed.Case@Example.dev' },
      });
    }
    expect(
      (
        await h().request('POST', '/change-password', {
          body: changeBody('mixed.case@EXAMPLE.dev', 'mixed-secret', 'mixed-secret-2'),
        })
      ).status,
    ).toBe(204);
    expect((await login(h(), 'Mixed.Case@Example.dev', 'mixed-secret-2')).status).toBe(201);
    // Identifiers that are not e-mail addresses keep their case.
    await h().services.accounts.createUser('Operator', 'operator-secret');
    await h().services.accounts.createUser('operator', 'operator-secret-2');
    expect((await login(h(), 'OPERATOR', 'operator-secret')).status).toBe(401);
    expect((await login(h(), 'operator', 'operator-secret-2')).status).toBe(201);
  });

  it('refuses passwords shorter than register.minPasswordLength (8 characters) at register and change-password', async () => {
    const short = await register(h(), { type: 'User', uniqueUserIdentifier: 'short@example.dev', password: 'seven77' });
    expect(short.status).toBe(400);
    expect(short.json.type).toBe(`${h().url}/error/400/bad-content`);
    expect(short.json.detail).toContain("'password'");
    // Characters, not UTF-16 units: seven emoji are fourteen units but too short; eight are enough.
    expect(
      (await register(h(), { type: 'User', uniqueUserIdentifier: 'short@example.dev', password: '😀'.repeat(7) }))
        .status,
    ).toBe(400);
    expect(
      (await register(h(), { type: 'User', uniqueUserIdentifier: 'short@example.dev', password: '😀'.repeat(8) }))
        .status,
    ).toBe(201);
    const change = await h().request('POST', '/change-password', {
      body: changeBody('short@example.dev', '😀'.repeat(8), 'seven77'),
    });
    expect(change.status).toBe(400);
    expect(change.json.type).toBe(`${h().url}/error/400/bad-content`);
    expect(change.json.detail).toContain("'newPassword'");
    expect((await login(h(), 'short@example.dev', '😀'.repeat(8))).status).toBe(201);
  });

  it('answers 401 for a wrong password and for an unknown user, with the same body', async () => {
    await userWithToken(h(), 'bob@example.dev', 'pw-bob-secret');
    const wrong = await login(h(), 'bob@example.dev', 'nope');
    const unknown = await login(h(), 'nobody@example.dev', 'nope');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.text).toBe(unknown.text);
  });

  it('clamps the token lifetime and expires tokens by the clock', async () => {
    const { token } = await userWithToken(h(), 'carol@example.dev', 'pw-long-enough');
    const short = await login(h(), 'carol@example.dev', 'pw-long-enough', { lifetimeInSeconds: 1 });
    const info = await h().request('GET', '/token', { token: short.json.token });
    expect(info.status).toBe(200);
    expect(info.json.type).toBe('Token');
    expect(info.json.data).not.toHaveProperty('token');
    expect(info.json.data).not.toHaveProperty('hash');
    const issued = Date.parse(info.json.data.created);
    expect(Date.parse(info.json.data.expirationDate) - issued).toBe(1800 * 1000); // clamped to the minimum
    h().clock.advance(1801);
    expect((await h().request('GET', '/me', { token: short.json.token })).status).toBe(401);
    // the default lifetime (3 h) token is still fine
    expect((await h().request('GET', '/me', { token })).status).toBe(200);
    h().clock.advance(3 * 3600);
    expect((await h().request('GET', '/me', { token })).status).toBe(401);
    // expired tokens are deleted by the background job after the grace period
    const hash = hashToken(short.json.token);
    expect((await h().db.query('SELECT 1 FROM tokens WHERE hash = $1', [hash])).rows).toHaveLength(1);
    h().clock.advance(1209600);
    expect(await h().services.accounts.deleteExpiredTokens()).toBeGreaterThanOrEqual(2);
    expect((await h().db.query('SELECT 1 FROM tokens WHERE hash = $1', [hash])).rows).toHaveLength(0);
  });

  it('token:revoke lists only tokens that are still active (not revoked, not expired)', async () => {
    const { id } = await userWithToken(h(), 'ivan@example.dev');
    const listed = await activeTokens(h().db, { userIds: [id], now: h().clock.now() });
    expect(listed).toHaveLength(1);
    h().clock.advance(3 * 3600 + 1);
    expect(await activeTokens(h().db, { userIds: [id], now: h().clock.now() })).toHaveLength(0);
  });

  it("keeps a token's one owner: its OWNS can be neither added to nor deleted (400), the token stays usable", async () => {
    const alice = await userWithToken(h(), 'token-owner@example.dev');
    const bob = await userWithToken(h(), 'token-other@example.dev');
    const tokenId = (await h().request('GET', '/token', { token: alice.token })).json.id as string;
    const owners = async () =>
      (
        await h().db.query<{ id: string; start_id: string }>(
          `SELECT id, start_id FROM elements WHERE type = 'OWNS' AND end_id = $1`,
          [tokenId],
        )
      ).rows;
    const [own] = await owners();
    expect(own!.start_id).toBe(alice.id);

    const added = await h().request('POST', '/', {
      token: alice.token,
      body: { type: 'OWNS', start: bob.id, end: tokenId },
    });
    expect(added.status).toBe(400);
    expect(added.json.type).toMatch(/\/error\/400\/bad-content$/);
    const removed = await h().request('DELETE', `/${own!.id}`, { token: alice.token });
    expect(removed.status).toBe(400);
    expect(removed.json.detail).toContain(`DELETE /${tokenId}`);
    expect(await owners()).toEqual([own]);
    expect((await h().request('GET', '/me', { token: alice.token })).status).toBe(200);
    // Bob cannot touch it at all: the same answers as for a missing id.
    expect((await h().request('DELETE', `/${own!.id}`, { token: bob.token })).status).toBe(404);
    // Other grants on a token stay possible, and deleting the token itself works.
    expect(
      (
        await h().request('POST', '/', {
          token: alice.token,
          body: { type: 'HAS_READ_ACCESS', start: bob.id, end: tokenId },
        })
      ).status,
    ).toBe(201);
    expect((await h().request('GET', `/${tokenId}`, { token: bob.token })).status).toBe(200);
    expect((await h().request('DELETE', `/${tokenId}`, { token: alice.token })).status).toBe(204);
    expect((await h().request('GET', '/me', { token: alice.token })).status).toBe(401);
  });

  it('DELETE /token kills exactly that token', async () => {
    const { token, identifier, password } = await userWithToken(h(), 'dave@example.dev');
    const other = (await login(h(), identifier, password)).json.token;
    const del = await h().request('DELETE', '/token', { token });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await h().request('GET', '/me', { token })).status).toBe(401);
    expect((await h().request('GET', '/me', { token: other })).status).toBe(200);
  });

  it('changes passwords from the body alone: 204, no token needed, one sent is ignored, even an invalid one', async () => {
    const { identifier } = await userWithToken(h(), 'erin@example.dev', 'old-password');
    const ok = await h().request('POST', '/change-password', {
      body: changeBody(identifier, 'old-password', 'new-password'),
    });
    expect(ok.status).toBe(204);
    expect(ok.text).toBe('');
    expect((await login(h(), identifier, 'old-password')).status).toBe(401);
    expect((await login(h(), identifier, 'new-password')).status).toBe(201);
    for (const authorization of ['Bearer garbage', 'Bearer secret-token:1234567890ABCDEFabcdef', 'Basic abc']) {
      const again = await h().request('POST', '/change-password', {
        headers: { authorization },
        body: changeBody(identifier, 'new-password', 'newer-password'),
      });
      expect(again.status, authorization).toBe(204);
      expect(
        (
          await h().request('POST', '/change-password', {
            body: changeBody(identifier, 'newer-password', 'new-password'),
          })
        ).status,
      ).toBe(204);
    }
    // Another user's valid token changes nothing about whose password is changed: the body names the user.
    const other = await userWithToken(h(), 'erin-other@example.dev', 'other-password');
    const withOther = await h().request('POST', '/change-password', {
      token: other.token,
      body: changeBody(identifier, 'new-password', 'third-password'),
    });
    expect(withOther.status).toBe(204);
    expect((await login(h(), identifier, 'third-password')).status).toBe(201);
    expect((await login(h(), other.identifier, 'other-password')).status).toBe(201);
  });

  it('checks the body first (each property named), then the identifier (401), then the current password (401)', async () => {
    const { identifier } = await userWithToken(h(), 'order@example.dev', 'old-password');
    const refuse = async (
      body: unknown,
      status: number,
      slug: string,
      names?: string,
      headers: Record<string, string> = {},
    ) => {
      const res = await h().request('POST', '/change-password', { body, headers });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.json.type, JSON.stringify(body)).toMatch(new RegExp(`/error/${status}/${slug}$`));
      if (names) expect(res.json.detail, JSON.stringify(body)).toContain(`'${names}'`);
    };
    const valid = changeBody(identifier, 'old-password', 'new-password');
    await refuse([valid], 400, 'bad-content');
    // type: missing (as everywhere, missing-property) or wrong (bad-content); it comes first.
    await refuse({ ...valid, type: undefined, uniqueUserIdentifier: undefined }, 400, 'missing-property', 'type');
    await refuse({ ...valid, type: 'Token', newPassword: 'old-password' }, 400, 'bad-content', 'type');
    // Then each of the three strings, in order, whatever the identifier names.
    for (const [key, later] of [
      ['uniqueUserIdentifier', 'currentPassword'],
      ['currentPassword', 'newPassword'],
      ['newPassword', null],
    ] as const) {
      const laterBroken = later ? { [later]: 7 } : {};
      await refuse({ ...valid, [key]: undefined, ...laterBroken }, 400, 'missing-property', key);
      await refuse({ ...valid, [key]: null, ...laterBroken }, 400, 'missing-property', key);
      await refuse({ ...valid, [key]: 42, ...laterBroken }, 400, 'bad-content', key);
      await refuse({ ...valid, [key]: '', ...laterBroken }, 400, 'bad-content', key);
      await refuse({ ...valid, [key]: ['x'], ...laterBroken }, 400, 'bad-content', key);
    }
    // A new password equal to the current one, before the user is looked up (also for an unknown identifier).
    await refuse(changeBody(identifier, 'old-password', 'old-password'), 400, 'bad-content', 'newPassword');
    await refuse(changeBody('nobody@example.dev', 'x', 'x'), 400, 'bad-content', 'newPassword');
    // A body error with an invalid token is still the body's 400: the header plays no part.
    await refuse(changeBody(identifier, 'old-password', 'old-password'), 400, 'bad-content', 'newPassword', {
      authorization: 'Bearer garbage',
    });
    const malformed = await h().request('POST', '/change-password', {
      raw: '{"type":',
      headers: { 'content-type': 'application/json', authorization: 'Bearer garbage' },
    });
    expect(malformed.status).toBe(400);
    // Unknown identifier and wrong password: the same 401, same body.
    const unknown = await h().request('POST', '/change-password', {
      body: changeBody('nobody@example.dev', 'old-password', 'new-password'),
    });
    const wrong = await h().request('POST', '/change-password', {
      body: changeBody(identifier, 'nope', 'new-password'),
    });
    expect(unknown.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(unknown.json).toEqual(wrong.json);
    expect((await login(h(), identifier, 'old-password')).status).toBe(201);
  });

  it("revokes every token of the user on a password change, and no one else's", async () => {
    const erin = await userWithToken(h(), 'revoke@example.dev', 'old-password');
    const second = (await login(h(), erin.identifier, 'old-password')).json.token as string;
    const bystander = await userWithToken(h(), 'bystander@example.dev');
    const doc = await createElement(h(), erin.token, { type: 'Doc' });
    // Read once, so that the decision is remembered (access-decisions.ts) and must be forgotten.
    expect((await h().request('GET', `/${doc}`, { token: erin.token })).status).toBe(200);
    expect((await h().request('GET', `/${doc}`, { token: second })).status).toBe(200);
    expect(
      (
        await h().request('POST', '/change-password', {
          body: changeBody(erin.identifier, 'old-password', 'new-password'),
        })
      ).status,
    ).toBe(204);
    for (const token of [erin.token, second]) {
      expect((await h().request('GET', `/${doc}`, { token })).status).toBe(401);
      expect((await h().request('GET', '/me', { token })).status).toBe(401);
      expect((await h().request('GET', `/${erin.id}/children`, { token })).status).toBe(401);
    }
    expect((await h().request('GET', '/me', { token: bystander.token })).status).toBe(200);
    // The Token elements say so, and token:revoke no longer lists them.
    const { rows } = await h().db.query<{ state: string }>(
      `SELECT data->>'state' AS state FROM elements WHERE type = 'Token' AND id IN (SELECT id FROM tokens WHERE user_id = $1)`,
      [erin.id],
    );
    expect(rows.map((r) => r.state)).toEqual(['REVOKED', 'REVOKED']);
    expect(await activeTokens(h().db, { userIds: [erin.id], now: h().clock.now() })).toEqual([]);
    // A token obtained with the new password works.
    const fresh = (await login(h(), erin.identifier, 'new-password')).json.token as string;
    expect((await h().request('GET', `/${doc}`, { token: fresh })).status).toBe(200);
  });

  it('rejects malformed, unknown and revoked tokens with 401', async () => {
    const { token, id } = await userWithToken(h(), 'frank@example.dev');
    for (const header of [
      'Bearer nonsense',
      'Basic abc',
      `Bearer ${token}x!`,
      'Bearer secret-token:',
      'Bearer secret-token:wxyz',
      `Token ${token}`,
    ]) {
      const res = await h().request('GET', '/me', { headers: { authorization: header } });
      expect(res.status, header).toBe(401);
      expect(res.json.type).toMatch(/\/error\/401\/unauthorized$/);
    }
    expect((await h().request('GET', '/me', { token: 'secret-token:1234567890ABCDEFabcdef' })).status).toBe(401);
    await h().db.query(`UPDATE tokens SET state = 'REVOKED' WHERE user_id = $1`, [id]);
    expect((await h().request('GET', '/me', { token })).status).toBe(401);
  });

  it('honours If-None-Match and If-Match on GET /me and GET /token, as for any element', async () => {
    const { token } = await userWithToken(h(), 'conditions@accounts.dev');
    for (const path of ['/me', '/token']) {
      const first = await h().request('GET', path, { token });
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^"/);
      const same = await h().request('GET', path, { token, headers: { 'if-none-match': etag } });
      expect(same.status, path).toBe(304);
      expect(same.headers.get('etag')).toBe(etag);
      expect(same.text).toBe('');
      expect((await h().request('GET', path, { token, headers: { 'if-none-match': '"other"' } })).status).toBe(200);
      expect((await h().request('GET', path, { token, headers: { 'if-match': etag } })).status).toBe(200);
      const failed = await h().request('GET', path, { token, headers: { 'if-match': '"other"' } });
      expect(failed.status, path).toBe(412);
      expect(failed.json.type).toMatch(/\/error\/412\/precondition-failed$/);
    }
  });

  it('without Authorization and without an anonymous user answers 401', async () => {
    expect((await h().request('GET', '/me')).status).toBe(401);
    expect((await h().request('GET', '/')).status).toBe(401);
  });
});

const ANON = '2d376349-c5e2-42c8-8ce0-d6f525256cf7';

describeBackends(
  'anonymous user',
  (h) => {
    it('runs requests without Authorization as the anonymous user, never downgrades bad tokens', async () => {
      // Before the user exists, no credentials give 401.
      expect((await h().request('GET', '/me')).status).toBe(401);
      await h().services.accounts.createUser('anonymous@localhost.dev', 'pw', { name: 'Anonymous' }, ANON as ElementId);
      const me = await h().request('GET', '/me');
      expect(me.status).toBe(200);
      expect(me.json.id).toBe(ANON);
      expect((await h().request('GET', '/token')).status).toBe(403);
      // The anonymous user's password cannot be changed: 403 after the identifier is found, whatever the password
      // or the header; a body error still comes first.
      for (const [currentPassword, authorization] of [
        ['pw', undefined],
        ['wrong', undefined],
        ['pw', 'Bearer garbage'],
      ] as const) {
        const change = await h().request('POST', '/change-password', {
          body: changeBody('anonymous@localhost.dev', currentPassword, 'x-long-enough'),
          headers: authorization ? { authorization } : {},
        });
        expect(change.status).toBe(403);
        expect(change.json.type).toMatch(/\/error\/403\/forbidden$/);
      }
      expect(
        (await h().request('POST', '/change-password', { body: changeBody('anonymous@localhost.dev', 'pw', 'pw') }))
          .status,
      ).toBe(400);
      expect(
        (
          await h().request('POST', '/change-password', {
            body: changeBody('nobody@localhost.dev', 'pw', 'x-long-enough'),
          })
        ).status,
      ).toBe(401);
      expect((await login(h(), 'anonymous@localhost.dev', 'pw')).status).toBe(201);
      // The anonymous user can create data.
      const created = await h().request('POST', '/', { body: { type: 'Note', data: { text: 'public' } } });
      expect(created.status).toBe(201);
      // A bad, revoked, expired token or one of a deleted user is 401, not anonymous.
      const { token, id } = await userWithToken(h(), 'gina@example.dev');
      expect((await h().request('GET', '/me', { headers: { authorization: 'Bearer garbage' } })).status).toBe(401);
      await h().db.query('DELETE FROM elements WHERE id = $1', [id]);
      expect((await h().request('GET', '/me', { token })).status).toBe(401);
      const other = await userWithToken(h(), 'hank@example.dev');
      h().clock.advance(4 * 3600);
      expect((await h().request('GET', '/me', { token: other.token })).status).toBe(401);
    });
  },
  { anonymousUserId: ANON },
);

describeBackends(
  'registration settings',
  (h) => {
    it('validates identifiers with the configured pattern and stores them under the configured key', async () => {
      const bad = await register(h(), { type: 'User', uniqueUserIdentifier: 'Not Valid', password: 'long enough' });
      expect(bad.status).toBe(400);
      expect(bad.json.type).toMatch(/bad-content$/);
      const ok = await register(h(), { type: 'User', uniqueUserIdentifier: 'valid_name', password: 'long enough' });
      // register.minPasswordLength is configurable (3 here).
      expect((await register(h(), { type: 'User', uniqueUserIdentifier: 'tiny_pw', password: 'abc' })).status).toBe(
        201,
      );
      expect((await register(h(), { type: 'User', uniqueUserIdentifier: 'tinier_pw', password: 'ab' })).status).toBe(
        400,
      );
      expect(ok.status).toBe(201);
      const { token } = (await login(h(), 'valid_name', 'long enough')).json;
      const me = await h().request('GET', '/me', { token });
      expect(me.json.data.username).toBe('valid_name');
      const forbidden = await register(h(), {
        type: 'User',
        uniqueUserIdentifier: 'other_name',
        password: 'long enough',
        data: { username: 'z' },
      });
      expect(forbidden.status).toBe(400);
      expect(forbidden.json.type).toMatch(/forbidden-property$/);
    });
  },
  {
    settings: { register: { uniqueIdentifier: 'username', uniqueIdentifierRegex: '^[a-z_]+$', minPasswordLength: 3 } },
  },
);

describeBackends(
  'registration disabled',
  (h) => {
    it('answers 403', async () => {
      const res = await register(h(), { type: 'User', uniqueUserIdentifier: 'x@y.z', password: 'long enough' });
      expect(res.status).toBe(403);
      expect(res.json.type).toMatch(/\/error\/403\/forbidden$/);
    });
  },
  { settings: { register: { enabled: false } } },
);
