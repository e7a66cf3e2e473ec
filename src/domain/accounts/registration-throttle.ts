// Registrations per client address (POST /register): `registrationsPerAddress` attempts in a window of
// `windowInSeconds`, counted before the password is hashed; beyond that 429 with Retry-After until the window ends.
// A registration costs a password hash, the most expensive thing an anonymous client can ask for, so one address
// cannot keep the instance hashing. The counts live in the database (registration_counts), so every instance on one
// PostgreSQL counts together, as the log-in back-off does (throttle.ts); addresses are keyed as there (IPv6 by /64).
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { Problem } from '../../errors.js';
import type { RegistrationCountStore } from './ports.js';
import { addressKey } from './throttle.js';

type RegistrationThrottleSettings = Settings['register']['throttle'];

export class RegistrationThrottle {
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
    const now = this.clock.now();
    const { registrations, windowStart } = await this.counts.count(
      addressKey(address),
      now,
      new Date(now.getTime() - this.windowMs),
    );
    if (registrations <= this.settings.registrationsPerAddress) return;
    const seconds = Math.max(1, Math.ceil((windowStart.getTime() + this.windowMs - now.getTime()) / 1000));
    throw new Problem(
      'too-many-requests',
      `Too many registrations from this address: retry in ${seconds} seconds.`,
      {},
      { 'retry-after': String(seconds) },
    );
  }

  /** Background job: deletes the counts of windows that are over. */
  async forgetOld(): Promise<number> {
    return this.counts.deleteOld(new Date(this.clock.now().getTime() - this.windowMs));
  }
}
