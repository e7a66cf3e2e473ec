// How many searches run at once (search.maxConcurrent, .maxConcurrentPerUser, .maxQueued, .queueTimeoutInSeconds):
// over HTTP, a user past its limit gets 429 with Retry-After while others still search, a full queue and a turn that
// does not come in time get 503, and nothing of a refused search is left behind. On a server the searches are held
// by a lock on `elements` taken by another transaction; the embedded database runs one statement at a time, so there
// the many searches of several users at once all pass through its one slot.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  backendsUnderTest,
  createElement,
  type Harness,
  startHarness,
  type TestResponse,
  userWithToken,
} from '../helpers/harness.js';
import { lockElements } from '../helpers/locks.js';

const body = (word: string) => ({
  steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: word } } }],
});

/** Resolves once the instance has `running` searches running and `waiting` waiting. */
async function untilLoad(h: Harness, running: number, waiting: number) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const load = h.services.search.load;
    if (load.running === running && load.waiting === waiting) return;
    if (Date.now() > deadline) throw new Error(`load ${JSON.stringify(load)}, expected ${running}/${waiting}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function expectRefused(res: TestResponse, status: 429 | 503, slug: string, retryAfter: string, detail: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get('retry-after')).toBe(retryAfter);
  expect(res.json.type).toMatch(new RegExp(`/error/${status}/${slug}$`));
  expect(res.json.detail).toMatch(detail);
}

describe.skipIf(!backendsUnderTest().includes('postgres'))('search admission [postgres]', () => {
  let h: Harness & { stop(): Promise<void> };
  let alice: string;
  let bob: string;
  let carol: string;
  const search = (token: string) => h.request('POST', '/search', { token, body: body('admitted') });

  beforeAll(async () => {
    h = await startHarness('postgres', {
      settings: { search: { maxConcurrent: 2, maxConcurrentPerUser: 2, maxQueued: 1, queueTimeoutInSeconds: 60 } },
    });
    [alice, bob, carol] = await Promise.all(
      ['alice', 'bob', 'carol'].map(async (name) => (await userWithToken(h, `${name}@admission.dev`)).token),
    );
    for (const token of [alice, bob, carol])
      await createElement(h, token, { type: 'Thing', data: { name: 'admitted' } });
  });
  afterAll(() => h.stop());

  it('refuses a user past its limit with 429 at once, while another user still gets a turn', async () => {
    const release = await lockElements(h.db);
    onTestFinished(release);
    const held = [search(alice), search(alice)];
    await untilLoad(h, 2, 0);
    const started = Date.now();
    expectRefused(await search(alice), 429, 'too-many-requests', '1', /maxConcurrentPerUser/);
    expect(Date.now() - started).toBeLessThan(5_000);
    // Bob waits for a slot (the queue holds one) instead of being refused.
    const bobs = search(bob);
    await untilLoad(h, 2, 1);
    await release();
    for (const res of [...(await Promise.all(held)), await bobs]) {
      expect(res.status).toBe(200);
      expect(res.json.results).toHaveLength(1);
    }
    await untilLoad(h, 0, 0);
  });

  it('refuses with 503 and Retry-After when the queue is full; a search that waited runs after', async () => {
    const release = await lockElements(h.db);
    onTestFinished(release);
    const held = [search(alice), search(bob)];
    await untilLoad(h, 2, 0);
    const waiting = search(carol);
    await untilLoad(h, 2, 1);
    expectRefused(await search(carol), 503, 'service-unavailable', '5', /search\.maxQueued/);
    await release();
    for (const res of [...(await Promise.all(held)), await waiting]) expect(res.status).toBe(200);
    await untilLoad(h, 0, 0);
  });
});

describe.skipIf(!backendsUnderTest().includes('postgres'))('search admission: a client that leaves [postgres]', () => {
  let h: Harness & { stop(): Promise<void> };
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    h = await startHarness('postgres', { settings: { search: { maxConcurrent: 1, queueTimeoutInSeconds: 60 } } });
    [alice, bob] = await Promise.all(
      ['alice', 'bob'].map(async (name) => (await userWithToken(h, `${name}@admission.dev`)).token),
    );
  });
  afterAll(() => h.stop());

  it('gives its place in the queue back when its connection closes', async () => {
    const release = await lockElements(h.db);
    onTestFinished(release);
    const held = h.request('POST', '/search', { token: alice, body: body('admitted') });
    await untilLoad(h, 1, 0);
    const gone = new AbortController();
    const leaving = fetch(`${h.url}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob}`, 'content-type': 'application/json' },
      body: JSON.stringify(body('admitted')),
      signal: gone.signal,
    }).catch((error: unknown) => error);
    await untilLoad(h, 1, 1);
    gone.abort();
    expect(await leaving).toBeInstanceOf(Error);
    // Long before the queue's 60 s: the waiting search left when its client did.
    await untilLoad(h, 1, 0);
    await release();
    expect((await held).status).toBe(200);
    await untilLoad(h, 0, 0);
  });
});

describe.skipIf(!backendsUnderTest().includes('postgres'))('search admission: the queue timeout [postgres]', () => {
  let h: Harness & { stop(): Promise<void> };
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    h = await startHarness('postgres', {
      settings: { search: { maxConcurrent: 1, queueTimeoutInSeconds: 0.3 } },
    });
    [alice, bob] = await Promise.all(
      ['alice', 'bob'].map(async (name) => (await userWithToken(h, `${name}@admission.dev`)).token),
    );
    await createElement(h, alice, { type: 'Thing', data: { name: 'admitted' } });
  });
  afterAll(() => h.stop());

  it('answers 503 when no slot came free in time, and the next search runs', async () => {
    const release = await lockElements(h.db);
    onTestFinished(release);
    const held = h.request('POST', '/search', { token: alice, body: body('admitted') });
    await untilLoad(h, 1, 0);
    const started = Date.now();
    const late = await h.request('POST', '/search', { token: bob, body: body('admitted') });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expectRefused(late, 503, 'service-unavailable', '5', /queueTimeoutInSeconds/);
    await untilLoad(h, 1, 0);
    await release();
    expect((await held).status).toBe(200);
    const again = await h.request('POST', '/search', { token: bob, body: body('admitted') });
    expect(again.status).toBe(200);
    expect(again.json.results).toHaveLength(0);
  });
});

describe.skipIf(!backendsUnderTest().includes('pglite'))('search admission [pglite]', () => {
  let h: Harness & { stop(): Promise<void> };
  const tokens: string[] = [];

  beforeAll(async () => {
    h = await startHarness('pglite');
    for (const name of ['alice', 'bob', 'carol']) {
      const { token } = await userWithToken(h, `${name}@admission.dev`);
      tokens.push(token);
      await createElement(h, token, { type: 'Thing', data: { name: `admitted ${name}` } });
    }
  });
  afterAll(() => h.stop());

  it('runs one search at a time and answers every one of several users searching at once', async () => {
    expect(h.services.search.limits.maxConcurrent).toBe(1);
    // Each user sends its limit of four at once: all are admitted in turn, none is refused.
    const answers = await Promise.all(
      tokens.flatMap((token) =>
        Array.from({ length: 4 }, () => h.request('POST', '/search', { token, body: body('admitted') })),
      ),
    );
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.json.results).toHaveLength(1);
    }
    expect(h.services.search.load).toEqual({ running: 0, waiting: 0 });
  });
});
