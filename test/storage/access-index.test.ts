// The access index (schema/access.ts: element_owners, group_memberships): after every kind of graph change, made
// through the HTTP interface, the maintained closures equal a fresh walk of the relations
// (trellis_access_index_drift() is empty) and access follows.
import { beforeAll, expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

describeBackends('access index', (h) => {
  let owner: User;
  let member: User;
  let other: User;

  const drift = async () =>
    (
      await h().db.query<{ closure: string; a: string; b: string; problem: string }>(
        'SELECT closure, a, b, problem FROM trellis_access_index_drift()',
      )
    ).rows;
  const relate = async (token: string, type: string, start: string, end: string) => {
    const r = await h().request('POST', '/', { token, body: { type, start, end } });
    expect(r.status).toBe(201);
    return r.headers.get('location')!.slice(1);
  };
  const status = async (user: User, id: string) => (await h().request('GET', `/${id}`, { token: user.token })).status;
  const owners = async (id: string) =>
    (
      await h().db.query<{ owner_id: string }>('SELECT owner_id FROM element_owners WHERE element_id = $1 ORDER BY 1', [
        id,
      ])
    ).rows.map((r) => r.owner_id);

  beforeAll(async () => {
    owner = await userWithToken(h(), 'owner@index.dev');
    member = await userWithToken(h(), 'member@index.dev');
    other = await userWithToken(h(), 'other@index.dev');
  });

  it('records the owners of new elements and children, and the groups of members, transitively', async () => {
    const a = await createElement(h(), owner.token, { type: 'Folder' });
    const b = await createElement(h(), owner.token, { type: 'Folder' }, a);
    const c = await createElement(h(), owner.token, { type: 'Doc' }, b);
    expect(await owners(c)).toEqual([owner.id, a, b].sort());
    const inner = await createElement(h(), owner.token, { type: 'Group' });
    const outer = await createElement(h(), owner.token, { type: 'Group' });
    await relate(owner.token, 'IS_IN_GROUP', member.id, inner);
    await relate(owner.token, 'IS_IN_GROUP', inner, outer);
    const { rows } = await h().db.query<{ group_id: string }>(
      'SELECT group_id FROM group_memberships WHERE member_id = $1 ORDER BY 1',
      [member.id],
    );
    expect(rows.map((r) => r.group_id)).toEqual([inner, outer].sort());
    expect(await drift()).toEqual([]);
  });

  it('follows re-parenting, grants at the top of a tree, removed relations and deleted middle nodes', async () => {
    const group = await createElement(h(), owner.token, { type: 'Group' });
    await relate(owner.token, 'IS_IN_GROUP', member.id, group);
    const top = await createElement(h(), owner.token, { type: 'Folder' });
    const mid = await createElement(h(), owner.token, { type: 'Folder' }, top);
    const leaf = await createElement(h(), owner.token, { type: 'Doc' }, mid);
    expect(await status(member, leaf)).toBe(404);

    // The group gets ownership of the top: the whole tree below becomes readable for the member.
    const grant = await relate(owner.token, 'OWNS', group, top);
    expect(await owners(leaf)).toEqual([owner.id, group, top, mid].sort());
    expect(await status(member, leaf)).toBe(200);
    expect(await drift()).toEqual([]);

    // A second parent for the middle node (an existing element, not a new one).
    const side = await createElement(h(), other.token, { type: 'Folder' });
    const extra = await createElement(h(), owner.token, { type: 'Folder' });
    await relate(owner.token, 'OWNS', extra, mid);
    expect(await owners(leaf)).toEqual([owner.id, group, top, mid, extra].sort());
    expect(await drift()).toEqual([]);

    // Revoking the grant relation.
    expect((await h().request('DELETE', `/${grant}`, { token: owner.token })).status).toBe(204);
    expect(await status(member, leaf)).toBe(404);
    expect(await drift()).toEqual([]);

    // Deleting the middle node cuts the leaf off from everything above it.
    expect((await h().request('DELETE', `/${mid}`, { token: owner.token })).status).toBe(204);
    expect(await owners(leaf)).toEqual([]);
    expect(await status(owner, leaf)).toBe(200); // still its creator
    expect(await status(member, side)).toBe(404);
    expect(await drift()).toEqual([]);

    // Deleting an element removes its own rows and its rows as an owner (no foreign keys do it: the triggers).
    const parent = await createElement(h(), owner.token, { type: 'Folder' });
    const between = await createElement(h(), owner.token, { type: 'Folder' }, parent);
    const child = await createElement(h(), owner.token, { type: 'Doc' }, between);
    expect(await owners(child)).toEqual([owner.id, parent, between].sort());
    expect((await h().request('DELETE', `/${between}`, { token: owner.token })).status).toBe(204);
    expect(await owners(child)).toEqual([]);
    expect(await owners(between)).toEqual([]);
    expect((await h().db.query('SELECT 1 FROM element_owners WHERE owner_id = $1', [between])).rows).toEqual([]);
    expect(await drift()).toEqual([]);
  });

  it('follows group changes: leaving a group, a deleted group between member and owner group', async () => {
    const inner = await createElement(h(), owner.token, { type: 'Group' });
    const outer = await createElement(h(), owner.token, { type: 'Group' });
    const membership = await relate(owner.token, 'IS_IN_GROUP', member.id, inner);
    await relate(owner.token, 'IS_IN_GROUP', inner, outer);
    const doc = await createElement(h(), owner.token, { type: 'Doc' }, outer);
    expect(await status(member, doc)).toBe(200);

    expect((await h().request('DELETE', `/${membership}`, { token: owner.token })).status).toBe(204);
    expect(await status(member, doc)).toBe(404);
    expect(await drift()).toEqual([]);

    await relate(owner.token, 'IS_IN_GROUP', member.id, inner);
    expect(await status(member, doc)).toBe(200);
    expect((await h().request('DELETE', `/${inner}`, { token: owner.token })).status).toBe(204);
    expect(await status(member, doc)).toBe(404);
    expect(await drift()).toEqual([]);
  });

  it('stays consistent when children are created while their ancestors are granted and re-parented concurrently', async () => {
    const group = await createElement(h(), owner.token, { type: 'Group' });
    await relate(owner.token, 'IS_IN_GROUP', member.id, group);
    const root = await createElement(h(), owner.token, { type: 'Folder' });
    const branch = await createElement(h(), owner.token, { type: 'Folder' }, root);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 24; i++) work.push(createElement(h(), owner.token, { type: 'Doc', data: { i } }, branch));
    work.push(relate(owner.token, 'OWNS', group, root));
    const holder = await createElement(h(), owner.token, { type: 'Folder' });
    work.push(relate(owner.token, 'OWNS', holder, branch));
    const ids = (await Promise.all(work)).slice(0, 24) as string[];
    expect(await drift()).toEqual([]);
    for (const id of ids) expect(await status(member, id)).toBe(200);
  });

  it("keeps each node's search keys (its owners and creators); the drift check sees a wrong key", async () => {
    const keys = async (id: string) =>
      (
        await h().db.query<{ k: string }>(
          'SELECT DISTINCT unnest(access_keys) AS k FROM elements WHERE id = $1 ORDER BY 1',
          [id],
        )
      ).rows.map((r) => r.k);
    const top = await createElement(h(), owner.token, { type: 'Folder' });
    const doc = await createElement(h(), owner.token, { type: 'Doc' }, top);
    expect(await keys(top)).toEqual([owner.id]);
    expect(await keys(doc)).toEqual([owner.id, top].sort());
    // Another user's child below a granted folder: its creator is one of its keys.
    await relate(owner.token, 'HAS_CREATE_ACCESS', other.id, top);
    const theirs = await createElement(h(), other.token, { type: 'Doc' }, top);
    expect(await keys(theirs)).toEqual([owner.id, other.id, top].sort());
    // A second owner for the folder reaches everything below it; removing it takes its key away again.
    const group = await createElement(h(), owner.token, { type: 'Group' });
    const shelf = await createElement(h(), owner.token, { type: 'Folder' }, group);
    const second = await relate(owner.token, 'OWNS', shelf, top);
    expect(await keys(doc)).toEqual([owner.id, group, shelf, top].sort());
    expect(await keys(theirs)).toEqual([owner.id, other.id, group, shelf, top].sort());
    expect((await h().request('DELETE', `/${second}`, { token: owner.token })).status).toBe(204);
    expect(await keys(doc)).toEqual([owner.id, top].sort());
    // A relation is filed under its end's keys, its end and its start (schema change 7): the OWNS from the shelf
    // is gone, the one from the owner to the folder remains.
    const { rows: ownsKeys } = await h().db.query<{ keys: string[] }>(
      `SELECT access_keys::text[] AS keys FROM elements WHERE type = 'OWNS' AND start_id = $1 AND end_id = $2`,
      [owner.id, top],
    );
    expect(ownsKeys.map((r) => [...r.keys].sort())).toEqual([[owner.id, top].sort()]);
    expect(await drift()).toEqual([]);

    await h().db.query(`UPDATE elements SET access_keys = ARRAY[$2::uuid] WHERE id = $1`, [doc, member.id]);
    expect(new Set((await drift()).map((r) => `${r.closure} ${r.a} ${r.b} ${r.problem}`))).toEqual(
      new Set([
        `access_keys ${doc} ${member.id} stale`,
        `access_keys ${doc} ${owner.id} missing`,
        `access_keys ${doc} ${top} missing`,
      ]),
    );
    await h().db.transaction(async (tx) => {
      await tx.query('SELECT trellis_rebuild_access_index()');
    });
    expect(await keys(doc)).toEqual([owner.id, top].sort());
    expect(await drift()).toEqual([]);
  });

  it('is rebuilt from scratch to the same rows', async () => {
    const before = (await h().db.query('SELECT element_id, owner_id FROM element_owners ORDER BY 1, 2')).rows;
    await h().db.transaction(async (tx) => {
      await tx.query('SELECT trellis_rebuild_access_index()');
    });
    expect((await h().db.query('SELECT element_id, owner_id FROM element_owners ORDER BY 1, 2')).rows).toEqual(before);
    expect(await drift()).toEqual([]);
  });
});

