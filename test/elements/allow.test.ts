// `Allow` on GET and HEAD of an element and of its file (domain/elements/allowed-methods.ts): the methods this
// caller may use there, decided in the statement that reads the element. Each case checks the header against what
// the methods really answer for that caller, so that the header never offers a method that 404s nor hides one
// that works.
import { beforeAll, expect, it } from 'vitest';
import { attachFile, createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const READER = 'GET, HEAD';
const WRITER = 'GET, HEAD, PUT, PATCH, DELETE';

describeBackends('Allow on elements and files', (h) => {
  let owner: User;
  let other: User;

  const relate = async (type: string, start: string, end: string) => {
    const r = await h().request('POST', '/', { token: owner.token, body: { type, start, end } });
    expect(r.status, r.text).toBe(201);
    return r.headers.get('location')!.slice(1);
  };
  const allowOf = async (user: User, path: string, headers: Record<string, string> = {}) => {
    const r = await h().request('GET', path, { token: user.token, headers });
    expect([200, 304], r.text).toContain(r.status);
    const head = await h().request('HEAD', path, { token: user.token, headers });
    expect(head.status).toBe(r.status);
    expect(head.headers.get('allow')).toBe(r.headers.get('allow'));
    return r.headers.get('allow');
  };
  const epoch = async () =>
    (await h().db.query<{ epoch: string }>('SELECT epoch::text AS epoch FROM access_epoch')).rows[0]!.epoch;

  beforeAll(async () => {
    owner = await userWithToken(h(), 'owner@allow.dev');
    other = await userWithToken(h(), 'other@allow.dev');
  });

  it('lists every write for an owner, on 200 and on 304, and for HEAD the same', async () => {
    const doc = await createElement(h(), owner.token, { type: 'Doc', data: { name: 'Plan' } });
    expect(await allowOf(owner, `/${doc}`)).toBe(WRITER);
    const etag = (await h().request('GET', `/${doc}`, { token: owner.token })).headers.get('etag')!;
    const notModified = await h().request('GET', `/${doc}`, { token: owner.token, headers: { 'if-none-match': etag } });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get('allow')).toBe(WRITER);
    expect(await allowOf(owner, `/${doc}`, { 'if-none-match': etag })).toBe(WRITER);
    // The header is exposed to scripts of other origins.
    expect(notModified.headers.get('access-control-expose-headers')).toContain('Allow');
    expect((await h().request('PATCH', `/${doc}`, { token: owner.token, body: { v: 1 } })).status).toBe(204);
    expect((await h().request('DELETE', `/${doc}`, { token: owner.token })).status).toBe(204);
    expect((await h().request('GET', `/${doc}`, { token: owner.token })).headers.get('allow')).toBeNull();
  });

  it('lists only GET, HEAD for a reader, and the writes a grant added since (no epoch move needed)', async () => {
    const doc = await createElement(h(), owner.token, { type: 'Doc', data: { v: 0 } });
    await relate('HAS_READ_ACCESS', other.id, doc);
    // Twice: the second answer comes from the remembered decision.
    expect(await allowOf(other, `/${doc}`)).toBe(READER);
    expect(await allowOf(other, `/${doc}`)).toBe(READER);
    expect((await h().request('PATCH', `/${doc}`, { token: other.token, body: { v: 1 } })).status).toBe(404);
    expect((await h().request('DELETE', `/${doc}`, { token: other.token })).status).toBe(404);

    const before = await epoch();
    await relate('HAS_UPDATE_ACCESS', other.id, doc);
    expect(await epoch()).toBe(before);
    expect(await allowOf(other, `/${doc}`)).toBe('GET, HEAD, PUT, PATCH');
    expect((await h().request('PATCH', `/${doc}`, { token: other.token, body: { v: 2 } })).status).toBe(204);
    expect((await h().request('DELETE', `/${doc}`, { token: other.token })).status).toBe(404);

    await relate('HAS_DELETE_ACCESS', other.id, doc);
    expect(await allowOf(other, `/${doc}`)).toBe(WRITER);
    expect(await allowOf(other, `/${doc}`)).toBe(WRITER);
    const stored = await h().db.query<{ data: { v: number } }>('SELECT data FROM elements WHERE id = $1', [doc]);
    expect(stored.rows[0]!.data.v).toBe(2);
    expect((await h().request('DELETE', `/${doc}`, { token: other.token })).status).toBe(204);
    expect((await h().db.query('SELECT 1 FROM elements WHERE id = $1', [doc])).rowCount).toBe(0);
  });

  it('drops the writes once a grant is taken away', async () => {
    const doc = await createElement(h(), owner.token, { type: 'Doc' });
    await relate('HAS_READ_ACCESS', other.id, doc);
    const update = await relate('HAS_UPDATE_ACCESS', other.id, doc);
    expect(await allowOf(other, `/${doc}`)).toBe('GET, HEAD, PUT, PATCH');
    expect(await allowOf(other, `/${doc}`)).toBe('GET, HEAD, PUT, PATCH');
    expect((await h().request('DELETE', `/${update}`, { token: owner.token })).status).toBe(204);
    expect(await allowOf(other, `/${doc}`)).toBe(READER);
    expect((await h().request('PATCH', `/${doc}`, { token: other.token, body: { v: 1 } })).status).toBe(404);
  });

  it('never offers DELETE on a User node', async () => {
    const allow = await allowOf(owner, `/${owner.id}`);
    expect(allow).not.toContain('DELETE');
    expect([403, 404]).toContain((await h().request('DELETE', `/${owner.id}`, { token: owner.token })).status);
    expect((await h().db.query('SELECT 1 FROM elements WHERE id = $1', [owner.id])).rowCount).toBe(1);
    const patched = await h().request('PATCH', `/${owner.id}`, { token: owner.token, body: { name: 'Owner' } });
    expect(patched.status).toBe(allow!.includes('PATCH') ? 204 : 404);
  });

  it('lists the writes of a relation the caller may change', async () => {
    const a = await createElement(h(), owner.token, { type: 'Doc' });
    const b = await createElement(h(), owner.token, { type: 'Doc' });
    const link = await relate('LINKS_TO', a, b);
    expect(await allowOf(owner, `/${link}`)).toBe(WRITER);
    await relate('HAS_READ_ACCESS', other.id, a);
    await relate('HAS_READ_ACCESS', other.id, b);
    expect(await allowOf(other, `/${link}`)).toBe(READER);
    expect((await h().request('PATCH', `/${link}`, { token: other.token, body: { w: 1 } })).status).toBe(404);
  });
});

