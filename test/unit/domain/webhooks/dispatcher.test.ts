// The step after one delivery attempt: delivered, retried on the schedule (or after Retry-After), or given up.
import { describe, expect, it } from 'vitest';
import { nextStep } from '../../../../src/domain/webhooks/dispatcher.js';
import type { SendOutcome } from '../../../../src/domain/webhooks/ports.js';

const now = new Date();
const outcome = (fields: Partial<SendOutcome>): SendOutcome => ({
  status: null,
  error: null,
  response: null,
  retryAfterSeconds: null,
  durationMs: 1,
  ...fields,
});
const delay = (due: Date) => (due.getTime() - now.getTime()) / 1000;

describe('nextStep', () => {
  it('is delivered on any 2xx', () => {
    for (const status of [200, 202, 204, 299])
      expect(nextStep(outcome({ status }), 3, now, [5])).toEqual({ attempts: 0, due: now, disabledReason: null });
  });

  it('retries after the schedule’s delay for the attempt, within a tenth either way', () => {
    for (let i = 0; i < 50; i++) {
      const first = nextStep(outcome({ status: 500 }), 1, now, [10, 300]);
      expect(first.attempts).toBe(1);
      expect(delay(first.due)).toBeGreaterThanOrEqual(9);
      expect(delay(first.due)).toBeLessThanOrEqual(11);
      const second = nextStep(outcome({ error: 'timeout' }), 2, now, [10, 300]);
      expect(delay(second.due)).toBeGreaterThanOrEqual(270);
      expect(delay(second.due)).toBeLessThanOrEqual(330);
    }
  });

  it('waits at least Retry-After', () => {
    const step = nextStep(outcome({ status: 429, retryAfterSeconds: 120 }), 1, now, [5]);
    expect(delay(step.due)).toBe(120);
    expect(step.disabledReason).toBeNull();
  });

  it('gives up on a 410 at once and after the last retry, saying why', () => {
    expect(nextStep(outcome({ status: 410 }), 1, now, [5, 10]).disabledReason).toBe('The receiver answered 410 Gone.');
    expect(nextStep(outcome({ status: 500 }), 3, now, [5, 10]).disabledReason).toBe(
      'The retry schedule is exhausted: 3 attempts failed (the last: 500).',
    );
    expect(nextStep(outcome({ error: 'connection-refused' }), 1, now, []).disabledReason).toMatch(
      /the last: connection-refused/,
    );
  });
});
