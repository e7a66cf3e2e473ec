// GET /events: one event per committed change, in commit order, to the subscribers who may read the element, with
// the element as GET /<id> shows it; problems before the stream as on every other endpoint.
import Value from 'typebox/value';
import { afterEach, expect, it } from 'vitest';
import { ElementEventData, FeedEventData } from '../../src/http/schemas/events.js';
import { type Follower, follow } from '../helpers/events.js';
import { attachFile, createElement, describeBackends, userWithToken } from '../helpers/harness.js';

describeBackends('change feed', (h) => {
  const open: Follower[] = [];
  const watch = (path: string, token?: string, lastEventId?: string) => {
    const f = follow(h().url, path, token, lastEventId);
    open.push(f);
    return f;
  };
  afterEach(() => {
    for (const f of open.splice(0)) f.close();
  });

  it('streams creation, change, file and deletion of an element, each with what GET /<id> answered', async () => {
    const alice = await userWithToken(h(), 'alice@feed.dev');
    const feed = watch('/events', alice.token);
    await feed.until((r) => r.some((m) => m.event === 'ready'));
    expect(feed.received[0]!.data.cursor).toBe(feed.received[0]!.id);

    // Each change is awaited before the next: an event is delivered only while its element is readable (access is
    // decided at delivery), so a deletion that overtook a slow delivery would rightly drop the events before it. A
    // long write transaction of another test on the same server can hold delivery back for seconds.
    const arrived = (event: string) => feed.until((r) => r.some((m) => m.event === event && m.data.id === id), 20_000);
    const id = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'one' } });
    const afterCreate = await h().request('GET', `/${id}`, { token: alice.token });
    await arrived('created');
    h().clock.advance(1);
    expect((await h().request('PATCH', `/${id}`, { token: alice.token, body: { name: 'two' } })).status).toBe(204);
    const afterPatch = await h().request('GET', `/${id}`, { token: alice.token });
    await arrived('changed');
    await attachFile(h(), alice.token, id, Buffer.from('hello'), 'hello.txt');
    const afterFile = await h().request('GET', `/${id}`, { token: alice.token });
    await arrived('file-created');
    expect((await h().request('DELETE', `/${id}/file`, { token: alice.token })).status).toBe(204);
    await arrived('file-removed');
    expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);

    await arrived('deleted');
    const mine = feed.changes().filter((m) => m.data.id === id);
    expect(mine.map((m) => m.event)).toEqual(['created', 'changed', 'file-created', 'file-removed', 'deleted']);
    expect(mine[0]!.data).toEqual({
      change: 'created',
      id,
      kind: 'node',
      type: 'Doc',
      etag: afterCreate.headers.get('etag'),
      element: afterCreate.json,
    });
    expect(mine[1]!.data.element).toEqual(afterPatch.json);
    expect(mine[1]!.data.etag).toBe(afterPatch.headers.get('etag'));
    expect(mine[2]!.data.element).toEqual(afterFile.json);
    expect(mine[2]!.data.etag).toBe(afterFile.headers.get('etag'));
    expect(mine[4]!.data).toEqual({ change: 'deleted', id, kind: 'node', type: 'Doc', etag: null });
    // Each message's data is what the OpenAPI document describes.
    for (const m of feed.changes()) expect(Value.Check(ElementEventData, m.data)).toBe(true);
    for (const m of feed.received.filter((r) => ['ready', 'access'].includes(r.event)))
      expect(Value.Check(FeedEventData, m.data)).toBe(true);
    const document = (await h().request('GET', '/openapi.json')).json;
    expect(document.paths['/events'].get.operationId).toBe('followEvents');
    expect(Object.keys(document.paths['/events'].get.responses['200'].content)).toEqual(['text/event-stream']);
    expect(document.components.schemas.ElementEvent.properties.change).toBeDefined();
    // Cursors grow strictly, and every element event carries one.
    const ids = feed.changes().map((m) => m.id);
    expect(ids.every((c) => /^\d+-\d+$/.test(c))).toBe(true);
    const order = ids.map((c) => c.split('-').map(BigInt) as [bigint, bigint]);
    for (let i = 1; i < order.length; i++) {
      const [a, b] = [order[i - 1]!, order[i]!];
      expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])).toBe(true);
    }
  });

  it('sends nothing of another user’s elements, nor of a rolled-back transaction', async () => {
    const alice = await userWithToken(h(), 'alice@private.dev');
    const bob = await userWithToken(h(), 'bob@private.dev');
    const feed = watch('/events', bob.token);
    await feed.until((r) => r.length > 0);
    await createElement(h(), alice.token, { type: 'Secret', data: { name: 'hidden' } });
    await h()
      .db.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO elements (id, type, data, created, updated) VALUES (gen_random_uuid(), 'Doc', '{"rolled":"back"}', now(), now())`,
        );
        throw new Error('roll back');
      })
      .catch(() => {});
    const mark = await createElement(h(), bob.token, { type: 'Mark' });
    await feed.until((r) => r.some((m) => m.data.id === mark));
    const seen = feed.changes();
    expect(seen.some((m) => m.data.type === 'Secret')).toBe(false);
    expect(seen.some((m) => m.data.element?.data?.rolled)).toBe(false);
    // bob's own creation: the node, its OWNS and its CREATED.
    expect(seen.map((m) => m.data.type).sort()).toEqual(['CREATED', 'Mark', 'OWNS']);
  });

  it('answers problems before any stream: 401, 400, and 404 alike for a missing and an unreadable element', async () => {
    const alice = await userWithToken(h(), 'alice@problems.dev');
    const bob = await userWithToken(h(), 'bob@problems.dev');
    const doc = await createElement(h(), alice.token, { type: 'Doc' });
    const get = (path: string, token?: string, headers: Record<string, string> = {}) =>
      h().request('GET', path, { ...(token ? { token } : {}), headers });

    expect((await get('/events')).status).toBe(401);
    expect((await get('/events', 'secret-token:nope')).status).toBe(401);
    const badId = await get('/events?id=nope', bob.token);
    expect([badId.status, badId.json.type]).toEqual([400, `${h().url}/error/400/bad-content`]);
    expect((await get(`/events?id=${doc}&parent=${doc}`, bob.token)).status).toBe(400);
    expect((await get('/events', bob.token, { 'last-event-id': 'x' })).status).toBe(400);
    // Bad credentials come first.
    expect((await get('/events?id=nope', 'secret-token:nope')).status).toBe(401);

    const unreadable = await get(`/events?id=${doc}`, bob.token);
    const missing = await get(`/events?id=${crypto.randomUUID()}`, bob.token);
    expect(unreadable.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(unreadable.text).toBe(missing.text);
    const head = await h().request('HEAD', `/events?id=${doc}`, { token: alice.token });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect((await h().request('HEAD', `/events?id=${doc}`, { token: bob.token })).status).toBe(404);
  });

  it('watches ids and a parent: only those elements, the children and the relations among them', async () => {
    const alice = await userWithToken(h(), 'alice@scope.dev');
    const folder = await createElement(h(), alice.token, { type: 'Folder' });
    const other = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'elsewhere' } });
    const byId = watch(`/events?id=${other}`, alice.token);
    const byParent = watch(`/events?parent=${folder}`, alice.token);
    await byId.until((r) => r.length > 0);
    await byParent.until((r) => r.length > 0);

    const a = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'a' } }, folder);
    const b = await createElement(h(), alice.token, { type: 'Doc', data: { name: 'b' } }, folder);
    const link = await createElement(h(), alice.token, { type: 'LINKS', start: a, end: b });
    expect((await h().request('PATCH', `/${other}`, { token: alice.token, body: { n: 1 } })).status).toBe(204);
    // Delivered before the deletion, which would otherwise rightly drop them (access is decided at delivery).
    await byParent.until((r) => r.some((m) => m.event === 'created' && m.data.id === link), 20_000);
    expect((await h().request('DELETE', `/${a}`, { token: alice.token })).status).toBe(204);

    await byParent.until((r) => r.some((m) => m.event === 'deleted' && m.data.id === a));
    await byId.until((r) => r.some((m) => m.event === 'changed'));
    const parentSeen = byParent.changes();
    expect(parentSeen.some((m) => m.data.id === other)).toBe(false);
    for (const id of [a, b, link]) expect(parentSeen.some((m) => m.event === 'created' && m.data.id === id)).toBe(true);
    // The OWNS from the folder to each child is part of the folder's children.
    expect(parentSeen.filter((m) => m.event === 'created' && m.data.type === 'OWNS').length).toBe(2);
    expect(parentSeen.some((m) => m.event === 'deleted' && m.data.id === link)).toBe(true);
    expect(byId.changes().map((m) => [m.event, m.data.id])).toEqual([['changed', other]]);
  });

  it('resumes from Last-Event-ID with every missed event exactly once, and resets past the retention window', async () => {
    const alice = await userWithToken(h(), 'alice@resume.dev');
    const first = watch('/events', alice.token);
    await first.until((r) => r.length > 0);
    const one = await createElement(h(), alice.token, { type: 'Doc', data: { n: 1 } });
    await first.until((r) => r.some((m) => m.data.id === one));
    const cursor = first.lastEventId;
    first.close();

    const missed: string[] = [];
    for (let i = 2; i <= 4; i++) missed.push(await createElement(h(), alice.token, { type: 'Doc', data: { n: i } }));
    const again = watch('/events', alice.token, cursor);
    await again.until((r) => missed.every((id) => r.some((m) => m.data.id === id)));
    const docs = again.changes().filter((m) => m.data.type === 'Doc');
    expect(docs.map((m) => m.data.id)).toEqual(missed);
    expect(again.received.filter((m) => m.data.id === one)).toEqual([]);
    const tail = await createElement(h(), alice.token, { type: 'Doc', data: { n: 5 } });
    await again.until((r) => r.some((m) => m.data.id === tail));
    expect(
      again
        .changes()
        .filter((m) => m.data.type === 'Doc')
        .map((m) => m.data.id),
    ).toEqual([...missed, tail]);

    // Everything older than the window is pruned; the old cursor then gets one reset and the stream goes on.
    h().clock.advance(h().config.settings.events.retentionInSeconds + 3600);
    expect(await h().services.events.prune()).toBeGreaterThan(0);
    // A day later the first token has expired.
    const token = await h().request('POST', '/token', {
      body: { type: 'Token', uniqueUserIdentifier: alice.identifier, password: alice.password },
    });
    const late = watch('/events', token.json.token, cursor);
    await late.until((r) => r.some((m) => m.event === 'reset'));
    expect(late.received.filter((m) => m.event === 'reset')).toHaveLength(1);
    const after = await createElement(h(), token.json.token, { type: 'Doc', data: { n: 6 } });
    await late.until((r) => r.some((m) => m.data.id === after));
    expect(late.changes().some((m) => missed.includes(m.data.id))).toBe(false);
  });

  it('ends the stream once the token is revoked (checked every second)', async () => {
    const alice = await userWithToken(h(), 'alice@revoke.dev');
    const feed = watch('/events', alice.token);
    await feed.until((r) => r.length > 0);
    expect((await h().request('DELETE', '/token', { token: alice.token })).status).toBe(204);
    const revoked = Date.now();
    // The client reconnects by itself and is then refused with 401: that is the stream ending for good.
    // The check runs every second: five of them catch a stream that is never ended, whatever the machine's load.
    await feed.until(() => feed.failure !== null, 10_000);
    expect(Date.now() - revoked).toBeLessThan(5_000);
    expect(feed.failure!.status).toBe(401);
  });
});
