// How an element looks on the wire. The database renders every element response (storage/queries/element-json.ts):
// GET /<id>, the collections, search hydration, /me and GET /token. This suite pins that rendering down from the
// outside, on both backends: the JSON shape and key order the spec's representation implies, the stored values
// unchanged, timestamps with a numeric offset, the ETag as a hash of exactly the bytes sent, and the same bytes for
// the same element wherever it appears.
import { createHash, randomUUID } from 'node:crypto';
import { beforeAll, expect, it } from 'vitest';
import { insertElement } from '../../src/storage/queries/elements.js';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
const FILE_BYTES = new TextEncoder().encode('hello');
const FILE_META = {
  contentLength: 5,
  extension: 'txt',
  mimeType: 'text/plain',
  hash: { sha256: createHash('sha256').update(FILE_BYTES).digest('hex') },
};

// Values whose serialisation is easy to get wrong: integer-like keys, escapes, non-ASCII, nesting, numbers, empty
// containers.
const TRICKY: Record<string, unknown> = {
  b: 1,
  10: 'ten',
  2: 'two',
  'q"uote': 'say "hi"\n\t\\ ü 東京 😀 \u2028 \u0001',
  nested: { a: [1, 2.5, -0.125, null, { b: true }], 3: 'x', deep: { deeper: { deepest: [] } } },
  big: 9007199254740991,
  small: 1e-7,
  negative: -42,
  flag: false,
  nothing: null,
  empty: {},
  emptyList: [],
  'key with spaces': 'x',
};
// The HTTP API refuses a key named __proto__ (Fastify's body parser); a backup may still hold one.
const WITH_PROTO: Record<string, unknown> = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}');

