// What the account capabilities need from the database, in the domain's words. The SQL adapters are in
// storage/account-store.ts; src/services.ts wires them.
import type { ElementId } from '../../values.js';
import type { Tx } from '../transactions.js';
import type { Caller, Credentials, Principal, PrincipalQuery } from './types.js';

interface StoredUser {
  id: ElementId;
  /** Null for an account that cannot log in with a password. */
  passwordHash: string | null;
}

interface NewToken {
  id: ElementId;
  hash: string;
  userId: ElementId;
  state: 'ACTIVE' | 'REVOKED';
  issued: Date;
  expires: Date | null;
}

export interface AccountStore {
  /** The caller the credentials name (an active, unexpired token, or the anonymous user), or null. */
  resolveCaller(tx: Tx, credentials: Credentials, now: Date): Promise<Caller | null>;
  /** The user an identifier names, under the identifier comparison rule. */
  userByIdentifier(tx: Tx, identifier: string): Promise<StoredUser | null>;
  userExists(tx: Tx, id: ElementId): Promise<boolean>;
  /** Fails with the store failure 'duplicate' when the identifier is taken. */
  insertUser(tx: Tx, id: ElementId, identifier: string, passwordHash: string | null): Promise<void>;
  /** Sets the hash if it is still `previous`; false when it changed meanwhile. */
  replacePasswordHash(tx: Tx, id: ElementId, previous: string, passwordHash: string): Promise<boolean>;
  revokeTokensOfUser(tx: Tx, userId: ElementId, now: Date): Promise<number>;
  insertToken(tx: Tx, token: NewToken): Promise<void>;
  /** Deletes a Token element (and with it its token row). */
  deleteToken(tx: Tx, id: ElementId): Promise<void>;
  /** Deletes the Token elements that expired before `before`; how many. */
  deleteExpiredTokens(tx: Tx, before: Date): Promise<number>;
  /**
   * The Users and groups an exact text names (at most `limit`), or those among ids; `userNames` false leaves the
   * names of User nodes out (null).
   */
  principals(tx: Tx, query: PrincipalQuery, limit: number, userNames: boolean): Promise<Principal[]>;
}

interface FailureCounter {
  key: string;
  failures: number;
  lastFailure: Date;
}

/** The counters of failed credentials that the log-in back-off reads (throttle.ts); always outside a transaction. */
export interface CredentialFailureStore {
  counters(keys: string[], since: Date): Promise<FailureCounter[]>;
  record(keys: string[], now: Date, since: Date): Promise<void>;
  clear(key: string): Promise<void>;
  deleteOld(before: Date): Promise<number>;
}

/** The registrations counted per client address and window (registration-throttle.ts). */
export interface RegistrationCountStore {
  /** Counts one attempt of `key`; the window starts again at `now` when the recorded one began before the bound. */
  count(key: string, now: Date, windowStartedBefore: Date): Promise<{ registrations: number; windowStart: Date }>;
  deleteOld(before: Date): Promise<number>;
}