// The file's Allow on both blob stores: the object store opens a version after the decision, the disk store under it.
describeBackends(
  'Allow on files',
  (h) => {
    let owner: User;
    let other: User;

    const relate = async (type: string, start: string, end: string) => {
      const r = await h().request('POST', '/', { token: owner.token, body: { type, start, end } });
      expect(r.status, r.text).toBe(201);
    };
    const allowOf = async (user: User, path: string, headers: Record<string, string> = {}) => {
      const r = await h().request('GET', path, { token: user.token, headers });
      expect([200, 304], r.text).toContain(r.status);
      const head = await h().request('HEAD', path, { token: user.token, headers });
      expect(head.status).toBe(r.status);
      expect(head.headers.get('allow')).toBe(r.headers.get('allow'));
      return r.headers.get('allow');
    };

    beforeAll(async () => {
      owner = await userWithToken(h(), 'owner@allow-files.dev');
      other = await userWithToken(h(), 'other@allow-files.dev');
    });

    it('on /<id>/file: GET, HEAD for a reader, every file method for who may update the element', async () => {
      const doc = await createElement(h(), owner.token, { type: 'Doc' });
      await attachFile(h(), owner.token, doc, Buffer.from('hello'), 'hello.txt');
      expect(await allowOf(owner, `/${doc}/file`)).toBe('GET, HEAD, POST, PUT, DELETE');
      const etag = (await h().request('GET', `/${doc}/file`, { token: owner.token })).headers.get('etag')!;
      expect(await allowOf(owner, `/${doc}/file`, { 'if-none-match': etag })).toBe('GET, HEAD, POST, PUT, DELETE');
      const ranged = await h().request('GET', `/${doc}/file`, { token: owner.token, headers: { range: 'bytes=0-1' } });
      expect(ranged.status).toBe(206);
      expect(ranged.headers.get('allow')).toBe('GET, HEAD, POST, PUT, DELETE');

      await relate('HAS_READ_ACCESS', other.id, doc);
      expect(await allowOf(other, `/${doc}/file`)).toBe(READER);
      const put = await h().request('PUT', `/${doc}/file`, {
        token: other.token,
        raw: new Uint8Array(Buffer.from('x')),
        headers: { 'upload-complete': '?1' },
      });
      expect(put.status).toBe(404);
      expect((await h().request('DELETE', `/${doc}/file`, { token: other.token })).status).toBe(404);
      const stored = await h().db.query<{ length: string }>(
        `SELECT file->>'contentLength' AS length FROM elements WHERE id = $1`,
        [doc],
      );
      expect(stored.rows[0]!.length).toBe('5');

      await relate('HAS_UPDATE_ACCESS', other.id, doc);
      expect(await allowOf(other, `/${doc}/file`)).toBe('GET, HEAD, POST, PUT, DELETE');
      expect((await h().request('DELETE', `/${doc}/file`, { token: other.token })).status).toBe(204);
      expect((await h().request('GET', `/${doc}/file`, { token: other.token })).headers.get('allow')).toBeNull();
    });
  },
  { blobs: true },
);
