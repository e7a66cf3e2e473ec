// How many searches run at once. A search may hold a database connection and its CPU for its whole statement budget,
// and a query matching everything the caller sees is cheap to write, so without a bound a few of them would take
// every connection of the instance and stall everybody's reads and writes (SECURITY.md). The instance runs at most
// `maxConcurrent` searches; the others wait, at most `maxQueued` of them and for at most `queueTimeoutMs` (then 503
// with Retry-After). A user has at most `maxPerUser` searches running or waiting (then 429), and a freed slot goes to
// the waiting search whose user runs the fewest, so that one user's backlog does not hold up everyone else's.
//
// A wait counts from the request's arrival, and a freed slot never goes to a search whose wait is over: on the
// embedded database a search computes on this thread, so the queue's timers cannot fire while one runs, and the
// slot it frees would otherwise go to a search that should have had its 503 long ago.
import { Problem, serviceUnavailable } from '../../errors.js';

export interface AdmissionLimits {
  maxConcurrent: number;
  maxPerUser: number;
  maxQueued: number;
  queueTimeoutMs: number;
}

interface Waiter {
  userId: string;
  /** When its wait is over (performance.now()). */
  deadline: number;
  admit: () => void;
  /** Ends the wait with the queue timeout's 503. */
  expire: () => void;
}

/** Seconds a user over its own limit is asked to wait: searches take milliseconds to a few seconds. */
const USER_RETRY_AFTER_SECONDS = '1';

export class SearchAdmission {
  private running = 0;
  private readonly runningPerUser = new Map<string, number>();
  /** Running and waiting, per user. */
  private readonly heldPerUser = new Map<string, number>();
  private readonly waiting: Waiter[] = [];

  constructor(readonly limits: AdmissionLimits) {}

  /**
   * Resolves when the search may run, to the function that ends it (once; later calls do nothing). Throws 429 when
   * the user has its maximum running or waiting, 503 when the queue is full or the turn does not come in time, and
   * the signal's reason when the client went away while waiting. `arrivedAt` (performance.now()) is when the
   * request arrived, from which its wait counts; by default now.
   */
  async admit(userId: string, signal?: AbortSignal, arrivedAt = performance.now()): Promise<() => void> {
    if ((this.heldPerUser.get(userId) ?? 0) >= this.limits.maxPerUser)
      throw new Problem(
        'too-many-requests',
        `This user runs as many searches at once as it may (${this.limits.maxPerUser}, search.maxConcurrentPerUser).`,
        {},
        { 'retry-after': USER_RETRY_AFTER_SECONDS },
      );
    if (this.running < this.limits.maxConcurrent && this.waiting.length === 0) {
      bump(this.heldPerUser, userId, 1);
      this.start(userId);
      return this.finisher(userId);
    }
    if (signal?.aborted) throw signal.reason;
    if (this.waiting.length >= this.limits.maxQueued)
      throw serviceUnavailable(
        `This instance has ${this.limits.maxQueued} searches waiting already (search.maxQueued); retry shortly.`,
      );
    const deadline = arrivedAt + this.limits.queueTimeoutMs;
    if (performance.now() >= deadline) throw this.timedOut();
    bump(this.heldPerUser, userId, 1);
    await new Promise<void>((resolve, reject) => {
      const leave = (error: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        bump(this.heldPerUser, userId, -1);
        reject(error);
      };
      const waiter: Waiter = {
        userId,
        deadline,
        expire: () => leave(this.timedOut()),
        admit: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => leave(signal!.reason);
      const timer = setTimeout(waiter.expire, deadline - performance.now());
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
    return this.finisher(userId);
  }

  private timedOut(): Problem {
    return serviceUnavailable(
      `No search slot of this instance came free within ${this.limits.queueTimeoutMs / 1000} s (search.queueTimeoutInSeconds); retry shortly.`,
    );
  }

  /** Searches running now and waiting now. */
  get load(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  private start(userId: string) {
    this.running++;
    bump(this.runningPerUser, userId, 1);
  }

  private finisher(userId: string): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      bump(this.runningPerUser, userId, -1);
      bump(this.heldPerUser, userId, -1);
      this.next();
    };
  }

  /**
   * Gives free slots to the waiting searches whose users run the fewest, the longest waiting first among equals;
   * those whose wait is over get their 503 instead (their timers may not have had the thread yet).
   */
  private next() {
    const now = performance.now();
    for (const waiter of this.waiting.filter((w) => w.deadline <= now)) waiter.expire();
    while (this.running < this.limits.maxConcurrent && this.waiting.length > 0) {
      let pick = 0;
      for (let i = 1; i < this.waiting.length; i++)
        if (
          (this.runningPerUser.get(this.waiting[i]!.userId) ?? 0) <
          (this.runningPerUser.get(this.waiting[pick]!.userId) ?? 0)
        )
          pick = i;
      const [waiter] = this.waiting.splice(pick, 1);
      this.start(waiter!.userId);
      waiter!.admit();
    }
  }
}

function bump(counts: Map<string, number>, key: string, by: number) {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
