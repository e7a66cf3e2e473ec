// Back-off for failed credential checks (POST /token, POST /change-password): after a number of free failures each
// further failure of an identifier, or from a client address, makes the next attempt wait 1 s, doubling up to a
// maximum; until then every attempt for that identifier or from that address answers 429 with Retry-After, without
// the password being checked (a check would tell a correct guess from a wrong one). Requests with a valid token and
// log-ins outside a back-off are never slowed down. The counters live in the database (credential_failures), so every
// instance on one PostgreSQL sees the same ones: one statement reads them before the check, one records a failure,
// and a success clears the identifier's counter (not the address's: an attacker's own account must not reset it).
import { hash } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { Problem } from '../../errors.js';
import type { CredentialFailureStore } from './ports.js';

type ThrottleSettings = Settings['login']['throttle'];

/** What an outcome needs to know of the check that came before it. */
export interface Attempt {
  identifierKey: string;
  keys: string[];
  /** Whether the identifier had failures, which a success then clears. */
  identifierCounted: boolean;
}

/** The seconds to wait after `failures` failures: none below `free`, then 1 s doubling up to `max`. */
function backoffSeconds(failures: number, free: number, max: number): number {
  return failures < free ? 0 : Math.min(max, 2 ** (failures - free));
}

/**
 * The counter key of a client address: IPv4 as it is (also when mapped into IPv6), IPv6 by its /64 prefix, the
 * smallest block one subscriber is given, so that one subscriber's many addresses count as one.
 */
export function addressKey(ip: string): string {
  const bare = ip.replace(/%.*$/, '').toLowerCase();
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/.exec(bare);
  if (v4) return `a:${v4[1]}`;
  if (!bare.includes(':')) return `a:${bare}`;
  const [head = '', tail] = bare.split('::');
  const groups = (part: string) =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const all = [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
  return `a:${all
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * The counter key of an identifier: hashed (any length fits the key; no identifier stored), in Unicode NFC and
 * without case, so that every spelling that may name the account counts on one key.
 */
const identifierKey = (identifier: string): string =>
  `i:${hash('sha256', identifier.normalize('NFC').toLowerCase(), 'base64url')}`;

export class CredentialThrottle {
  constructor(
    private readonly failures: CredentialFailureStore,
    private readonly settings: ThrottleSettings,
    private readonly clock: Clock,
  ) {}

  private forgottenBefore(now: Date): Date {
    return new Date(now.getTime() - this.settings.forgetFailuresAfterSeconds * 1000);
  }

  /**
   * Before the credentials are checked: 429 with Retry-After while the identifier or the address is backing off.
   * `address` is absent for callers without one (the CLI). Null when the throttle is off.
   */
  async check(identifier: string, address: string | undefined): Promise<Attempt | null> {
    if (!this.settings.enabled) return null;
    const idKey = identifierKey(identifier);
    const keys = address === undefined ? [idKey] : [idKey, addressKey(address)];
    const now = this.clock.now();
    const counters = await this.failures.counters(keys, this.forgottenBefore(now));
    const s = this.settings;
    let until = 0;
    for (const c of counters) {
      const delay =
        c.key === idKey
          ? backoffSeconds(c.failures, s.freeFailuresPerIdentifier, s.maxDelayPerIdentifierInSeconds)
          : backoffSeconds(c.failures, s.freeFailuresPerAddress, s.maxDelayPerAddressInSeconds);
      until = Math.max(until, c.lastFailure.getTime() + delay * 1000);
    }
    if (until > now.getTime()) {
      const seconds = Math.max(1, Math.ceil((until - now.getTime()) / 1000));
      throw new Problem(
        'too-many-requests',
        `Too many failed attempts: retry in ${seconds} seconds.`,
        {},
        { 'retry-after': String(seconds) },
      );
    }
    return { identifierKey: idKey, keys, identifierCounted: counters.some((c) => c.key === idKey) };
  }

  async failed(attempt: Attempt | null): Promise<void> {
    if (attempt === null) return;
    const now = this.clock.now();
    await this.failures.record(attempt.keys, now, this.forgottenBefore(now));
  }

  async succeeded(attempt: Attempt | null): Promise<void> {
    if (attempt?.identifierCounted) await this.failures.clear(attempt.identifierKey);
  }

  /** Background job: deletes the counters that are forgotten anyway. */
  async forgetOld(): Promise<number> {
    return this.failures.deleteOld(this.forgottenBefore(this.clock.now()));
  }
}
