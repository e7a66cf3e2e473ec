// Registrations are counted per client address (domain/accounts/registration-throttle.ts): beyond the allowance of a
// window 429 with Retry-After until the window ends, without the password being hashed or anything stored; other
// addresses are not affected. Time is the harness's clock. The client address is chosen by binding the client socket
// to another loopback address (Linux routes all of 127/8 to the loopback interface).
import { expect, it } from 'vitest';
import { describeBackends, type Harness } from '../helpers/harness.js';
import { type FromAnswer as Answer, postFrom } from '../helpers/post-from.js';

/** POST /register from the given local address. */
const registerFrom = (h: Harness, from: string, identifier: string, password = 'register-secret') =>
  postFrom(h.url, '/register', from, { type: 'User', uniqueUserIdentifier: identifier, password });

const usersNamed = async (h: Harness, pattern: string) =>
  (await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM users WHERE identifier LIKE $1', [pattern])).rows[0]!
    .n;

/**
 * A 429 asking to wait until the window ends: `seconds` after the window's first registration, which happened at
 * `since` (Date.now()); the harness's clock goes on with real time, and a loaded machine takes a while to hash.
 */
function expectThrottled(answer: Answer, h: Harness, seconds: number, since = Date.now()) {
  expect(answer.status).toBe(429);
  const wait = Number(answer.retryAfter);
  expect(wait).toBeLessThanOrEqual(seconds);
  expect(wait).toBeGreaterThanOrEqual(seconds - Math.ceil((Date.now() - since) / 1000));
  expect(answer.json.type).toBe(`${h.url}/error/429/too-many-requests`);
  expect(answer.json.detail).toBe(`Too many registrations from this address: retry in ${wait} seconds.`);
  expect(answer.location).toBeUndefined();
}

describeBackends(
  'registration throttle',
  (h) => {
    it('allows 3 registrations per address in 60 s, then 429 with Retry-After until the window ends', async () => {
      const from = '127.0.1.1';
      const since = Date.now();
      for (let i = 0; i < 3; i++) expect((await registerFrom(h(), from, `a${i}@window.dev`)).status).toBe(201);
      expectThrottled(await registerFrom(h(), from, 'a3@window.dev'), h(), 60, since);
      h().clock.advance(45);
      expectThrottled(await registerFrom(h(), from, 'a3@window.dev'), h(), 15, since);
      // Nothing of the refused attempts was stored.
      expect(await usersNamed(h(), 'a_@window.dev')).toBe(3);
      h().clock.advance(15);
      const next = await registerFrom(h(), from, 'a3@window.dev');
      expect(next.status).toBe(201);
      expect(await usersNamed(h(), 'a_@window.dev')).toBe(4);
      // The new user can log in.
      const login = await h().request('POST', '/token', {
        body: { type: 'Token', uniqueUserIdentifier: 'a3@window.dev', password: 'register-secret' },
      });
      expect(login.status).toBe(201);
    });

    it('does not affect other addresses', async () => {
      const busy = '127.0.2.1';
      const since = Date.now();
      for (let i = 0; i < 3; i++) expect((await registerFrom(h(), busy, `b${i}@others.dev`)).status).toBe(201);
      expectThrottled(await registerFrom(h(), busy, 'b3@others.dev'), h(), 60, since);
      for (const other of ['127.0.2.2', '127.0.3.1', '127.0.0.1'])
        expect((await registerFrom(h(), other, `from-${other}@others.dev`)).status).toBe(201);
      expectThrottled(await registerFrom(h(), busy, 'b3@others.dev'), h(), 60, since);
    });

    it('counts attempts refused for their identifier, but not requests refused before the password is looked at', async () => {
      const from = '127.0.4.1';
      const since = Date.now();
      expect((await registerFrom(h(), from, 'taken@count.dev')).status).toBe(201);
      // A malformed body and a short password are refused before the count.
      for (let i = 0; i < 5; i++) expect((await registerFrom(h(), from, 'short@count.dev', 'short')).status).toBe(400);
      // An identifier in use is refused after the password was hashed: that counts.
      const taken = await registerFrom(h(), from, 'taken@count.dev');
      expect(taken.status).toBe(400);
      expect(taken.json.type).toBe(`${h().url}/error/400/reserved-identifier`);
      expect((await registerFrom(h(), from, 'third@count.dev')).status).toBe(201);
      expectThrottled(await registerFrom(h(), from, 'fourth@count.dev'), h(), 60, since);
    });

    it('counts concurrent registrations exactly', async () => {
      const from = '127.0.5.1';
      const since = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => registerFrom(h(), from, `c${i}@concurrent.dev`)),
      );
      expect(answers.filter((a) => a.status === 201)).toHaveLength(3);
      const refused = answers.filter((a) => a.status === 429);
      expect(refused).toHaveLength(9);
      for (const answer of refused) expectThrottled(answer, h(), 60, since);
      expect(await usersNamed(h(), 'c%@concurrent.dev')).toBe(3);
    });

    it('the background job deletes the counts of windows that are over', async () => {
      const count = async () =>
        (await h().db.query<{ n: number }>('SELECT count(*)::int AS n FROM registration_counts')).rows[0]!.n;
      expect((await registerFrom(h(), '127.0.6.1', 'late@job.dev')).status).toBe(201);
      const before = await count();
      expect(before).toBeGreaterThan(0);
      h().clock.advance(30);
      expect((await registerFrom(h(), '127.0.6.2', 'later@job.dev')).status).toBe(201);
      h().clock.advance(31);
      // Every window but 127.0.6.2's (30 s old) is over.
      expect(await h().services.accounts.forgetOldRegistrationCounts()).toBe(before);
      expect(await count()).toBe(1);
    });
  },
  { settings: { register: { throttle: { registrationsPerAddress: 3, windowInSeconds: 60 } } } },
);

describeBackends(
  'registration throttle by default',
  (h) => {
    it('allows 20 registrations per address in 10 minutes', async () => {
      const from = '127.0.7.1';
      const since = Date.now();
      for (let i = 0; i < 20; i++) expect((await registerFrom(h(), from, `d${i}@default.dev`)).status).toBe(201);
      expectThrottled(await registerFrom(h(), from, 'd20@default.dev'), h(), 600, since);
      expect((await registerFrom(h(), '127.0.7.2', 'd20@default.dev')).status).toBe(201);
    });
  },
  { settings: { register: { throttle: {} } } },
);

describeBackends(
  'registration throttle disabled',
  (h) => {
    it('registers any number from one address and counts nothing', async () => {
      for (let i = 0; i < 25; i++) expect((await registerFrom(h(), '127.0.8.1', `e${i}@free.dev`)).status).toBe(201);
      expect((await h().db.query('SELECT 1 FROM registration_counts')).rows).toHaveLength(0);
    });
  },
  { settings: { register: { throttle: { enabled: false } } } },
);
