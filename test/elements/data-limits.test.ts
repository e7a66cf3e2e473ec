// What one element may hold (element.* settings, src/domain/elements/data-limits.ts and trellis_checked_data): every write
// within the limits is stored, every write beyond one is a 400 naming it and changes nothing, also when a PATCH
// would grow an element past them by merging. Both backends, over HTTP.
import { beforeAll, describe, expect, it } from 'vitest';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

const LIMITS = { maxDataSizeInBytes: 400, maxNestingDepth: 3, maxArrayLength: 5, maxValues: 12 };

async function expectRefused(
  h: Harness,
  method: string,
  path: string,
  token: string,
  body: unknown,
  detail: RegExp,
  headers?: Record<string, string>,
) {
  const res = await h.request(method, path, { token, body, ...(headers ? { headers } : {}) });
  expect(res.status, res.text).toBe(400);
  expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
  expect(res.json.detail).toMatch(detail);
}

describeBackends(
  'element data limits',
  (h) => {
    let token: string;
    const dataOf = async (id: string) => {
      const { created: _c, updated: _u, ...data } = (await h().request('GET', `/${id}`, { token })).json.data;
      return data;
    };
    const count = async () => (await h().request('GET', '/?pageSize=5', { token })).json.totalNodes as number;

    beforeAll(async () => {
      token = (await userWithToken(h(), 'alice@limits.dev')).token;
    });

    it('stores data at every limit', async () => {
      // 12 keys and items: a, b (+5 items), c, c.d, c.d.e, f, g; nested three levels; 5 items in an array.
      const data = { a: 'x'.repeat(200), b: [1, 2, 3, 4, 5], c: { d: { e: 1 } }, f: 1, g: 2 };
      const id = await createElement(h(), token, { type: 'Thing', data });
      expect(await dataOf(id)).toEqual(data);
    });

    it('refuses a create beyond each limit with a 400 naming it, and stores nothing', async () => {
      const before = await count();
      await expectRefused(
        h(),
        'POST',
        '/',
        token,
        { type: 'Thing', data: { a: 'x'.repeat(400) } },
        /at most 400 bytes|holds at most 400/,
      );
      await expectRefused(
        h(),
        'POST',
        '/',
        token,
        { type: 'Thing', data: { a: { b: { c: { d: 1 } } } } },
        /more than 3 levels deep/,
      );
      await expectRefused(
        h(),
        'POST',
        '/',
        token,
        { type: 'Thing', data: { a: [1, 2, 3, 4, 5, 6] } },
        /array of 6 items.*at most 5/,
      );
      const keys = Object.fromEntries(Array.from({ length: 13 }, (_, i) => [`k${i}`, i]));
      await expectRefused(h(), 'POST', '/', token, { type: 'Thing', data: keys }, /more than 12 keys and array items/);
      await expectRefused(
        h(),
        'POST',
        '/',
        token,
        {
          type: 'Thing',
          data: {
            a: [
              [1, 2, 3],
              [4, 5, 6],
              [7, 8, 9],
            ],
          },
        },
        /more than 12 keys and array items/,
      );
      expect(await count()).toBe(before);
    });

    it('refuses a PUT or a PATCH body beyond a limit, and the element keeps its data', async () => {
      const id = await createElement(h(), token, { type: 'Thing', data: { name: 'kept' } });
      await expectRefused(h(), 'PUT', `/${id}`, token, { a: [1, 2, 3, 4, 5, 6] }, /array of 6 items/);
      await expectRefused(h(), 'PATCH', `/${id}`, token, { a: { b: { c: { d: 1 } } } }, /levels deep/);
      const etag = (await h().request('GET', `/${id}`, { token })).headers.get('etag')!;
      await expectRefused(h(), 'PATCH', `/${id}`, token, { a: 'x'.repeat(500) }, /400 bytes/, { 'if-match': etag });
      expect(await dataOf(id)).toEqual({ name: 'kept' });
    });

    it('refuses a PATCH whose merge would exceed the limits, with or without preconditions', async () => {
      const id = await createElement(h(), token, {
        type: 'Thing',
        data: { a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8 },
      });
      // Each PATCH alone is within the limits; merged, the element would hold 13 keys.
      await expectRefused(
        h(),
        'PATCH',
        `/${id}`,
        token,
        { i: 1, j: 2, k: 3, l: 4, m: 5 },
        /more than 12 keys and array items .*after the change/,
      );
      const etag = (await h().request('GET', `/${id}`, { token })).headers.get('etag')!;
      await expectRefused(
        h(),
        'PATCH',
        `/${id}`,
        token,
        { i: 1, j: 2, k: 3, l: 4, m: 5 },
        /more than 12 keys and array items/,
        { 'if-match': etag },
      );
      expect(Object.keys(await dataOf(id))).toHaveLength(8);
      const sized = await createElement(h(), token, { type: 'Thing', data: { a: 'x'.repeat(300) } });
      await expectRefused(
        h(),
        'PATCH',
        `/${sized}`,
        token,
        { b: 'y'.repeat(200) },
        /more than 400 bytes as stored after the change/,
      );
      expect(await dataOf(sized)).toEqual({ a: 'x'.repeat(300) });
      // A PATCH that replaces or removes keys stays within them.
      expect((await h().request('PATCH', `/${id}`, { token, body: { a: null, i: 9 } })).status).toBe(204);
      expect(await dataOf(id)).toMatchObject({ i: 9, h: 8 });
    });

    it('applies the limits to the data of a registration and of a token', async () => {
      const res = await h().request('POST', '/register', {
        body: {
          type: 'User',
          uniqueUserIdentifier: 'big@limits.dev',
          password: 'correct horse battery staple',
          data: { a: [1, 2, 3, 4, 5, 6] },
        },
      });
      expect(res.status).toBe(400);
      expect(res.json.detail).toMatch(/array of 6 items/);
      const tok = await h().request('POST', '/token', {
        body: {
          type: 'Token',
          uniqueUserIdentifier: 'alice@limits.dev',
          password: 'correct horse battery staple',
          data: { a: 'x'.repeat(401) },
        },
      });
      expect(tok.status).toBe(400);
    });
  },
  { settings: { element: LIMITS } },
);

describeBackends('element data limits by default', (h) => {
  it('refuses half a million numbers at once, quickly, and answers the next request', async () => {
    const { token } = await userWithToken(h(), 'bob@limits.dev');
    const started = Date.now();
    const res = await h().request('POST', '/', {
      token,
      body: { type: 'Thing', data: { a: Array.from({ length: 500_000 }, (_, i) => i) } },
    });
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/at most 1000/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const id = await createElement(h(), token, {
      type: 'Thing',
      data: { a: Array.from({ length: 999 }, (_, i) => i) },
    });
    expect((await h().request('GET', `/${id}`, { token })).status).toBe(200);
  });
});

describe('element limit settings', () => {
  it('are validated at start-up', async () => {
    const { validateSettings } = await import('../../src/config/load.js');
    expect(validateSettings({}).element).toEqual({
      maxDataSizeInBytes: 65536,
      maxNestingDepth: 32,
      maxArrayLength: 1000,
      maxValues: 1000,
    });
    expect(() => validateSettings({ element: { maxValues: 0 } })).toThrow(/maxValues/);
    expect(() => validateSettings({ element: { maxNestingDepth: 257 } })).toThrow(/maxNestingDepth/);
  });
});
