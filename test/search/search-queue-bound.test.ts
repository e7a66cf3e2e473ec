// The queue bound holds while searches run into their budget (search.queueTimeoutInSeconds, .statementTimeoutInSeconds):
// of several searches sent at once, each of which would run its whole budget, every one is answered, with the 400
// of the budget or the 503 of the queue, before the queue bound plus one budget. On the embedded database those
// searches compute on the process's thread, so a wait must end even though no timer can fire meanwhile; on a server
// they are held by a lock on `elements`. The clients run on a thread of their own: the service runs in this test's
// process, and clients on its thread would send each request only when the search before had let go of it.
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { backendsUnderTest, createElement, type Harness, startHarness, userWithToken } from '../helpers/harness.js';
import { lockElements } from '../helpers/locks.js';

const QUEUE_S = 1;
const BUDGET_S = 1;
/**
 * The contract's bound, and a margin for what a search does outside its budgeted statements (parsing, planning a
 * thousand clauses) on a busy machine. One after the other, the eight would take eight budgets.
 */
const BOUND_MS = (QUEUE_S + BUDGET_S) * 1000 + 1500;
const CLIENTS = 8;

// A thousand infix wildcards over 30 values of 2,000 characters per element: seconds of work on the embedded
// database (search-budget.test.ts).
const longValues = (i: number) =>
  Object.fromEntries(Array.from({ length: 30 }, (_, k) => [`code${k}`, `${'ab'.repeat(995)}${i}-${k}`]));
const expensive = { bool: { should: Array.from({ length: 1000 }, (_, i) => ({ wildcard: { code0: `*zq${i}*` } })) } };

interface Answer {
  status: number;
  retryAfter: string | null;
  detail: string;
  took: number;
}

/** Sends `count` copies of one request at once from a worker thread; each answer with the time it took. */
function sendAtOnce(url: string, init: RequestInit, count: number): Promise<Answer[]> {
  const code = `
    const { parentPort, workerData: { url, init, count } } = require('node:worker_threads');
    Promise.all(Array.from({ length: count }, async () => {
      const started = Date.now();
      const res = await fetch(url, init);
      const body = await res.json();
      return { status: res.status, retryAfter: res.headers.get('retry-after'), detail: body.detail, took: Date.now() - started };
    })).then((answers) => parentPort.postMessage(answers));`;
  const worker = new Worker(code, { eval: true, workerData: { url, init, count } });
  return new Promise((resolve, reject) => {
    worker.once('message', (answers: Answer[]) => {
      resolve(answers);
      void worker.terminate();
    });
    worker.once('error', reject);
  });
}

for (const backend of backendsUnderTest())
  describe(`search queue bound [${backend}]`, () => {
    let h: Harness & { stop(): Promise<void> };
    let token: string;

    beforeAll(async () => {
      h = await startHarness(backend, {
        settings: {
          search: {
            maxConcurrent: 1,
            maxConcurrentPerUser: CLIENTS,
            queueTimeoutInSeconds: QUEUE_S,
            statementTimeoutInSeconds: BUDGET_S,
          },
        },
      });
      token = (await userWithToken(h, 'alice@queue.dev')).token;
      for (let i = 0; i < (backend === 'pglite' ? 40 : 1); i++)
        await createElement(h, token, { type: 'Thing', data: { name: `queued ${i}`, ...longValues(i) } });
    });
    afterAll(() => h.stop());

    it('answers every search with 400 or 503 before the queue bound plus one budget', async () => {
      if (backend === 'postgres') onTestFinished(await lockElements(h.db));
      const answers = await sendAtOnce(
        `${h.url}/search`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ steps: [{ type: 'searchengine-query-dsl-mixin', query: expensive }] }),
        },
        CLIENTS,
      );
      const statuses = answers.map(({ status }) => status);
      expect(statuses, JSON.stringify(answers.map(({ took }) => took))).toContain(503);
      for (const { status, retryAfter, detail, took } of answers) {
        expect(took, `answered ${status} after ${took} ms: ${JSON.stringify(answers)}`).toBeLessThan(BOUND_MS);
        if (status === 503) {
          expect(retryAfter).toBe('5');
          expect(detail).toMatch(/queueTimeoutInSeconds/);
        } else {
          expect(status).toBe(400);
          expect(detail).toMatch(/budget of 1 s/);
        }
      }
      expect(h.services.search.load).toEqual({ running: 0, waiting: 0 });
    });
  });
