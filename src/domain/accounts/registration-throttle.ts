// Registrations per client address (POST /register): `registrationsPerAddress` attempts in a window of
// `windowInSeconds`, counted before the password is hashed; beyond that 429 with Retry-After until the window ends.
// A registration costs a password hash, the most expensive thing an anonymous client can ask for, so one address
// cannot keep the instance hashing. The counts live in the database (registration_counts), so every instance on one
// PostgreSQL counts together, as the log-in back-off does (throttle.ts); addresses are keyed as there (IPv6 by /64).
//
// The attempts of one address are counted one after the other, and once the database has said an address is over
// its allowance this instance refuses it until the window ends without asking again. Counted at once, a flood of a
// thousand from one address was a thousand statements waiting on one row's lock, each holding a connection of the
// pool, and every other request (a download) waited for a connection meanwhile.
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { Problem } from '../../errors.js';
import type { RegistrationCountStore } from './ports.js';
import { addressKey } from './throttle.js';

type RegistrationThrottleSettings = Settings['register']['throttle'];

export class RegistrationThrottle {
  /** Per address key: the attempts being counted, the last of them (one statement at a time). */
  private readonly counting = new Map<string, Promise<void>>();
  /** Per address key the database found over its allowance: when its window ends (ms since the epoch). */
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    private readonly counts: RegistrationCountStore,
    private readonly settings: RegistrationThrottleSettings,
    private readonly clock: Clock,
  ) {}

  private get windowMs(): number {
    return this.settings.windowInSeconds * 1000;
  }

  /** Counts an attempt from `address` (absent for the CLI, which is not counted); 429 beyond the allowance. */
  async count(address: string | undefined): Promise<void> {
    if (!this.settings.enabled || address === undefined) return;
    const key = addressKey(address);
    const turn = (this.counting.get(key) ?? Promise.resolve()).then(() => this.countNow(key));
    const settled = turn.then(
      () => {},
      () => {},
    );
    this.counting.set(key, settled);
    void settled.then(() => {
      if (this.counting.get(key) === settled) this.counting.delete(key);
    });
    return turn;
  }

  private async countNow(key: string): Promise<void> {
    const now = this.clock.now();
    const until = this.refusedUntil.get(key);
    if (until !== undefined && until > now.getTime()) throw tooMany(until, now);
    this.refusedUntil.delete(key);
    const { registrations, windowStart } = await this.counts.count(key, now, new Date(now.getTime() - this.windowMs));
    if (registrations <= this.settings.registrationsPerAddress) return;
    const end = windowStart.getTime() + this.windowMs;
    this.refusedUntil.set(key, end);
    throw tooMany(end, now);
  }

  /** Background job: deletes the counts of windows that are over. */
  async forgetOld(): Promise<number> {
    const now = this.clock.now();
    for (const [key, until] of this.refusedUntil) if (until <= now.getTime()) this.refusedUntil.delete(key);
    return this.counts.deleteOld(new Date(now.getTime() - this.windowMs));
  }
}

/** The 429 of an address over its allowance, until its window ends at `end`. */
function tooMany(end: number, now: Date): Problem {
  const seconds = Math.max(1, Math.ceil((end - now.getTime()) / 1000));
  return new Problem(
    'too-many-requests',
    `Too many registrations from this address: retry in ${seconds} seconds.`,
    {},
    { 'retry-after': String(seconds) },
  );
}
