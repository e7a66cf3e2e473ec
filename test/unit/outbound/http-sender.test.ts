// Retry-After as a webhook receiver may send it: seconds or an HTTP date.
import { describe, expect, it } from 'vitest';
import { retryAfterSeconds } from '../../../src/outbound/http-sender.js';

describe('retryAfterSeconds', () => {
  const now = Date.parse('2026-12-02T10:00:00Z');
  it('reads delta-seconds and HTTP dates, and nothing else', () => {
    expect(retryAfterSeconds('120', now)).toBe(120);
    expect(retryAfterSeconds(' 7 ', now)).toBe(7);
    expect(retryAfterSeconds('Wed, 02 Dec 2026 10:01:30 GMT', now)).toBe(90);
    expect(retryAfterSeconds('Wed, 02 Dec 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds(undefined, now)).toBeNull();
    expect(retryAfterSeconds('soon', now)).toBeNull();
    expect(retryAfterSeconds('-5', now)).toBeNull();
  });
});
