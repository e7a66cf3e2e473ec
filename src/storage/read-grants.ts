// READ decisions that GET /<id> made, each with the access epoch (migration 016) its statement read and the expiry
// of the token it was made for. While a later statement reads the same epoch, nothing that could take a permission
// away or invalidate a token has committed in between, so the decision still holds (the token's expiry, the one
// change that needs no commit, is checked here against the request's clock). Only "allowed" is kept: a denial can
// turn into a permission by any insert, which does not move the epoch.
//
// One instance per process (services.ts). Several instances on one database stay exact: the epoch is in the
// database and read in the same statement as the element, so a change committed by another instance is seen
// together with the new epoch.

/** How many decisions a process keeps: about 200 bytes each, so about 7 MiB when full. */
export const READ_GRANTS_CAPACITY = 32_768;

export interface ReadGrant {
  /** The access epoch the decision was made under (bigint as text). */
  epoch: string;
  /** When the token expires (ms since 1970, rounded down), null when it does not. */
  expires: number | null;
}

export class ReadGrants {
  /** key (credentials + element id) -> decision; insertion order is eviction order. */
  private readonly entries = new Map<string, ReadGrant>();

  constructor(private readonly capacity = READ_GRANTS_CAPACITY) {}

  /** The decision remembered for these credentials and element, unless the token has expired by `now`. */
  lookup(key: string, now: Date): ReadGrant | undefined {
    const grant = this.entries.get(key);
    if (grant === undefined || grant.expires === null || grant.expires > now.getTime()) return grant;
    this.entries.delete(key);
    return undefined;
  }

  remember(key: string, grant: ReadGrant): void {
    this.entries.delete(key);
    this.entries.set(key, grant);
    // Oldest first: a decision still in use is remembered again the next time the epoch moves.
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
