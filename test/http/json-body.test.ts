// JSON bodies the database cannot store are a 400 on every endpoint (src/http/json-body.ts): U+0000, unpaired
// surrogates, numbers beyond the double range, nesting beyond MAX_JSON_DEPTH. They used to reach PostgreSQL and come
// back as 500s; a deeply nested body even broke a prepared statement of the connection for every later request.
import { beforeAll, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/http/json-body.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

/** `{"type":"Note","data":{"a":[[...]]}}` nesting `levels` levels in all (the body object is the first). */
const nested = (levels: number) => `{"type":"Note","data":{"a":${'['.repeat(levels - 2)}${']'.repeat(levels - 2)}}}`;

describeBackends(
  'JSON bodies the database cannot store',
  (h) => {
    let alice: User;
    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@json-body.dev');
    });

    const send = (method: string, path: string, text: string, token: string | undefined = alice.token) =>
      h().request(method, path, { token, raw: Buffer.from(text), headers: { 'content-type': 'application/json' } });
    const notes = async () =>
      (await h().db.query<{ n: number }>(`SELECT count(*)::int AS n FROM elements WHERE type = 'Note'`)).rows[0]!.n;
    const expectBadContent = (res: { status: number; json: any }, detail: RegExp) => {
      expect(res.status).toBe(400);
      expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
      expect(res.json.detail).toMatch(detail);
    };

    it('refuses U+0000, unpaired surrogates and infinite numbers in values and keys, on create, PUT and PATCH, and stores nothing', async () => {
      const before = await notes();
      const bad: Array<[string, RegExp]> = [
        ['{"type":"Note","data":{"t":"a\\u0000b"}}', /at data\.t /],
        ['{"type":"Note","data":{"t":"\\ud800"}}', /at data\.t /],
        ['{"type":"Note","data":{"t":["ok","x\\uDC00y"]}}', /at data\.t\[1\] /],
        ['{"type":"Note","data":{"a\\ud800":"x"}}', /the key of "data\.a/],
        ['{"type":"Note","data":{"big":1e400}}', /at data\.big /],
        ['{"type":"Note","data":{"big":-1E+309}}', /at data\.big /],
      ];
      for (const [text, detail] of bad) expectBadContent(await send('POST', '/', text), detail);
      expect(await notes()).toBe(before);

      const id = await createElement(h(), alice.token, { type: 'Note', data: { t: 'kept' } });
      const etag = (await h().request('GET', `/${id}`, { token: alice.token })).headers.get('etag');
      expectBadContent(await send('PATCH', `/${id}`, '{"t":"a\\u0000b"}'), /at t /);
      expectBadContent(await send('PUT', `/${id}`, '{"t":"\\udc00"}'), /at t /);
      expectBadContent(await send('POST', `/${id}`, '{"type":"Note","data":{"t":"\\u0000"}}'), /at data\.t /);
      const after = await h().request('GET', `/${id}`, { token: alice.token });
      expect(after.headers.get('etag')).toBe(etag);
      expect(after.json.data.t).toBe('kept');
    });

    it('is the same 400 on the other JSON endpoints: register, token, search', async () => {
      expectBadContent(
        await send(
          'POST',
          '/register',
          '{"type":"User","uniqueUserIdentifier":"z\\u0000@x.org","password":"long enough secret"}',
          undefined,
        ),
        /uniqueUserIdentifier/,
      );
      expectBadContent(
        await send(
          'POST',
          '/register',
          '{"type":"User","uniqueUserIdentifier":"s\\ud800@x.org","password":"long enough secret"}',
          undefined,
        ),
        /uniqueUserIdentifier/,
      );
      expectBadContent(
        await send(
          'POST',
          '/token',
          '{"type":"Token","uniqueUserIdentifier":"alice\\u0000@json-body.dev","password":"x"}',
          undefined,
        ),
        /uniqueUserIdentifier/,
      );
      expectBadContent(
        await send(
          'POST',
          '/search',
          '{"steps":[{"type":"searchengine-query-dsl-mixin","query":{"match":{"title":"\\u0000"}}}]}',
        ),
        /steps\[0\]\.query\.match\.title/,
      );
      expectBadContent(
        await send(
          'POST',
          '/search',
          '{"steps":[{"type":"cypher-path-subset","query":"MATCH path=(a)-[]->(b) RETURN path","parameters":{"p":"\\ud800"}}]}',
        ),
        /steps\[0\]\.parameters\.p/,
      );
      const users = await h().db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM elements WHERE type = 'User' AND data->>'email' LIKE 'z%@x.org'`,
      );
      expect(users.rows[0]!.n).toBe(0);
    });

    it('stores what only looks suspicious: surrogate pairs, an escaped backslash before u0000, large finite numbers', async () => {
      const res = await send(
        'POST',
        '/',
        '{"type":"Note","data":{"emoji":"\\ud83c\\udf89","text":"\\\\u0000","big":1e308,"digits":"1e400"}}',
      );
      expect(res.status).toBe(201);
      const got = await h().request('GET', res.headers.get('location')!, { token: alice.token });
      expect(got.json.data).toMatchObject({ emoji: '\u{1f389}', text: '\\u0000', big: 1e308, digits: '1e400' });
    });

    it(`refuses nesting beyond ${MAX_JSON_DEPTH} levels, and the next requests work`, async () => {
      expect((await send('POST', '/', nested(MAX_JSON_DEPTH))).status).toBe(201);
      const before = await notes();
      expectBadContent(await send('POST', '/', nested(MAX_JSON_DEPTH + 1)), /more than 256 levels/);
      expectBadContent(await send('POST', '/', nested(5000)), /more than 256 levels/);
      const id = await createElement(h(), alice.token, { type: 'Note' });
      expectBadContent(
        await send('PATCH', `/${id}`, `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`),
        /more than 256 levels/,
      );
      expect(await notes()).toBe(before + 1);
      // The statements the refused bodies would have used still work, many times over (every pooled connection).
      for (let i = 0; i < 12; i++) {
        expect((await send('POST', '/', '{"type":"Note"}')).status).toBe(201);
        expect((await send('PATCH', `/${id}`, `{"i":${i}}`)).status).toBe(204);
      }
    });
  },
  // The body parser's own nesting limit is what is tested here; the element limit would refuse such data first.
  { settings: { element: { maxNestingDepth: 256 } } },
);
