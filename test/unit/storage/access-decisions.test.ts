// The process's store of access decisions (storage/access-decisions.ts): bounded, oldest out first, and a decision
// made for a token is not used at or after the token's expiry.
import { expect, it } from 'vitest';
import { AccessDecisions, decisionKey, withDecision } from '../../../src/storage/access-decisions.js';

const now = new Date('2026-11-24T12:00:00Z');

it('keeps at most its capacity, evicting the decision remembered first', () => {
  const decisions = new AccessDecisions({ capacity: 2 });
  decisions.remember('a', { epoch: '1', expires: null });
  decisions.remember('b', { epoch: '1', expires: null });
  decisions.remember('a', { epoch: '2', expires: null }); // remembered again: now the newest
  decisions.remember('c', { epoch: '2', expires: null });
  expect(decisions.size).toBe(2);
  expect(decisions.lookup('b', now)).toBeUndefined();
  expect(decisions.lookup('a', now)).toEqual({ epoch: '2', expires: null });
  expect(decisions.lookup('c', now)?.epoch).toBe('2');
});

it('drops a decision once its token has expired', () => {
  const decisions = new AccessDecisions();
  decisions.remember('t', { epoch: '1', expires: now.getTime() + 1 });
  expect(decisions.lookup('t', now)?.epoch).toBe('1');
  expect(decisions.lookup('t', new Date(now.getTime() + 1))).toBeUndefined();
  expect(decisions.size).toBe(0);
});

it('tells credentials, permissions and elements apart in its keys', () => {
  const keys = new Set([
    decisionKey({ tokenHash: 'h1' }, 'READ', 'x'),
    decisionKey({ tokenHash: 'h2' }, 'READ', 'x'),
    decisionKey({ tokenHash: 'h1' }, 'UPDATE', 'x'),
    decisionKey({ tokenHash: 'h1' }, 'READ', 'y'),
    decisionKey({ anonymousUserId: 'h1' }, 'READ', 'x'),
  ]);
  expect(keys.size).toBe(5);
});

it('decides when nothing is remembered or the epoch has moved, and remembers only what was allowed', async () => {
  const decisions = new AccessDecisions();
  const calls: string[] = [];
  const run = (allowed: boolean, epochNow: string) =>
    withDecision(
      decisions,
      'k',
      now,
      async (epoch) => {
        calls.push(`known ${epoch}`);
        return epoch === epochNow ? 'remembered' : undefined;
      },
      async () => {
        calls.push('decide');
        return {
          result: allowed ? 'allowed' : 'denied',
          decision: allowed ? { epoch: epochNow, expires: null } : null,
        };
      },
    );
  expect(await run(false, '1')).toBe('denied');
  expect(await run(true, '1')).toBe('allowed');
  expect(await run(true, '1')).toBe('remembered');
  expect(await run(false, '2')).toBe('denied');
  expect(decisions.size).toBe(0);
  expect(calls).toEqual(['decide', 'decide', 'known 1', 'known 1', 'decide']);
});
