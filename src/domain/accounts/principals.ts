// GET /principals: the people and groups a signed-in user can share with, found by an exact identifier or name, or
// named by id (docs/guide.md, "Find the people to share with"). It cannot list accounts: the text must match exactly,
// at most PRINCIPALS_PER_ANSWER come back, no identifier ever does, and each caller has a fixed number of lookups
// per window (a request counts once, whatever it asks).
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { Problem } from '../../errors.js';
import type { Transactions } from '../transactions.js';
import { MAX_IDENTIFIER_CHARACTERS } from './accounts.js';
import type { Authentication } from './authentication.js';
import type { AccountStore } from './ports.js';
import type { Credentials, Principal, PrincipalQuery } from './types.js';

/** The most principals one text finds. */
const PRINCIPALS_PER_ANSWER = 10;
/** The most ids one request may name. */
export const MAX_PRINCIPAL_IDS = 100;

/**
 * Lookups per caller in fixed windows, in this process: a window starts with a caller's first lookup after the last
 * one ended. Kept in memory (a lookup writes nothing), so with several instances each one counts its own.
 */
class LookupWindows {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly allowance: number,
    private readonly windowMs: number,
  ) {}

  /** Counts one lookup of `key` at `now`; the seconds until its window ends when it is over the allowance. */
  count(key: string, now: number): number | null {
    let window = this.windows.get(key);
    if (window === undefined || now >= window.start + this.windowMs) {
      if (this.windows.size >= 10_000) this.forgetEnded(now);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    window.count++;
    if (window.count <= this.allowance) return null;
    return Math.max(1, Math.ceil((window.start + this.windowMs - now) / 1000));
  }

  private forgetEnded(now: number) {
    for (const [key, window] of this.windows) if (now >= window.start + this.windowMs) this.windows.delete(key);
  }
}

/** The text of `?identifier=`, checked: 400 when empty (once trimmed) or longer than an identifier may be. */
export function checkLookupText(text: string): string {
  if (text.trim().length === 0) throw new Problem('bad-content', "'identifier' must not be empty.");
  if (Array.from(text).length > MAX_IDENTIFIER_CHARACTERS)
    throw new Problem('bad-content', `'identifier' is longer than ${MAX_IDENTIFIER_CHARACTERS} characters.`);
  return text;
}

export class Principals {
  private readonly windows: LookupWindows;

  constructor(
    private readonly transactions: Transactions,
    private readonly store: Pick<AccountStore, 'principals'>,
    private readonly authentication: Authentication,
    private readonly settings: Settings,
    private readonly clock: Clock,
  ) {
    const { lookupsPerWindow, windowInSeconds } = settings.register.principalLookup;
    this.windows = new LookupWindows(lookupsPerWindow, windowInSeconds * 1000);
  }

  /**
   * The principals `query` names. `query` is the problem the request's parameters were when the edge found them
   * wrong: the credentials are checked first (401), then it is thrown (400).
   */
  async lookup(credentials: Credentials, query: PrincipalQuery | Problem): Promise<Principal[]> {
    if (credentials.tokenHash === undefined)
      throw new Problem('unauthorized', 'Looking up people and groups needs a signed-in user (a token).');
    const now = this.clock.now();
    const caller = await this.authentication.caller(credentials, now);
    if (query instanceof Problem) throw query;
    const wait = this.windows.count(caller.userId, now.getTime());
    if (wait !== null)
      throw new Problem(
        'too-many-requests',
        `Too many look-ups of people and groups: retry in ${wait} seconds.`,
        {},
        { 'retry-after': String(wait) },
      );
    // With the `name` property as the registration identifier, a User's name is its identifier: never shown.
    const userNames = this.settings.register.uniqueIdentifier !== 'name';
    return this.store.principals(this.transactions.direct, query, PRINCIPALS_PER_ANSWER, userNames);
  }
}
