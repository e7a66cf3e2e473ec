// GET /principals (domain/accounts/principals.ts): the people and groups a signed-in user can share with, by exact
// identifier or name, or by id; never an identifier, never a `_` property, at most 10; 401 for the anonymous user,
// 400 for a bad query, 429 past the per-user allowance.
import { beforeAll, expect, it } from 'vitest';
import type { ElementId } from '../../src/values.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const ANON = '6c1f3e0a-7b2d-4e5f-8a9b-0c1d2e3f4a5b';

/** One look-up; in a window of its own unless `sameWindow` (the allowance is 3 per window here). */
const lookup = (h: Harness, user: User | null, query: string, sameWindow = false) => {
  if (!sameWindow) h.clock.advance(61);
  return h.request('GET', `/principals?${query}`, user ? { token: user.token } : {});
};

describeBackends(
  'GET /principals',
  (h) => {
    let alice: User;
    let bob: User;
    let carol: User;
    let gardeners: string;

    const relate = async (token: string, type: string, start: string, end: string) => {
      const r = await h().request('POST', '/', { token, body: { type, start, end } });
      expect(r.status, r.text).toBe(201);
    };

    beforeAll(async () => {
      await h().services.accounts.createUser(
        'anonymous@principals.dev',
        'pw',
        { name: 'Anonymous' },
        ANON as ElementId,
      );
      alice = await userWithToken(h(), 'Alice@Principals.dev');
      bob = await userWithToken(h(), 'bob@principals.dev');
      carol = await userWithToken(h(), 'carol@principals.dev');
      await h().db.query(`UPDATE elements SET data = data || '{"name":"Bob Builder","_note":"x"}' WHERE id = $1`, [
        bob.id,
      ]);
      gardeners = await createElement(h(), alice.token, { type: 'Group', data: { name: 'Gardeners' } });
      await relate(alice.token, 'IS_IN_GROUP', carol.id, gardeners);
    });

    it('finds a user by registration identifier as log-in compares it, without returning the identifier', async () => {
      const r = await lookup(h(), carol, `identifier=${encodeURIComponent('ALICE@principals.DEV')}`);
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.json).toEqual({ items: [{ id: alice.id, type: 'User', name: null }] });
      expect(r.text).not.toMatch(/principals\.dev/i);
    });

    it('finds users and groups by name, trimmed and without case, with the name and nothing else', async () => {
      const byName = await lookup(h(), alice, `identifier=${encodeURIComponent('  bob builder ')}`);
      expect(byName.status).toBe(200);
      expect(byName.json).toEqual({ items: [{ id: bob.id, type: 'User', name: 'Bob Builder' }] });
      expect(byName.text).not.toContain('_note');
      expect(byName.text).not.toContain('bob@');
      const group = await lookup(h(), bob, 'identifier=gardeners');
      expect(group.json).toEqual({ items: [{ id: gardeners, type: 'Group', name: 'Gardeners' }] });
    });

    it('finds nothing for a prefix, a node that is no principal, or an unknown text (200, empty)', async () => {
      // A named node that nobody IS_IN_GROUP's into is not a group.
      await createElement(h(), alice.token, { type: 'Group', data: { name: 'Lonely' } });
      await createElement(h(), alice.token, { type: 'Doc', data: { name: 'Gardeners Handbook' } });
      for (const text of ['alice', 'alice@principals', 'Bob', 'Lonely', 'Gardeners Handbook', 'nobody@x.dev']) {
        const r = await lookup(h(), alice, `identifier=${encodeURIComponent(text)}`);
        expect(r.status, text).toBe(200);
        expect(r.json, text).toEqual({ items: [] });
      }
    });

    it('names the ids that are users or groups, in the order given, and leaves the rest out', async () => {
      const doc = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'Plan' } });
      const missing = '00000000-0000-4000-8000-000000000000';
      const r = await lookup(h(), alice, [gardeners, doc, bob.id, missing, alice.id].map((id) => `id=${id}`).join('&'));
      expect(r.status, r.text).toBe(200);
      expect(r.json.items).toEqual([
        { id: gardeners, type: 'Group', name: 'Gardeners' },
        { id: bob.id, type: 'User', name: 'Bob Builder' },
        { id: alice.id, type: 'User', name: null },
      ]);
      const one = await lookup(h(), alice, `id=${bob.id.toUpperCase()}`);
      expect(one.json.items).toEqual([{ id: bob.id, type: 'User', name: 'Bob Builder' }]);
    });

    it('answers at most 10', async () => {
      const dave = await userWithToken(h(), 'dave@principals.dev');
      for (let i = 0; i < 12; i++) {
        const group = await createElement(h(), dave.token, { type: 'Group', data: { name: 'Crowd' } });
        await relate(dave.token, 'IS_IN_GROUP', dave.id, group);
      }
      const r = await lookup(h(), dave, 'identifier=crowd');
      expect(r.status).toBe(200);
      expect(r.json.items).toHaveLength(10);
    });

    it('refuses a bad query with 400 bad-content, after the credentials', async () => {
      const eve = await userWithToken(h(), 'eve@principals.dev');
      const long = 'x'.repeat(257);
      for (const query of [
        '',
        'identifier=',
        'identifier=%20%20',
        `identifier=${long}`,
        `identifier=a&id=${bob.id}`,
        'id=not-a-uuid',
        'identifier=a&identifier=b',
        Array.from({ length: 101 }, () => `id=${bob.id}`).join('&'),
      ]) {
        const r = await lookup(h(), eve, query);
        expect(r.status, query).toBe(400);
        expect(r.json.type, query).toMatch(/bad-content$/);
      }
      expect((await lookup(h(), eve, `identifier=${'x'.repeat(256)}`)).status).toBe(200);
      const badToken = await h().request('GET', '/principals?id=nope', { headers: { authorization: 'Bearer nope' } });
      expect(badToken.status).toBe(401);
    });

    it('refuses the anonymous user (401 unauthorized)', async () => {
      const r = await lookup(h(), null, 'identifier=gardeners');
      expect(r.status).toBe(401);
      expect(r.json.type).toMatch(/unauthorized$/);
      expect(r.text).not.toContain(gardeners);
    });

    it('throttles each user in a fixed window (429 with Retry-After), a call counting once', async () => {
      const frank = await userWithToken(h(), 'frank@principals.dev');
      const other = await userWithToken(h(), 'grace@principals.dev');
      const many = [gardeners, bob.id, alice.id].map((id) => `id=${id}`).join('&');
      expect((await lookup(h(), frank, many)).status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await lookup(h(), frank, many, true)).status).toBe(200);
      const over = await lookup(h(), frank, 'identifier=gardeners', true);
      expect(over.status).toBe(429);
      expect(over.json.type).toMatch(/too-many-requests$/);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect((await lookup(h(), other, 'identifier=gardeners', true)).status).toBe(200);
      h().clock.advance(Number(over.headers.get('retry-after')));
      expect((await lookup(h(), frank, 'identifier=gardeners', true)).status).toBe(200);
    });
  },
  { anonymousUserId: ANON, settings: { register: { principalLookup: { lookupsPerWindow: 3, windowInSeconds: 60 } } } },
);

describeBackends(
  'GET /principals where the name is the registration identifier',
  (h) => {
    it('never shows a User its name, which is an identifier here', async () => {
      const ann = await userWithToken(h(), 'ann');
      const ben = await userWithToken(h(), 'ben');
      const r = await h().request('GET', `/principals?identifier=ben`, { token: ann.token });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ items: [{ id: ben.id, type: 'User', name: null }] });
      const byId = await h().request('GET', `/principals?id=${ben.id}`, { token: ann.token });
      expect(byId.json).toEqual({ items: [{ id: ben.id, type: 'User', name: null }] });
      expect(byId.text).not.toContain('ben"');
    });
  },
  { settings: { register: { uniqueIdentifier: 'name' } } },
);
