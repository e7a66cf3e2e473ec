// Access decisions this process made (READ for GET /<id>, UPDATE for PATCH /<id>, READ_MEMBERS for the children
// page), each kept with the access epoch (schema/access.ts) its statement read and the expiry of its token: while a
// later statement reads the same epoch, the decision holds. Only "allowed" is kept, since any insert may turn a
// denial into a permission without moving the epoch. One instance per process (services.ts); docs/architecture.md ("Remembered
// decisions and the access epoch") says why several instances stay exact and how PGlite follows the epoch.
import type { Credentials } from '../domain/accounts/types.js';
import type { Permission } from '../domain/elements/types.js';

/** How many decisions a process keeps: about 200 to 300 bytes each (GET /<id> keeps its writes too), so up to about 10 MiB. */
const ACCESS_DECISIONS_CAPACITY = 32_768;

export interface AccessDecision {
  /** The access epoch the decision was made under (bigint as text). */
  epoch: string;
  /** When the token expires (ms since 1970, rounded down), null when it does not. */
  expires: number | null;
  /** The caller's id, for a remembered statement that decides more than the remembered permission. */
  userId?: string;
  /** GET /<id>: whether UPDATE and DELETE were allowed too when READ was decided (queries/elements.ts). */
  writes?: { update: boolean; delete: boolean };
}

/** The key of a decision: who asked (the token's hash, or the anonymous user), for which permission, on what. */
export const decisionKey = (credentials: Credentials, permission: DecisionKind, id: string): string =>
  `${credentials.tokenHash ?? `anonymous ${credentials.anonymousUserId}`} ${permission} ${id}`;

/**
 * What is decided: a permission on the element, or READ_MEMBERS, READ on it that reaches every element it OWNS
 * (it comes from an OWNS path or a READ grant, which propagate down OWNS, or the element is the caller's own User
 * node or one of its groups, whose OWNS make the caller an owner: the children page lists from it). Each is lost
 * only by a deletion or a re-pointing, which moves the epoch.
 */
export type DecisionKind = Permission | 'READ_MEMBERS';

/** The channel the schema (schema/access.ts) notifies the new epoch on whenever the epoch row changes. */
export const ACCESS_EPOCH_CHANNEL = 'trellis_access_epoch';

/**
 * The access epoch as this process has seen it, on a database that only this process uses, through one session
 * (PGlite: storage/pglite.ts). The session LISTENs on ACCESS_EPOCH_CHANNEL, and a commit's notifications reach its
 * own session before the commit's ReadyForQuery (PostgreSQL's rule since version 14; checked on PGlite in
 * test/storage/session-epoch.test.ts). One session runs one statement at a time, so once a statement's reply has
 * arrived, every change of the epoch the statement could have seen has been seen here: a remembered GET /<id> reads
 * the element alone and compares the epoch afterwards. What that saves: reading the epoch's one-row table is a
 * sequential scan, which asks PGlite's file system for the file's size, about a quarter of the statement's time.
 *
 * Unknown (null) on a new connection until a statement reads the epoch (the table does not exist before the
 * migrations), and not trusted before the connection's LISTEN has taken effect. Epochs only grow, so an older
 * value read late never replaces a newer one.
 */
export class SessionAccessEpoch {
  private value: bigint | null = null;
  private listening = false;
  private connection = 0;

  /** A new connection: nothing seen on it yet. Returns the connection's number for `listen`. */
  restart(): number {
    this.value = null;
    this.listening = false;
    return ++this.connection;
  }

  /** The LISTEN of connection `connection` has taken effect: every later change of the epoch is notified. */
  listen(connection: number): void {
    if (connection === this.connection) this.listening = true;
  }

  /** An epoch a statement read, or a notification carried, on the listening connection. */
  observe(epoch: string): void {
    if (!this.listening) return;
    const value = BigInt(epoch);
    if (this.value === null || value > this.value) this.value = value;
  }

  /** The epoch as of the last reply, as text (AccessDecision.epoch), or null when unknown. */
  get current(): string | null {
    return this.value === null ? null : this.value.toString();
  }
}

export class AccessDecisions {
  /** key -> decision; insertion order is eviction order. */
  private readonly entries = new Map<string, AccessDecision>();
  private readonly capacity: number;
  /** The epoch as this process sees it, when the database allows it (SessionAccessEpoch); statements may use it. */
  readonly sessionEpoch: SessionAccessEpoch | undefined;

  constructor(options: { capacity?: number; sessionEpoch?: SessionAccessEpoch } = {}) {
    this.capacity = options.capacity ?? ACCESS_DECISIONS_CAPACITY;
    this.sessionEpoch = options.sessionEpoch;
  }

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
  known: (epoch: string, decision: AccessDecision) => Promise<T | undefined>,
  decide: () => Promise<{ result: T; decision: AccessDecision | null }>,
): Promise<T> {
  const remembered = decisions?.lookup(key, now);
  if (remembered !== undefined) {
    const result = await known(remembered.epoch, remembered);
    if (result !== undefined) return result;
    decisions!.forget(key);
  }
  const { result, decision } = await decide();
  if (decision !== null) {
    decisions?.remember(key, decision);
    decisions?.sessionEpoch?.observe(decision.epoch);
  }
  return result;
}

/**
 * The statement of a remembered decision, answered only while the epoch is still `epoch` (undefined otherwise).
 * When this process follows the epoch (`session`, SessionAccessEpoch), `run(false)` runs the statement without
 * reading it and the followed epoch is compared once the reply is in; otherwise `run(true)` reads the epoch in the
 * same statement and returns it, and that is compared.
 */
export async function whileEpochStands<T>(
  session: SessionAccessEpoch | undefined,
  epoch: string,
  run: (readEpoch: boolean) => Promise<{ result: T; epoch?: string }>,
): Promise<T | undefined> {
  if (session?.current != null) {
    if (session.current !== epoch) return undefined;
    const { result } = await run(false);
    // Any change of the epoch this statement could see was notified before its reply (SessionAccessEpoch).
    return session.current === epoch ? result : undefined;
  }
  const { result, epoch: read } = await run(true);
  session?.observe(read!);
  return read === epoch ? result : undefined;
}

/** SQL: the current access epoch as text, for statements that remember or rely on a decision. */
export const EPOCH_SQL = '(SELECT a.epoch::text FROM access_epoch a)';

/** SQL: a caller row's token expiry in ms since 1970, rounded down (AccessDecision.expires). */
export const expiresMsSql = (caller: string) => `floor(extract(epoch FROM ${caller}.expires) * 1000)::float8`;
