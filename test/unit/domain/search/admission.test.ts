// The search admission (domain/search/admission.ts): slots per instance, a bounded queue with a bounded wait, a
// limit per user over running and waiting searches, and freed slots going to the user who runs the fewest.
import { describe, expect, it } from 'vitest';
import { SearchAdmission } from '../../../../src/domain/search/admission.js';
import { Problem } from '../../../../src/errors.js';

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Admits `user`, noting in `order` when it got its turn. */
async function admitted(a: SearchAdmission, user: string, order: string[]) {
  const done = await a.admit(user);
  order.push(user);
  return done;
}

const limits = { maxConcurrent: 2, maxPerUser: 3, maxQueued: 4, queueTimeoutMs: 5_000 };

/** The problem a promise rejects with (status, Retry-After). */
async function refusal(p: Promise<unknown>) {
  const error = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Problem);
  const problem = error as Problem;
  return { status: problem.status, retryAfter: problem.headers['retry-after'], detail: problem.detail };
}

describe('search admission', () => {
  it('runs up to maxConcurrent at once and lets the others wait their turn in order', async () => {
    const a = new SearchAdmission(limits);
    const first = await a.admit('u1');
    const second = await a.admit('u2');
    expect(a.load).toEqual({ running: 2, waiting: 0 });
    const order: string[] = [];
    const third = admitted(a, 'u3', order);
    const fourth = admitted(a, 'u4', order);
    await Promise.resolve();
    expect(a.load).toEqual({ running: 2, waiting: 2 });
    first();
    first(); // a second call gives nothing back twice
    (await third)();
    second();
    (await fourth)();
    expect(order).toEqual(['u3', 'u4']);
    expect(a.load).toEqual({ running: 0, waiting: 0 });
  });

  it('refuses a user past maxPerUser running and waiting with 429 and Retry-After, others still get in', async () => {
    const a = new SearchAdmission(limits);
    const running = [await a.admit('u1'), await a.admit('u1')];
    const waiting = a.admit('u1');
    const over = await refusal(a.admit('u1'));
    expect(over.status).toBe(429);
    expect(over.retryAfter).toBe('1');
    expect(over.detail).toMatch(/maxConcurrentPerUser/);
    const other = a.admit('u2');
    for (const done of running) done();
    (await waiting)();
    (await other)();
    // Once its searches ended the user is welcome again.
    (await a.admit('u1'))();
    expect(a.load).toEqual({ running: 0, waiting: 0 });
  });

  it('gives a freed slot to the waiting user who runs the fewest searches, not to the longest queue', async () => {
    const a = new SearchAdmission({ ...limits, maxPerUser: 10 });
    const hog = [await a.admit('hog'), await a.admit('hog')];
    const order: string[] = [];
    const queued = [admitted(a, 'hog', order), admitted(a, 'hog', order), admitted(a, 'other', order)];
    await Promise.resolve();
    hog[0]!();
    await settle();
    // The hog still runs one; the other user runs none: the other user's search goes first although it came last.
    expect(order).toEqual(['other']);
    hog[1]!();
    for (const p of queued) (await p)();
    expect(order).toEqual(['other', 'hog', 'hog']);
  });

  it('refuses with 503 when maxQueued are waiting, and when the turn does not come within queueTimeoutMs', async () => {
    const a = new SearchAdmission({ ...limits, maxConcurrent: 1, maxQueued: 1, queueTimeoutMs: 100 });
    const done = await a.admit('u1');
    const started = Date.now();
    const waiting = refusal(a.admit('u2'));
    const full = await refusal(a.admit('u3'));
    expect(full.status).toBe(503);
    expect(full.retryAfter).toBe('5');
    expect(full.detail).toMatch(/search\.maxQueued/);
    const late = await waiting;
    expect(late.status).toBe(503);
    expect(late.detail).toMatch(/queueTimeoutInSeconds/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    // The one that gave up holds nothing: its user may search again, and the queue is empty.
    expect(a.load).toEqual({ running: 1, waiting: 0 });
    done();
    (await a.admit('u2'))();
  });

  it('leaves the queue when the signal aborts, holding nothing', async () => {
    const a = new SearchAdmission({ ...limits, maxConcurrent: 1, maxPerUser: 1 });
    const done = await a.admit('u1');
    const gone = new AbortController();
    const waiting = a.admit('u2', gone.signal).then(
      () => 'admitted',
      (e: unknown) => (e as Error).message,
    );
    gone.abort(new Error('client gone'));
    expect(await waiting).toBe('client gone');
    expect(a.load).toEqual({ running: 1, waiting: 0 });
    // A client already gone does not queue at all.
    await expect(a.admit('u2', gone.signal)).rejects.toThrow('client gone');
    expect(a.load).toEqual({ running: 1, waiting: 0 });
    done();
    // u2's limit of one was given back when it left.
    (await a.admit('u2'))();
  });

  it('refuses a waiter whose time ran out while the thread was busy, instead of giving it the freed slot', async () => {
    const a = new SearchAdmission({ ...limits, maxConcurrent: 1, queueTimeoutMs: 50 });
    const done = await a.admit('u1');
    const waiting = refusal(a.admit('u2'));
    // A search computing on this thread (the embedded database): no timer fires until it gives the thread back.
    const until = performance.now() + 100;
    while (performance.now() < until);
    done();
    const late = await waiting;
    expect(late.status).toBe(503);
    expect(late.detail).toMatch(/queueTimeoutInSeconds/);
    expect(a.load).toEqual({ running: 0, waiting: 0 });
  });

  it("counts the wait from the request's arrival", async () => {
    const a = new SearchAdmission({ ...limits, maxConcurrent: 1, queueTimeoutMs: 1_000 });
    const done = await a.admit('u1');
    // Arrived longer ago than the queue timeout: refused at once rather than queued.
    const late = await refusal(a.admit('u2', undefined, performance.now() - 1_000));
    expect(late.status).toBe(503);
    expect(late.detail).toMatch(/queueTimeoutInSeconds/);
    // Arrived 900 ms ago: it waits the 100 ms that remain, not the whole second.
    const started = performance.now();
    const rest = await refusal(a.admit('u2', undefined, started - 900));
    expect(rest.status).toBe(503);
    expect(performance.now() - started).toBeLessThan(900);
    expect(a.load).toEqual({ running: 1, waiting: 0 });
    done();
  });
});