const etagOfBytes = (text: string) => `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;

describeBackends('element representation', (h) => {
  let alice: Awaited<ReturnType<typeof userWithToken>>;
  let box: string;
  let tricky: string;
  let bare: string;
  let withFile: string;
  let link: string;
  const proto = randomUUID();
  let before: number;
  let after: number;

  const get = async (id: string) => {
    const res = await h().request('GET', `/${id}`, { token: alice.token });
    expect(res.status, res.text).toBe(200);
    return res;
  };

  beforeAll(async () => {
    alice = await userWithToken(h(), 'alice@representation.dev');
    before = Math.floor(h().clock.now().getTime() / 1000) * 1000;
    box = await createElement(h(), alice.token, { type: 'Folder' });
    tricky = await createElement(h(), alice.token, { type: 'Doc_x-1', data: TRICKY }, box);
    bare = await createElement(h(), alice.token, { type: 'Doc' }, box);
    withFile = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'has a file' } }, box);
    const upload = await h().request('POST', `/${withFile}/file`, {
      token: alice.token,
      raw: FILE_BYTES,
      headers: { 'upload-complete': '?1', 'content-disposition': 'attachment; filename="note.txt"' },
    });
    expect(upload.status).toBe(201);
    const rel = await h().request('POST', '/', {
      token: alice.token,
      body: { type: 'LINKS', start: tricky, end: bare, data: { why: 'ü "x"' } },
    });
    expect(rel.status).toBe(201);
    link = rel.headers.get('location')!.slice(1);
    const relFile = await h().request('PUT', `/${link}/file`, {
      token: alice.token,
      raw: FILE_BYTES,
      headers: { 'upload-complete': '?1' },
    });
    expect(relFile.status, relFile.text).toBe(201);
    const at = h().clock.now();
    await insertElement(h().db, { id: proto, type: 'Doc', data: WITH_PROTO, at });
    await insertElement(h().db, { id: randomUUID(), type: 'OWNS', start: box, end: proto, data: {}, at });
    after = h().clock.now().getTime();
  });

  const expectTimestamps = (data: Record<string, unknown>) => {
    for (const key of ['created', 'updated']) {
      expect(data[key]).toMatch(ISO);
      const at = Date.parse(data[key] as string);
      expect(at).toBeGreaterThanOrEqual(before);
      expect(at).toBeLessThanOrEqual(after);
    }
  };

  it('a node: type, id, data with the stored values and then created, updated', async () => {
    const res = await get(tricky);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const json = JSON.parse(res.text);
    expect(Object.keys(json)).toEqual(['type', 'id', 'data']);
    expect(json.type).toBe('Doc_x-1');
    expect(json.id).toBe(tricky);
    const { created, updated, ...stored } = json.data;
    expect(stored).toEqual(TRICKY);
    expect(Object.keys(json.data).slice(-2)).toEqual(['created', 'updated']);
    expectTimestamps(json.data);
    expect(created).toBe(updated);
  });

  it('a key named __proto__ is an ordinary key', async () => {
    const json = JSON.parse((await get(proto)).text);
    expect(Object.keys(json.data)).toEqual(['x', '__proto__', 'created', 'updated']); // jsonb's key order: shorter keys first
    expect(Object.getOwnPropertyDescriptor(json.data, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a node without properties, and one with a file: hasFile and file in data, file again at the top', async () => {
    const empty = JSON.parse((await get(bare)).text);
    expect(Object.keys(empty)).toEqual(['type', 'id', 'data']);
    expect(Object.keys(empty.data)).toEqual(['created', 'updated']);
    expectTimestamps(empty.data);
    const filed = JSON.parse((await get(withFile)).text);
    expect(Object.keys(filed)).toEqual(['type', 'id', 'data', 'file']);
    expect(Object.keys(filed.data)).toEqual(['name', 'created', 'updated', 'hasFile', 'file']);
    expect(filed.data).toMatchObject({ name: 'has a file', hasFile: true, file: FILE_META });
    expect(filed.file).toEqual(FILE_META);
  });

  it('a relation: start and end after the id; relations carry files like nodes', async () => {
    const json = JSON.parse((await get(link)).text);
    expect(Object.keys(json)).toEqual(['type', 'id', 'start', 'end', 'data', 'file']);
    expect(json).toMatchObject({ type: 'LINKS', id: link, start: tricky, end: bare });
    expect(Object.keys(json.data)).toEqual(['why', 'created', 'updated', 'hasFile', 'file']);
    expect(json.data.why).toBe('ü "x"');
    expect(json.file).toEqual({ ...FILE_META, extension: 'bin' });
  });

  it('the ETag is a hash of exactly the bytes sent; If-None-Match answers 304, If-Match guards writes', async () => {
    const res = await get(tricky);
    const etag = res.headers.get('etag')!;
    expect(etag).toBe(etagOfBytes(res.text));
    const cached = await h().request('GET', `/${tricky}`, { token: alice.token, headers: { 'if-none-match': etag } });
    expect(cached.status).toBe(304);
    expect(cached.text).toBe('');
    const stale = await h().request('PATCH', `/${tricky}`, {
      token: alice.token,
      headers: { 'if-match': '"stale"' },
      body: { b: 2 },
    });
    expect(stale.status).toBe(412);
    expect((await get(tricky)).text).toBe(res.text);
    h().clock.advance(2);
    const ok = await h().request('PATCH', `/${tricky}`, {
      token: alice.token,
      headers: { 'if-match': etag },
      body: { b: 2 },
    });
    expect(ok.status, ok.text).toBe(204);
    const changed = await get(tricky);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.headers.get('etag')).toBe(etagOfBytes(changed.text));
    expect(JSON.parse(changed.text).data.b).toBe(2);
    const again = await h().request('DELETE', `/${tricky}`, { token: alice.token, headers: { 'if-match': etag } });
    expect(again.status).toBe(412);
    expect((await get(tricky)).status).toBe(200);
    // A DELETE whose preconditions compare with the current ETag.
    const current = (await get(proto)).headers.get('etag')!;
    const unlessSame = await h().request('DELETE', `/${proto}`, {
      token: alice.token,
      headers: { 'if-none-match': current },
    });
    expect(unlessSame.status).toBe(412);
    const gone = await h().request('DELETE', `/${proto}`, { token: alice.token, headers: { 'if-match': current } });
    expect(gone.status, gone.text).toBe(204);
    expect((await h().request('GET', `/${proto}`, { token: alice.token })).status).toBe(404);
  });

  it('the same element has the same bytes in GET /<id>, the collections and the search results', async () => {
    const page = await h().request('GET', `/${box}/children`, { token: alice.token });
    expect(page.status).toBe(200);
    for (const id of [tricky, bare, withFile]) expect(page.text).toContain((await get(id)).text);
    const related = await h().request('GET', `/${tricky}/related`, { token: alice.token });
    expect(related.text).toContain((await get(link)).text);
    const found = await h().request('POST', '/search', {
      token: alice.token,
      body: { steps: [{ type: 'element-hydration', query: { elementIds: [link, withFile, tricky] } }] },
    });
    expect(found.status, found.text).toBe(200);
    const expected = await Promise.all([link, withFile, tricky].map(async (id) => JSON.parse((await get(id)).text)));
    expect(JSON.stringify(found.json.results)).toBe(JSON.stringify(expected));
  });

  it('/me and GET /token render their nodes the same way, without internal properties', async () => {
    for (const path of ['/me', '/token']) {
      const res = await h().request('GET', path, { token: alice.token });
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get('etag')).toBe(etagOfBytes(res.text));
      const json = JSON.parse(res.text);
      expect(Object.keys(json)).toEqual(['type', 'id', 'data']);
      expect(Object.keys(json.data).slice(-2)).toEqual(['created', 'updated']);
      expect(Object.keys(json.data).filter((k) => k.startsWith('_'))).toEqual([]);
      expect(res.text).not.toMatch(/password|argon2/i);
      expect(res.text).not.toContain(alice.token.split(':').at(-1)!);
    }
    expect(JSON.parse((await h().request('GET', '/me', { token: alice.token })).text)).toMatchObject({
      type: 'User',
      id: alice.id,
    });
  });
});
