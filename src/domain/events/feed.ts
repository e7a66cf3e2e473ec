// The change feed of one instance: one reader follows the outbox's tail for every live subscription, woken by the
// database's notifications (any instance's commits), and hands each batch to the subscriptions that may see it. A
// subscription that resumes from an older cursor catches up on its own reads first, then joins the tail.
import { Problem, serviceUnavailable } from '../../errors.js';
import type { ElementId } from '../../values.js';
import type { Authentication } from '../accounts/authentication.js';
import type { Caller, Credentials } from '../accounts/types.js';
import type { Transactions } from '../transactions.js';
import { type Cursor, compareCursors, formatCursor, laterCursor } from './cursor.js';
import { accessMessage, changesAccess, deliver, idsOf, unreadableMessage } from './delivery.js';
import type { Audience, EventLog, EventSignal, Retained, StoredEvent } from './ports.js';
import { type Scope, type Sink, Subscription } from './subscription.js';

interface FeedSettings {
  retentionInSeconds: number;
  maxSubscribers: number;
  maxSubscribersPerUser: number;
  heartbeatInSeconds: number;
}

interface FeedDeps {
  log: EventLog;
  transactions: Transactions;
  authentication: Authentication;
  now: () => Date;
  signal: EventSignal;
  settings: FeedSettings;
  /** What other readers of the outbox still need (webhooks); kept by the prune. */
  retained?: () => Promise<Retained | null>;
}

/** Rows read per statement. */
const PAGE = 500;
/** How soon the tail is read again while committed rows wait for an older transaction. */
const PENDING_RETRY_MS = 10;
/** Reads of the tail without a notification (one that was lost, or a listener reconnecting), and token checks. */
const POLL_MS = 1000;
interface Admission {
  caller: Caller;
  /** The watched elements the caller may read now. */
  readable: Set<ElementId>;
}

/** Retry-After of a refused subscription. */
const RETRY_AFTER_SECONDS = '5';

export class Feed {
  private tail: Cursor | null = null;
  private readonly subscriptions = new Set<Subscription>();
  private readonly live = new Set<Subscription>();
  private readonly perUser = new Map<ElementId, number>();
  private pumping: Promise<void> | null = null;
  private wanted = false;
  private timers: NodeJS.Timeout[] = [];
  private retry: NodeJS.Timeout | undefined;
  private stopSignal: (() => Promise<void>) | null = null;
  private closed = false;
  private started: Promise<void> | null = null;
  /** Hears what fails in the background (reads of the tail, token checks); the HTTP app logs it. */
  onError: (error: unknown) => void = () => {};

  constructor(private readonly deps: FeedDeps) {}

  /** Listens and finds the tail, once: with the first subscription, so that commands and idle instances never do. */
  private ensureStarted(): Promise<void> {
    this.started ??= this.start().catch((error) => {
      this.started = null;
      this.onError(error);
      throw serviceUnavailable('The change feed cannot reach the database.');
    });
    return this.started;
  }

