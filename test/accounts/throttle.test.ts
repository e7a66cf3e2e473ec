// Failed credential checks back off per identifier and per client address (domain/accounts/throttle.ts): 429 with
// Retry-After, on the harness's clock. The client address is chosen by binding the client socket to another
// loopback address (Linux routes all of 127/8 to the loopback interface).
import { expect, it } from 'vitest';
import { describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { type FromAnswer as Answer, postFrom as postFromAddress } from '../helpers/post-from.js';

const postFrom = (h: Harness, from: string, path: string, body: unknown) => postFromAddress(h.url, path, from, body);

const login = (h: Harness, from: string, identifier: string, password: string) =>
  postFrom(h, from, '/token', { type: 'Token', uniqueUserIdentifier: identifier, password });
const changePassword = (h: Harness, from: string, identifier: string, currentPassword: string, newPassword: string) =>
  postFrom(h, from, '/change-password', {
    type: 'ActionChangePassword',
    uniqueUserIdentifier: identifier,
    currentPassword,
    newPassword,
  });

/** A fresh client address for every call, so that the address counters stay out of an identifier's test. */
let nextAddress = 0;
const fresh = () => {
  nextAddress += 1;
  return `127.0.${10 + Math.floor(nextAddress / 250)}.${1 + (nextAddress % 250)}`;
};

function expectThrottled(answer: Answer, h: Harness, seconds: number) {
  expect(answer.status).toBe(429);
  expect(answer.retryAfter).toBe(String(seconds));
  expect(answer.json.type).toBe(`${h.url}/error/429/too-many-requests`);
}

describeBackends('credential throttle', (h) => {
  it('per identifier: after 5 failures 1 s, doubling up to 60 s, from any address; then the right password works', async () => {
    const victim = await userWithToken(h(), 'victim@throttle.dev', 'victim-secret');
    for (let i = 0; i < 5; i++) expect((await login(h(), fresh(), victim.identifier, 'wrong')).status).toBe(401);
    // Even the right password, from an address never seen: the identifier is backing off.
    expectThrottled(await login(h(), fresh(), victim.identifier, victim.password), h(), 1);
    // Another spelling of the address is the same identifier.
    expectThrottled(await login(h(), fresh(), 'VICTIM@throttle.dev', victim.password), h(), 1);
    // A token keeps working meanwhile: only credential checks slow down.
    expect((await h().request('GET', '/me', { token: victim.token })).status).toBe(200);
    let wait = 1;
    for (const expected of [2, 4, 8, 16, 32, 60, 60]) {
      h().clock.advance(wait);
      expect((await login(h(), fresh(), victim.identifier, 'wrong')).status).toBe(401);
      expectThrottled(await login(h(), fresh(), victim.identifier, 'wrong'), h(), expected);
      wait = expected;
    }
    // The real user is kept out for at most the cap; then the right password succeeds and clears the counter.
    h().clock.advance(59);
    expectThrottled(await login(h(), fresh(), victim.identifier, victim.password), h(), 1);
    h().clock.advance(1);
    expect((await login(h(), fresh(), victim.identifier, victim.password)).status).toBe(201);
    for (let i = 0; i < 5; i++) expect((await login(h(), fresh(), victim.identifier, 'wrong')).status).toBe(401);
    expectThrottled(await login(h(), fresh(), victim.identifier, 'wrong'), h(), 1);
    h().clock.advance(1);
  });

  it('per address: 10 failures on any identifiers make every attempt from it wait; other addresses are unaffected', async () => {
    const user = await userWithToken(h(), 'bystander@throttle.dev', 'bystander-secret');
    const attacker = fresh();
    for (let i = 0; i < 10; i++)
      expect((await login(h(), attacker, `guess-${i}@throttle.dev`, 'wrong')).status).toBe(401);
    expectThrottled(await login(h(), attacker, user.identifier, user.password), h(), 1);
    expect((await login(h(), fresh(), user.identifier, user.password)).status).toBe(201);
    h().clock.advance(1);
    // A success does not clear the address's counter (an attacker's own account must not reset it).
    expect((await login(h(), attacker, user.identifier, user.password)).status).toBe(201);
    expect((await login(h(), attacker, 'guess-x@throttle.dev', 'wrong')).status).toBe(401);
    expectThrottled(await login(h(), attacker, 'guess-y@throttle.dev', 'wrong'), h(), 2);
    // Up to 300 s at most.
    let wait = 2;
    for (let i = 0; i < 10; i++) {
      h().clock.advance(wait);
      expect((await login(h(), attacker, `guess-z${i}@throttle.dev`, 'wrong')).status).toBe(401);
      const next = await login(h(), attacker, 'guess-y@throttle.dev', 'wrong');
      expect(next.status).toBe(429);
      wait = Number(next.retryAfter);
    }
    expect(wait).toBe(300);
  });

  it('never slows down successes below the threshold, nor many successes from one address', async () => {
    const user = await userWithToken(h(), 'steady@throttle.dev', 'steady-secret');
    const from = fresh();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 4; i++) expect((await login(h(), fresh(), user.identifier, 'wrong')).status).toBe(401);
      expect((await login(h(), from, user.identifier, user.password)).status).toBe(201);
    }
    for (let i = 0; i < 25; i++) expect((await login(h(), from, user.identifier, user.password)).status).toBe(201);
  });

  it('counts failed change-password attempts with failed log-ins, and refuses before checking the password', async () => {
    const user = await userWithToken(h(), 'changer@throttle.dev', 'changer-secret');
    for (let i = 0; i < 3; i++)
      expect((await changePassword(h(), fresh(), user.identifier, 'wrong', 'next-secret')).status).toBe(401);
    for (let i = 0; i < 2; i++) expect((await login(h(), fresh(), user.identifier, 'wrong')).status).toBe(401);
    expectThrottled(await changePassword(h(), fresh(), user.identifier, user.password, 'next-secret'), h(), 1);
    expectThrottled(await login(h(), fresh(), user.identifier, user.password), h(), 1);
    // A body the service refuses is not a credential check: it answers 400 and counts nothing.
    expect((await changePassword(h(), fresh(), user.identifier, user.password, 'short')).status).toBe(400);
    h().clock.advance(1);
    expect((await changePassword(h(), fresh(), user.identifier, user.password, 'next-secret')).status).toBe(204);
    expect((await login(h(), fresh(), user.identifier, 'next-secret')).status).toBe(201);
  });

  it('forgets a counter after 900 s without a failure, and the background job deletes it', async () => {
    const user = await userWithToken(h(), 'forgetful@throttle.dev', 'forgetful-secret');
    for (let i = 0; i < 5; i++) expect((await login(h(), fresh(), user.identifier, 'wrong')).status).toBe(401);
    expectThrottled(await login(h(), fresh(), user.identifier, 'wrong'), h(), 1);
    h().clock.advance(900);
    // Counting starts again: four more failures are free.
    for (let i = 0; i < 4; i++) expect((await login(h(), fresh(), user.identifier, 'wrong')).status).toBe(401);
    expect((await login(h(), fresh(), user.identifier, user.password)).status).toBe(201);
    const count = async () =>
      (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM credential_failures')).rows[0]!.n;
    expect(await count()).toBeGreaterThan(0);
    h().clock.advance(901);
    expect(await h().services.accounts.forgetOldCredentialFailures()).toBeGreaterThan(0);
    expect(await count()).toBe(0);
  });
});

describeBackends(
  'credential throttle disabled',
  (h) => {
    it('answers every wrong password with 401 and the right one with 201', async () => {
      const user = await userWithToken(h(), 'free@throttle.dev', 'free-secret');
      for (let i = 0; i < 30; i++) expect((await login(h(), '127.0.0.1', user.identifier, 'wrong')).status).toBe(401);
      expect((await login(h(), '127.0.0.1', user.identifier, user.password)).status).toBe(201);
      expect((await h().db.query('SELECT 1 FROM credential_failures')).rows).toHaveLength(0);
    });
  },
  { settings: { login: { throttle: { enabled: false } } } },
);
