// GET /<id>, PATCH /<id> and GET /<id>/children remember the access decisions they made (storage/access-decisions.ts) while the access
// epoch (schema/access.ts) stands. Every way a permission or a token can be taken away must answer at once as if
// nothing were remembered: each case here reads or writes first (so the decision is remembered), takes the
// permission away, and tries again.
import { beforeAll, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { createServices } from '../../src/services.js';
import { revokeTokens } from '../../src/storage/queries/accounts.js';
import { insertElement } from '../../src/storage/queries/elements.js';
import type { ElementId } from '../../src/values.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

describeBackends('remembered access decisions', (h) => {
  let owner: User;
  let reader: User;

  const relate = async (token: string, type: string, start: string, end: string) => {
    const r = await h().request('POST', '/', { token, body: { type, start, end } });
    expect(r.status, r.text).toBe(201);
    return r.headers.get('location')!.slice(1);
  };
  const status = async (user: { token: string }, id: string) =>
    (await h().request('GET', `/${id}`, { token: user.token })).status;
  const patch = async (user: { token: string }, id: string, body: Record<string, unknown>) =>
    (await h().request('PATCH', `/${id}`, { token: user.token, body })).status;
  /** Reads twice: the first read decides and remembers, the second is answered from the remembered decision. */
  const readTwice = async (user: { token: string }, id: string) => {
    expect(await status(user, id)).toBe(200);
    expect(await status(user, id)).toBe(200);
  };
  const remove = async (token: string, id: string) =>
    expect((await h().request('DELETE', `/${id}`, { token })).status).toBe(204);
  const epoch = async () =>
    (await h().db.query<{ epoch: string }>('SELECT epoch::text AS epoch FROM access_epoch')).rows[0]!.epoch;

  beforeAll(async () => {
    owner = await userWithToken(h(), 'owner@grants.dev');
    reader = await userWithToken(h(), 'reader@grants.dev');
  });

  it('answers from the remembered decision while the epoch stands (the access check is not run again)', async () => {
    const doc = await createElement(h(), owner.token, { type: 'Doc', data: { v: 1 } });
    const grant = await relate(owner.token, 'HAS_READ_ACCESS', reader.id, doc);
    await readTwice(reader, doc);
    const writer = await userWithToken(h(), 'writer@grants.dev');
    const writeGrant = await relate(owner.token, 'HAS_UPDATE_ACCESS', writer.id, doc);
    expect(await patch(writer, doc, { w: 1 })).toBe(204);
    // Take the grants out of the graph behind the access module's back, without moving the epoch: decisions made
    // again would now deny, remembered ones still allow. This shows that the other cases test the epoch.
    await h().db.query('ALTER TABLE elements DISABLE TRIGGER USER');
    try {
      await h().db.query(`UPDATE elements SET type = 'HAS_TAG' WHERE id = ANY($1::uuid[])`, [[grant, writeGrant]]);
    } finally {
      await h().db.query('ALTER TABLE elements ENABLE TRIGGER USER');
    }
    const before = await epoch();
    const again = await h().request('GET', `/${doc}`, { token: reader.token });
    expect(again.status).toBe(200);
    expect(again.json.data.v).toBe(1);
    expect(await patch(writer, doc, { w: 2 })).toBe(204);
    // A change of the element's data is seen (the element is always read), and does not move the epoch.
    expect((await h().request('PATCH', `/${doc}`, { token: owner.token, body: { v: 2 } })).status).toBe(204);
    expect((await h().request('GET', `/${doc}`, { token: reader.token })).json.data.v).toBe(2);
    expect(await epoch()).toBe(before);
    // Moving the epoch makes the next read decide again, from the relations as they are.
    await h().db.query('SELECT trellis_bump_access_epoch()');
    expect(await epoch()).not.toBe(before);
    expect(await status(reader, doc)).toBe(404);
    expect(await patch(writer, doc, { w: 3 })).toBe(404);
    expect((await h().request('GET', `/${doc}`, { token: owner.token })).json.data).toMatchObject({ v: 2, w: 2 });
  });

  it('forgets a READ when its grant is deleted', async () => {
    const doc = await createElement(h(), owner.token, { type: 'Doc' });
    const grant = await relate(owner.token, 'HAS_READ_ACCESS', reader.id, doc);
    await readTwice(reader, doc);
    await remove(owner.token, grant);
    expect(await status(reader, doc)).toBe(404);
  });

  it('forgets a READ when a group membership or an OWNS on the path is deleted', async () => {
    const outer = await createElement(h(), owner.token, { type: 'Group' });
    const inner = await createElement(h(), owner.token, { type: 'Group' });
    const membership = await relate(owner.token, 'IS_IN_GROUP', reader.id, inner);
    const nesting = await relate(owner.token, 'IS_IN_GROUP', inner, outer);
    const folder = await createElement(h(), owner.token, { type: 'Folder' });
    const ownsFolder = await relate(owner.token, 'OWNS', outer, folder);
    const doc = await createElement(h(), owner.token, { type: 'Doc' }, folder);

    await readTwice(reader, doc);
    await remove(owner.token, nesting);
    expect(await status(reader, doc)).toBe(404);
    await relate(owner.token, 'IS_IN_GROUP', inner, outer);
    await readTwice(reader, doc);
    await remove(owner.token, membership);
    expect(await status(reader, doc)).toBe(404);
    await relate(owner.token, 'IS_IN_GROUP', reader.id, inner);
    await readTwice(reader, doc);
    await remove(owner.token, ownsFolder);
    expect(await status(reader, doc)).toBe(404);
  });

  it('forgets a READ when an element on the OWNS path is deleted', async () => {
    const folder = await createElement(h(), owner.token, { type: 'Folder' });
    const sub = await createElement(h(), owner.token, { type: 'Folder' }, folder);
    const doc = await createElement(h(), owner.token, { type: 'Doc' }, sub);
    await relate(owner.token, 'HAS_READ_ACCESS', reader.id, folder);
    await readTwice(reader, doc);
    // Deleting the middle folder deletes its OWNS relations: the doc is no longer below the granted folder.
    await remove(owner.token, sub);
    expect(await status(reader, doc)).toBe(404);
    expect(await status(reader, folder)).toBe(200);
  });

  it('does not let a relation created again under the same id inherit a decision made for the old one', async () => {
    const a = await createElement(h(), reader.token, { type: 'Doc' });
    const b = await createElement(h(), reader.token, { type: 'Doc' });
    const id = await relate(reader.token, 'HAS_TAG', a, b);
    await readTwice(reader, id);
    await remove(reader.token, id);
    // The same id again, between elements the reader cannot read: clients cannot choose ids, but a backup loaded
    // with --force into the running database can bring one back.
    const x = await createElement(h(), owner.token, { type: 'Doc' });
    const y = await createElement(h(), owner.token, { type: 'Doc' });
    await insertElement(h().db, { id, type: 'HAS_TAG', start: x, end: y, data: {}, at: new Date() });
    expect(await status(owner, id)).toBe(200);
    expect(await status(reader, id)).toBe(404);
  });

  it('answers 401 at once for a token that is deleted, revoked or expired', async () => {
    const doc = await createElement(h(), owner.token, { type: 'Doc' });
    const user = await userWithToken(h(), 'tokens@grants.dev');
    await relate(owner.token, 'HAS_READ_ACCESS', user.id, doc);

    await readTwice(user, doc);
    expect((await h().request('DELETE', '/token', { token: user.token })).status).toBe(204);
    expect(await status(user, doc)).toBe(401);

    const second = await h().request('POST', '/token', {
      body: { type: 'Token', uniqueUserIdentifier: user.identifier, password: user.password },
    });
    await readTwice({ token: second.json.token }, doc);
    const secondId = second.headers.get('location')!.slice(1);
    expect(await h().db.transaction((tx) => revokeTokens(tx, [secondId], new Date()))).toBe(1);
    expect(await status({ token: second.json.token }, doc)).toBe(401);

    const third = await h().request('POST', '/token', {
      body: { type: 'Token', uniqueUserIdentifier: user.identifier, password: user.password, lifetimeInSeconds: 3600 },
    });
    await readTwice({ token: third.json.token }, doc);
    h().clock.advance(3601);
    expect(await status({ token: third.json.token }, doc)).toBe(401);
  });

  it('remembers an UPDATE apart from a READ, and forgets it when its grant is deleted', async () => {
    const updater = await userWithToken(h(), 'updater@grants.dev');
    const doc = await createElement(h(), owner.token, { type: 'Doc', data: { n: 0 } });
    const grant = await relate(owner.token, 'HAS_UPDATE_ACCESS', updater.id, doc);
    expect(await patch(updater, doc, { n: 1 })).toBe(204);
    expect(await patch(updater, doc, { n: 2 })).toBe(204);
    // UPDATE does not imply READ, remembered or not.
    expect(await status(updater, doc)).toBe(404);
    await remove(owner.token, grant);
    expect(await patch(updater, doc, { n: 3 })).toBe(404);
    expect((await h().request('GET', `/${doc}`, { token: owner.token })).json.data.n).toBe(2);
    // A READ remembered for a reader does not let it update.
    await relate(owner.token, 'HAS_READ_ACCESS', reader.id, doc);
    await readTwice(reader, doc);
    expect(await patch(reader, doc, { n: 4 })).toBe(404);
    expect(await status(reader, doc)).toBe(200);
  });

  it('answers 401 at once for a PATCH with a deleted token whose UPDATE was remembered', async () => {
    const user = await userWithToken(h(), 'patcher@grants.dev');
    const doc = await createElement(h(), user.token, { type: 'Doc' });
    expect(await patch(user, doc, { n: 1 })).toBe(204);
    expect(await patch(user, doc, { n: 2 })).toBe(204);
    expect((await h().request('DELETE', '/token', { token: user.token })).status).toBe(204);
    expect(await patch(user, doc, { n: 3 })).toBe(401);
  });

  /** The ids of a children page's nodes, listed twice: the first decides and remembers, the second is answered from it. */
  const childrenTwice = async (user: { token: string }, id: string) => {
    const first = await h().request('GET', `/${id}/children`, { token: user.token });
    expect(first.status, first.text).toBe(200);
    const second = await h().request('GET', `/${id}/children`, { token: user.token });
    expect(second.status).toBe(200);
    expect(second.text.replace(/"id":"[^"]*"/, '')).toBe(first.text.replace(/"id":"[^"]*"/, ''));
    return (second.json.nodes as { id: string }[]).map((n) => n.id).sort();
  };
  const children = async (user: { token: string }, id: string) => {
    const r = await h().request('GET', `/${id}/children`, { token: user.token });
    return {
      status: r.status,
      ids: r.status === 200 ? (r.json.nodes as { id: string }[]).map((n) => n.id).sort() : [],
    };
  };

  it('lists children from a remembered READ that reaches them, and lists what the page holds now', async () => {
    const folder = await createElement(h(), owner.token, { type: 'Folder' });
    const first = await createElement(h(), owner.token, { type: 'Doc' }, folder);
    const grant = await relate(owner.token, 'HAS_READ_ACCESS', reader.id, folder);
    expect(await childrenTwice(reader, folder)).toEqual([first]);
    // A child added or deleted since is seen: the page is always read, only the decision is remembered.
    const second = await createElement(h(), owner.token, { type: 'Doc' }, folder);
    expect((await children(reader, folder)).ids).toEqual([first, second].sort());
    await remove(owner.token, first);
    expect((await children(reader, folder)).ids).toEqual([second]);
    // Taken out behind the access module's back (the epoch does not move): still listed, which shows that the
    // remembered decision answered; once the epoch moves, decided again.
    await h().db.query('ALTER TABLE elements DISABLE TRIGGER USER');
    try {
      await h().db.query(`UPDATE elements SET type = 'HAS_TAG' WHERE id = $1`, [grant]);
    } finally {
      await h().db.query('ALTER TABLE elements ENABLE TRIGGER USER');
    }
    expect((await children(reader, folder)).ids).toEqual([second]);
    await h().db.query('SELECT trellis_bump_access_epoch()');
    expect((await children(reader, folder)).status).toBe(404);
  });

  it('forgets a remembered children page when its grant, an OWNS on the path, the anchor or the token goes', async () => {
    const top = await createElement(h(), owner.token, { type: 'Folder' });
    const folder = await createElement(h(), owner.token, { type: 'Folder' }, top);
    const doc = await createElement(h(), owner.token, { type: 'Doc' }, folder);
    const grant = await relate(owner.token, 'HAS_READ_ACCESS', reader.id, top);
    expect(await childrenTwice(reader, folder)).toEqual([doc]);
    await remove(owner.token, grant);
    expect((await children(reader, folder)).status).toBe(404);

    const group = await createElement(h(), owner.token, { type: 'Group' });
    await relate(owner.token, 'IS_IN_GROUP', reader.id, group);
    const ownsTop = await relate(owner.token, 'OWNS', group, top);
    expect(await childrenTwice(reader, folder)).toEqual([doc]);
    await remove(owner.token, ownsTop);
    expect((await children(reader, folder)).status).toBe(404);

    // READ that does not reach the children (CREATED gives READ on the element alone): nothing is remembered, and
    // a child the reader cannot read stays out of the page every time.
    const shared = await createElement(h(), owner.token, { type: 'Folder' });
    const createGrant = await relate(owner.token, 'HAS_CREATE_ACCESS', reader.id, shared);
    const made = await createElement(h(), reader.token, { type: 'Folder' }, shared);
    await remove(owner.token, createGrant);
    await createElement(h(), owner.token, { type: 'Doc' }, made);
    expect(await status(reader, made)).toBe(200);
    expect(await childrenTwice(reader, made)).toEqual([]);

    const user = await userWithToken(h(), 'children-token@grants.dev');
    const own = await createElement(h(), user.token, { type: 'Folder' });
    const kid = await createElement(h(), user.token, { type: 'Doc' }, own);
    expect(await childrenTwice(user, own)).toEqual([kid]);
    await remove(user.token, own);
    expect((await children(user, own)).status).toBe(404);
    const again = await createElement(h(), user.token, { type: 'Folder' });
    expect(await childrenTwice(user, again)).toEqual([]);
    expect((await h().request('DELETE', '/token', { token: user.token })).status).toBe(204);
    expect((await children(user, again)).status).toBe(401);
  });

  it("remembers a member's READ of its groups and their children pages, and forgets them when a membership goes", async () => {
    const outer = await createElement(h(), owner.token, { type: 'Group' });
    const inner = await createElement(h(), owner.token, { type: 'Group' });
    const membership = await relate(owner.token, 'IS_IN_GROUP', reader.id, inner);
    const nesting = await relate(owner.token, 'IS_IN_GROUP', inner, outer);
    const doc = await createElement(h(), owner.token, { type: 'Doc' }, outer);
    await readTwice(reader, inner);
    await readTwice(reader, outer);
    expect(await childrenTwice(reader, outer)).toEqual([doc]);
    // The children page is remembered from the membership (the group's OWNS are the member's): taken out behind
    // the access module's back it still answers, until the epoch moves.
    await h().db.query('ALTER TABLE elements DISABLE TRIGGER USER');
    try {
      await h().db.query(`UPDATE elements SET type = 'HAS_TAG' WHERE id = $1`, [nesting]);
      await h().db.query('DELETE FROM group_memberships WHERE member_id = $1 AND group_id = $2', [reader.id, outer]);
    } finally {
      await h().db.query('ALTER TABLE elements ENABLE TRIGGER USER');
    }
    expect((await children(reader, outer)).ids).toEqual([doc]);
    expect(await status(reader, outer)).toBe(200);
    await h().db.query('SELECT trellis_bump_access_epoch()');
    expect((await children(reader, outer)).status).toBe(404);
    expect(await status(reader, outer)).toBe(404);
    expect(await status(reader, inner)).toBe(200);
    await remove(owner.token, nesting);

    await relate(owner.token, 'IS_IN_GROUP', inner, outer);
    await readTwice(reader, outer);
    expect(await childrenTwice(reader, outer)).toEqual([doc]);
    await remove(owner.token, membership);
    for (const group of [inner, outer]) expect(await status(reader, group)).toBe(404);
    expect((await children(reader, outer)).status).toBe(404);
    expect((await h().request('POST', `/${outer}`, { token: reader.token, body: { type: 'Doc' } })).status).toBe(404);
  });

  it('sees what another instance on the same database takes away', async () => {
    const other = await createServices(h().config, h().db, h().clock);
    const app = await buildApp({ config: h().config, services: other });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
      const viaOther = async (method: string, path: string, token: string) =>
        (await fetch(url + path, { method, headers: { authorization: `Bearer ${token}` } })).status;
      const doc = await createElement(h(), owner.token, { type: 'Doc' });
      const grant = await relate(owner.token, 'HAS_READ_ACCESS', reader.id, doc);
      expect(await viaOther('GET', `/${doc}`, reader.token)).toBe(200);
      expect(await viaOther('GET', `/${doc}`, reader.token)).toBe(200);
      await readTwice(reader, doc);
      // Deleted through this instance: the other one, which remembers its own decision, must see it.
      await remove(owner.token, grant);
      expect(await viaOther('GET', `/${doc}`, reader.token)).toBe(404);
      expect(await status(reader, doc)).toBe(404);
    } finally {
      await app.close();
    }
  });
});

