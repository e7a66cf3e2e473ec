// The index lists nodes only, and /related, like /parents, lists the grants on an element whose start the caller
// cannot read (so that they can be revoked).
import { expect, it } from 'vitest';
import { createElement, describeBackends, userWithToken } from '../helpers/harness.js';

describeBackends('index and grants', (h) => {
  it('GET / lists nodes only: relations is always [], counts and links unchanged', async () => {
    const alice = await userWithToken(h(), 'alice@index.dev');
    const owned: string[] = [];
    for (let i = 0; i < 6; i++) owned.push(await createElement(h(), alice.token, { type: 'Doc', data: { i } }));
    const group = await createElement(h(), alice.token, { type: 'Group' });
    expect(
      (
        await h().request('POST', '/', {
          token: alice.token,
          body: { type: 'IS_IN_GROUP', start: alice.id, end: group },
        })
      ).status,
    ).toBe(201);
    // The group is reached over OWNS and IS_IN_GROUP: one member, counted once. alice also owns her token.
    const token = (await h().request('GET', '/token', { token: alice.token })).json.id as string;
    const members = [...owned, group, token].sort();

    const all = await h().request('GET', '/', { token: alice.token });
    expect(all.status).toBe(200);
    expect(all.json.totalNodes).toBe(members.length);
    expect(all.json.nodes.map((n: any) => n.id)).toEqual(members);
    expect(all.json.relations).toEqual([]);
    expect(Object.keys(all.json)).toEqual(['type', 'id', 'totalNodes', 'links', 'nodes', 'relations']);

    const first = await h().request('GET', '/?pageSize=5', { token: alice.token });
    expect(first.json).toMatchObject({
      totalNodes: members.length,
      links: { first: '/?pageSize=5', previous: null, next: '/?page=2&pageSize=5', last: '/?page=2&pageSize=5' },
      nodes: expect.any(Array),
      relations: [],
    });
    expect(first.json.nodes.map((n: any) => n.id)).toEqual(members.slice(0, 5));
    const second = await h().request('GET', '/?page=2&pageSize=5', { token: alice.token });
    expect(second.json.nodes.map((n: any) => n.id)).toEqual(members.slice(5));
    expect(second.json.relations).toEqual([]);

    // The ETag still follows the listed nodes.
    const etag = all.headers.get('etag')!;
    expect((await h().request('GET', '/', { token: alice.token, headers: { 'if-none-match': etag } })).status).toBe(
      304,
    );
    h().clock.advance(1);
    expect((await h().request('PATCH', `/${owned[0]}`, { token: alice.token, body: { changed: true } })).status).toBe(
      204,
    );
    expect((await h().request('GET', '/', { token: alice.token })).headers.get('etag')).not.toBe(etag);

    // The other collections keep their relations.
    const children = await h().request('GET', `/${alice.id}/children`, { token: alice.token });
    expect(children.json.relations.length).toBe(children.json.nodes.length);
    expect(children.json.relations.length).toBeGreaterThan(0);
  });

  it('/related lists and counts a grant whose start the caller cannot read, so that it can be revoked', async () => {
    const alice = await userWithToken(h(), 'alice@related.dev');
    const bob = await userWithToken(h(), 'bob@related.dev');
    const carol = await userWithToken(h(), 'carol@related.dev');
    const doc = await createElement(h(), alice.token, { type: 'Doc' });
    const grant = async (start: string) => {
      const res = await h().request('POST', '/', {
        token: alice.token,
        body: { type: 'HAS_READ_ACCESS', start, end: doc },
      });
      expect(res.status).toBe(201);
      return res.headers.get('location')!.slice(1);
    };
    const toBob = await grant(bob.id);
    const toCarol = await grant(carol.id);
    // alice can read neither bob's nor carol's User node.
    expect((await h().request('GET', `/${bob.id}`, { token: alice.token })).status).toBe(404);

    const related = await h().request('GET', `/${doc}/related`, { token: alice.token });
    expect(related.status).toBe(200);
    // Members: alice (OWNS, CREATED), bob and carol (their grants).
    expect(related.json.totalNodes).toBe(3);
    expect(related.json.nodes.map((n: any) => n.id)).toEqual([alice.id]);
    expect(related.json.relations.map((r: any) => r.id)).toEqual(expect.arrayContaining([toBob, toCarol]));
    expect(related.json.relations.map((r: any) => r.type).sort()).toEqual([
      'CREATED',
      'HAS_READ_ACCESS',
      'HAS_READ_ACCESS',
      'OWNS',
    ]);
    // /parents says the same.
    const parents = await h().request('GET', `/${doc}/parents`, { token: alice.token });
    expect(parents.json.totalNodes).toBe(3);
    expect(parents.json.relations.map((r: any) => r.id)).toEqual(expect.arrayContaining([toBob, toCarol]));

    // carol reads the doc and her own grant, not bob's (she neither owns the end nor is bob).
    const asCarol = await h().request('GET', `/${doc}/related`, { token: carol.token });
    expect(asCarol.status).toBe(200);
    expect(asCarol.json.relations.map((r: any) => r.id)).toContain(toCarol);
    expect(asCarol.json.relations.map((r: any) => r.id)).not.toContain(toBob);

    // Found there, the grant is revoked by alice.
    expect((await h().request('DELETE', `/${toBob}`, { token: alice.token })).status).toBe(204);
    expect((await h().request('GET', `/${doc}`, { token: bob.token })).status).toBe(404);
    const after = await h().request('GET', `/${doc}/related`, { token: alice.token });
    expect(after.json.totalNodes).toBe(2);
    expect(after.json.relations.map((r: any) => r.id)).not.toContain(toBob);
  });
});
