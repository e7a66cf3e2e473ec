// Access decisions this process made (READ for GET /<id>, UPDATE for PATCH /<id>), each with the access epoch
// (migration 016) its statement read and the expiry of the token it was made for. While a later statement reads the
// same epoch, nothing that could take a permission away or invalidate a token has committed in between, so the
// decision still holds (the token's expiry, the one change that needs no commit, is checked here against the
// request's clock). Only "allowed" is kept: a denial can turn into a permission by any insert, which does not move
// the epoch.
//
// One instance per process (services.ts). Several instances on one database stay exact: the epoch is in the
// database and read in the same statement as the element, so a change committed by another instance is seen
// together with the new epoch.
import type { Permission } from './queries/access.js';
import type { Credentials } from './queries/accounts.js';

/** How many decisions a process keeps: about 200 bytes each, so about 7 MiB when full. */
export const ACCESS_DECISIONS_CAPACITY = 32_768;

export interface AccessDecision {
  /** The access epoch the decision was made under (bigint as text). */
  epoch: string;
  /** When the token expires (ms since 1970, rounded down), null when it does not. */
  expires: number | null;
}

/** The key of a decision: who asked (the token's hash, or the anonymous user), for which permission, on what. */
export const decisionKey = (credentials: Credentials, permission: Permission, id: string): string =>
  `${credentials.tokenHash ?? `anonymous ${credentials.anonymousUserId}`} ${permission} ${id}`;

export class AccessDecisions {
  /** key -> decision; insertion order is eviction order. */
  private readonly entries = new Map<string, AccessDecision>();

  constructor(private readonly capacity = ACCESS_DECISIONS_CAPACITY) {}

  /** The decision remembered under `key`, unless its token has expired by `now`. */
  lookup(key: string, now: Date): AccessDecision | undefined {
    const decision = this.entries.get(key);
    if (decision === undefined || decision.expires === null || decision.expires > now.getTime()) return decision;
    this.entries.delete(key);
    return undefined;
  }

  remember(key: string, decision: AccessDecision): void {
    this.entries.delete(key);
    this.entries.set(key, decision);
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

/**
 * A statement that needs a permission, with the decision remembered when it can be. When a decision is remembered
 * under `key`, `known(epoch)` runs the statement without deciding, and yields undefined when the epoch it reads is
 * not `epoch` any more (nothing may have been changed then). Otherwise, or then, `decide()` runs the full statement;
 * the decision it returns (null when denied) is remembered.
 */
export async function withDecision<T>(
  decisions: AccessDecisions | undefined,
  key: string,
  now: Date,
  known: (epoch: string) => Promise<T | undefined>,
  decide: () => Promise<{ result: T; decision: AccessDecision | null }>,
): Promise<T> {
  const remembered = decisions?.lookup(key, now);
  if (remembered !== undefined) {
    const result = await known(remembered.epoch);
    if (result !== undefined) return result;
    decisions!.forget(key);
  }
  const { result, decision } = await decide();
  if (decision !== null) decisions?.remember(key, decision);
  return result;
}

/** SQL: the current access epoch as text, for statements that remember or rely on a decision. */
export const EPOCH_SQL = '(SELECT a.epoch::text FROM access_epoch a)';

/** SQL: a caller row's token expiry in ms since 1970, rounded down (AccessDecision.expires). */
export const expiresMsSql = (caller: string) => `floor(extract(epoch FROM ${caller}.expires) * 1000)::float8`;