describeBackends(
  'remembered access decisions of the anonymous user',
  (h: () => Harness) => {
    it('forgets them when the grant is deleted', async () => {
      const owner = await userWithToken(h(), 'owner@anonymous-grants.dev');
      const anonymous = '5b0a3c52-8a4f-4a8e-b1d6-0c6f0e1a9b77';
      const created = await h().services.accounts.createUser(
        'anonymous@anonymous-grants.dev',
        'unused password 1',
        {},
        anonymous as ElementId,
      );
      expect(created).toBe(anonymous);
      const doc = await createElement(h(), owner.token, { type: 'Doc' });
      const grant = await h().request('POST', '/', {
        token: owner.token,
        body: { type: 'HAS_READ_ACCESS', start: anonymous, end: doc },
      });
      expect(grant.status).toBe(201);
      expect((await h().request('GET', `/${doc}`)).status).toBe(200);
      expect((await h().request('GET', `/${doc}`)).status).toBe(200);
      expect((await h().request('DELETE', grant.headers.get('location')!, { token: owner.token })).status).toBe(204);
      expect((await h().request('GET', `/${doc}`)).status).toBe(404);
    });
  },
  { anonymousUserId: '5b0a3c52-8a4f-4a8e-b1d6-0c6f0e1a9b77' },
);
