// Accounts (src/domain/accounts/accounts.ts) on its real SQL adapters: registration, tokens, password changes and
// the back-off, and what each leaves stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../../../src/errors.js';
import { type ElementId, parseElementId } from '../../../../src/values.js';
import { type DomainUnderTest, domainOnPglite } from '../../helpers/domain.js';

async function refusal(work: Promise<unknown>): Promise<{ slug: string; detail: string; headers: object }> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof Problem)) throw new Error(`expected a Problem, got ${String(error)}`);
  return { slug: error.slug, detail: error.detail, headers: error.headers };
}

const PASSWORD = 'correct horse battery staple';

describe('Accounts', () => {
  let d: DomainUnderTest;

  beforeAll(async () => {
    d = await domainOnPglite({
      register: { minPasswordLength: 10 },
      login: { throttle: { freeFailuresPerIdentifier: 2 } },
    });
  });
  afterAll(() => d.close());

  const register = (identifier: string, password = PASSWORD, extra: object = {}) =>
    d.accounts.register({ type: 'User', uniqueUserIdentifier: identifier, password, ...extra });
  const token = (identifier: string, password = PASSWORD, address?: string) =>
    d.accounts.createToken({ type: 'Token', uniqueUserIdentifier: identifier, password }, address);

  it('registers a user under a new id, and refuses a taken identifier and a short password', async () => {
    const id = await register('carol@unit.dev');
    expect(parseElementId(id)).toBe(id);
    expect(await d.accounts.findUser('carol@unit.dev')).toBe(id);
    expect(await d.accounts.findUser(id.toUpperCase())).toBe(id);
    expect(await refusal(register('carol@unit.dev'))).toMatchObject({ slug: 'reserved-identifier' });
    expect(await refusal(register('dave@unit.dev', 'short'))).toMatchObject({ slug: 'bad-content' });
    expect(await refusal(d.accounts.register({ type: 'Token' }))).toMatchObject({ slug: 'bad-content' });
    expect(await d.accounts.findUser('dave@unit.dev')).toBeNull();
  });

  it('issues a token that authenticates its user, answers GET /token and /me, and can be deleted', async () => {
    const id = await register('erin@unit.dev');
    const { token: secret, id: tokenId } = await token('erin@unit.dev');
    const caller = await d.accounts.authenticate(`Bearer ${secret}`);
    expect(caller).toEqual({ userId: id, tokenId });
    expect(JSON.parse((await d.accounts.currentToken(caller)).body)).toMatchObject({ id: tokenId, type: 'Token' });
    expect(JSON.parse((await d.accounts.me(caller)).body)).toMatchObject({ id, type: 'User' });
    await d.accounts.deleteCurrentToken(caller);
    expect(await refusal(d.accounts.authenticate(`Bearer ${secret}`))).toMatchObject({ slug: 'unauthorized' });
    expect(await refusal(d.accounts.authenticate('Basic abc'))).toMatchObject({ slug: 'unauthorized' });
  });

  it('backs off after the free failed log-ins with Retry-After, refusing a right password meanwhile', async () => {
    await register('frank@unit.dev');
    for (let i = 0; i < 2; i++)
      expect(await refusal(token('frank@unit.dev', 'wrong password!', '192.0.2.7'))).toMatchObject({
        slug: 'unauthorized',
      });
    const backedOff = await refusal(token('frank@unit.dev', PASSWORD, '192.0.2.7'));
    expect(backedOff).toMatchObject({ slug: 'too-many-requests', headers: { 'retry-after': expect.any(String) } });
    d.clock.advance(3600);
    expect((await token('frank@unit.dev', PASSWORD, '192.0.2.7')).token).toMatch(/^secret-token:/);
  });

  it('changes a password only from the current one, and revokes every token of the user', async () => {
    await register('grace@unit.dev');
    const { token: before } = await token('grace@unit.dev');
    const change = (current: string, next: string) =>
      d.accounts.changePassword({
        type: 'ActionChangePassword',
        uniqueUserIdentifier: 'grace@unit.dev',
        currentPassword: current,
        newPassword: next,
      });
    expect(await refusal(change('not the password', 'a new long password'))).toMatchObject({ slug: 'unauthorized' });
    expect(await refusal(change(PASSWORD, PASSWORD))).toMatchObject({ slug: 'bad-content' });
    await change(PASSWORD, 'a new long password');
    expect(await refusal(d.accounts.authenticate(`Bearer ${before}`))).toMatchObject({ slug: 'unauthorized' });
    expect(await refusal(token('grace@unit.dev'))).toMatchObject({ slug: 'unauthorized' });
    expect((await token('grace@unit.dev', 'a new long password')).token).toMatch(/^secret-token:/);
  });

  it('deletes tokens once they expired longer ago than the grace', async () => {
    await register('heidi@unit.dev');
    const issued = await d.accounts.createToken({
      type: 'Token',
      uniqueUserIdentifier: 'heidi@unit.dev',
      password: PASSWORD,
      lifetimeInSeconds: 60,
    });
    const count = async () =>
      (await d.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tokens WHERE id = $1', [issued.id])).rows[0]!.n;
    expect(await count()).toBe(1);
    d.clock.advance(60 + 15 * 24 * 3600); // past the default grace of 14 days
    expect(await d.accounts.deleteExpiredTokens()).toBeGreaterThanOrEqual(1);
    expect(await count()).toBe(0);
  });

  it('creates a user with a chosen id for user:create, and refuses one in use', async () => {
    const chosen = '0b9b2b5e-3c1d-4d6e-9f00-1a2b3c4d5e6f' as ElementId;
    expect(await d.accounts.createUser('ivan@unit.dev', PASSWORD, { name: 'Ivan' }, chosen)).toBe(chosen);
    expect(await refusal(d.accounts.createUser('judy@unit.dev', PASSWORD, {}, chosen))).toMatchObject({
      slug: 'reserved-identifier',
    });
    expect(await d.accounts.findUser('judy@unit.dev')).toBeNull();
  });
});