describeBackends('access index under concurrent graph changes', (h) => {
  it('creations, re-parentings, revocations, deletions and group changes at once: no 500, no drift', async () => {
    const owner = await userWithToken(h(), 'stress-owner@index.dev');
    const member = await userWithToken(h(), 'stress-member@index.dev');
    const relate = (type: string, start: string, end: string) =>
      h().request('POST', '/', { token: owner.token, body: { type, start, end } });
    const group = await createElement(h(), owner.token, { type: 'Group' });
    const folders: string[] = [await createElement(h(), owner.token, { type: 'Folder' })];
    for (let i = 1; i < 12; i++)
      folders.push(await createElement(h(), owner.token, { type: 'Folder' }, folders[Math.floor(i / 2)]));
    const extraOwns: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await relate('OWNS', folders[i]!, folders[11 - i]!);
      extraOwns.push(r.headers.get('location')!.slice(1));
    }
    const ops: Promise<{ what: string; status: number; text: string }>[] = [];
    const op = (what: string, p: Promise<{ status: number; text: string }>) =>
      ops.push(p.then((r) => ({ what, status: r.status, text: r.text })));
    for (let i = 0; i < 20; i++)
      op(
        'child',
        h().request('POST', `/${folders[i % folders.length]}`, {
          token: owner.token,
          body: { type: 'Doc', data: { i } },
        }),
      );
    for (let i = 0; i < 4; i++) op('re-parent', relate('OWNS', folders[i + 4]!, folders[(i * 3 + 1) % 12]!));
    for (const id of extraOwns) op('revoke', h().request('DELETE', `/${id}`, { token: owner.token }));
    op('grant', relate('OWNS', group, folders[0]!));
    op('join', relate('IS_IN_GROUP', member.id, group));
    for (const id of [folders[9]!, folders[10]!]) op('delete', h().request('DELETE', `/${id}`, { token: owner.token }));
    const results = await Promise.all(ops);
    // Deleting a folder may remove the target of a concurrent operation first: 404 is a fair answer then; 500 never.
    for (const r of results)
      expect([r.what, [200, 201, 204, 404].includes(r.status) ? 'ok' : `${r.status} ${r.text}`]).toEqual([
        r.what,
        'ok',
      ]);
    expect(results.filter((r) => r.what === 'child' && r.status === 201).length).toBeGreaterThanOrEqual(14);
    expect((await h().db.query('SELECT * FROM trellis_access_index_drift()')).rows).toEqual([]);
    // The member now reads the whole tree below folders[0] through the group.
    expect((await h().request('GET', `/${folders[1]}`, { token: member.token })).status).toBe(200);
  });
});