  private async start(): Promise<void> {
    this.stopSignal = await this.deps.signal(() => this.wake());
    this.tail = await this.head();
    const every = (ms: number, work: () => void) => {
      const timer = setInterval(work, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(POLL_MS, () => {
      this.wake();
      void this.checkTokens().catch((error) => this.onError(error));
    });
    every(this.deps.settings.heartbeatInSeconds * 1000, () => {
      for (const sub of this.subscriptions) sub.heartbeat();
    });
  }

  get size(): number {
    return this.subscriptions.size;
  }

  /**
   * Whether these credentials may follow this scope, or the problem that refuses it: 401 for bad credentials, 503 past
   * the instance's bound, 429 past the user's, 404 for a watched element the caller cannot read (unless it resumes:
   * then it only ever gets what it may read, so a missing and an unreadable element still look alike). HEAD asks
   * this alone.
   */
  async admit(credentials: Credentials, scope: Scope, resume: Cursor | null): Promise<Admission> {
    const { settings, transactions, log } = this.deps;
    if (this.closed) throw serviceUnavailable('The instance is shutting down.');
    const caller = await this.deps.authentication.caller(credentials, this.deps.now());
    if (this.subscriptions.size >= settings.maxSubscribers)
      throw serviceUnavailable('This instance follows as many change feeds as it may (events.maxSubscribers).');
    if ((this.perUser.get(caller.userId) ?? 0) >= settings.maxSubscribersPerUser)
      throw new Problem(
        'too-many-requests',
        'This user follows as many change feeds as it may (events.maxSubscribersPerUser).',
        {},
        { 'retry-after': RETRY_AFTER_SECONDS },
      );
    const watched = scope.kind === 'ids' ? [...scope.ids] : scope.kind === 'parent' ? [scope.id] : [];
    const readable = new Set<ElementId>();
    if (watched.length > 0) {
      const audience = await log.audience(transactions.direct, [caller.userId], watched);
      const now = audience.readable.get(caller.userId) ?? new Set();
      if (resume === null && watched.some((id) => !now.has(id))) throw new Problem('not-found');
      for (const id of watched) if (now.has(id)) readable.add(id);
    }
    return { caller, readable };
  }

  /** A new subscription (refused as `admit` says), which gets `ready`, then what it missed, then the tail. */
  async subscribe(credentials: Credentials, scope: Scope, resume: Cursor | null, sink: Sink): Promise<Subscription> {
    await this.ensureStarted();
    const { caller, readable } = await this.admit(credentials, scope, resume);
    // A new stream starts at the database's present, not at this feed's tail, which may lag by one read.
    const start = resume ?? laterCursor(this.tail!, await this.head());
    const sub = new Subscription(caller, credentials.tokenHash ?? null, scope, sink, start);
    for (const id of readable) sub.readableWatched.add(id);
    this.subscriptions.add(sub);
    this.perUser.set(caller.userId, (this.perUser.get(caller.userId) ?? 0) + 1);
    const cursor = formatCursor(sub.cursor);
    sub.send({ id: cursor, event: 'ready', data: JSON.stringify({ cursor }) });
    void this.catchUp(sub).catch((error) => {
      this.onError(error);
      this.unsubscribe(sub);
    });
    return sub;
  }

  unsubscribe(sub: Subscription): void {
    if (!this.subscriptions.delete(sub)) return;
    this.live.delete(sub);
    const left = (this.perUser.get(sub.userId) ?? 1) - 1;
    if (left > 0) this.perUser.set(sub.userId, left);
    else this.perUser.delete(sub.userId);
    sub.end();
  }

  /** Drops events older than the retention window (any instance's job may; the others find nothing left). */
  async prune(): Promise<number> {
    const before = new Date(this.deps.now().getTime() - this.deps.settings.retentionInSeconds * 1000);
    return this.deps.log.prune(this.deps.transactions.direct, before, (await this.deps.retained?.()) ?? null);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearInterval(timer);
    clearTimeout(this.retry);
    for (const sub of [...this.subscriptions]) this.unsubscribe(sub);
    await this.pumping;
    await this.stopSignal?.();
  }

  /** Reads the tail now, or once more after the read in progress. */
  private wake(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.wanted = true;
      return;
    }
    this.pumping = this.pump()
      .catch((error) => this.onError(error))
      .finally(() => {
        this.pumping = null;
        if (this.wanted) {
          this.wanted = false;
          this.wake();
        }
      });
  }

  private async pump(): Promise<void> {
    const { log, transactions } = this.deps;
    for (;;) {
      const page = await log.read(transactions.direct, this.tail!, PAGE, null);
      if (page.events.length > 0) {
        const subs = [...this.live];
        const audience = await this.audienceOf(subs, page.events);
        deliver(page.events, subs, audience);
        this.tail = page.events.at(-1)!.cursor;
        this.dropClosed();
        if (page.events.some((e) => e.change === 'deleted' || changesAccess(e))) await this.recheckWatched();
      }
      if (page.events.length < PAGE) {
        this.tail = laterCursor(this.tail!, page.stable);
        if (page.pending) {
          clearTimeout(this.retry);
          this.retry = setTimeout(() => this.wake(), PENDING_RETRY_MS);
        }
        return;
      }
    }
  }

  /** Follows the log from the subscription's cursor to the tail, then joins the live subscriptions. */
  private async catchUp(sub: Subscription): Promise<void> {
    const { log, transactions } = this.deps;
    while (!sub.closed && !this.closed) {
      const upTo = this.tail!;
      if (compareCursors(sub.cursor, upTo) >= 0) {
        // A read of the tail in flight delivers to the subscriptions it started with: wait for it, then look again.
        if (this.pumping) {
          await this.pumping;
          continue;
        }
        this.live.add(sub);
        return;
      }
      const page = await log.read(transactions.direct, sub.cursor, PAGE, upTo);
      if (page.lost) {
        sub.send({ id: formatCursor(upTo), event: 'reset', data: JSON.stringify({ cursor: formatCursor(upTo) }) });
        sub.cursor = upTo;
      } else if (page.events.length === 0) {
        sub.cursor = upTo;
      } else {
        deliver(page.events, [sub], await this.audienceOf([sub], page.events));
      }
    }
    if (sub.closed) this.unsubscribe(sub);
  }

  /** Where a reader that has seen every final row stands now. */
  private async head(): Promise<Cursor> {
    return (await this.deps.log.read(this.deps.transactions.direct, { xid: 0n, seq: 0n }, 0, null)).stable;
  }

  private audienceOf(subs: Subscription[], events: StoredEvent[]): Promise<Audience> {
    const users = [...new Set(subs.map((s) => s.userId))];
    return this.deps.log.audience(this.deps.transactions.direct, users, idsOf(events));
  }

  /** Watched elements that became unreadable look deleted; ones that became readable are announced. */
  private async recheckWatched(): Promise<void> {
    const subs = [...this.live].filter((s) => s.scope.kind === 'ids');
    if (subs.length === 0) return;
    const ids = [...new Set(subs.flatMap((s) => (s.scope.kind === 'ids' ? [...s.scope.ids] : [])))];
    const audience = await this.deps.log.audience(
      this.deps.transactions.direct,
      [...new Set(subs.map((s) => s.userId))],
      ids,
    );
    for (const sub of subs) {
      if (sub.scope.kind !== 'ids') continue;
      const readable = audience.readable.get(sub.userId) ?? new Set();
      const gained: ElementId[] = [];
      for (const id of sub.scope.ids) {
        const kind = audience.kinds.get(id);
        if (sub.readableWatched.has(id) && !readable.has(id)) {
          sub.readableWatched.delete(id);
          if (kind) sub.send(unreadableMessage(sub, id, kind));
        } else if (!sub.readableWatched.has(id) && readable.has(id)) {
          sub.readableWatched.add(id);
          gained.push(id);
        }
      }
      if (gained.length > 0) sub.send(accessMessage(sub.scope, gained));
    }
    this.dropClosed();
  }

  /** Ends the streams whose token was revoked or expired, within a second of it. */
  private async checkTokens(): Promise<void> {
    const hashes = [...new Set([...this.subscriptions].flatMap((s) => (s.tokenHash ? [s.tokenHash] : [])))];
    if (hashes.length === 0) return;
    const active = await this.deps.log.activeTokens(this.deps.transactions.direct, hashes, this.deps.now());
    for (const sub of [...this.subscriptions]) if (sub.tokenHash && !active.has(sub.tokenHash)) this.unsubscribe(sub);
  }

  private dropClosed(): void {
    for (const sub of this.subscriptions) if (sub.closed) this.unsubscribe(sub);
  }
}
