// Delivers the change feed to webhooks. Every instance runs one dispatcher: woken by the feed's notifications (any
// instance's commits) and once a second, it claims due webhooks with a lease (one instance works a webhook at a
// time), reads the outbox from each webhook's cursor, decides each event with the feed's own rule for the owner at
// that moment, and sends the events one after the other: the next only once the previous was answered 2xx or given
// up on. A failure is retried on the schedule; the cursor moves only past what is settled, so a killed instance's
// webhooks go on, once their lease runs out, from the last event a receiver acknowledged.
import type { ElementId } from '../../values.js';
import { newId } from '../../values.js';
import { type Cursor, laterCursor } from '../events/cursor.js';
import { idsOf, inScope, visible } from '../events/delivery.js';
import type { Audience, EventLog, EventSignal, StoredEvent } from '../events/ports.js';
import type { Transactions } from '../transactions.js';
import { eventMessage, type Message, resetMessage, signedHeaders } from './messages.js';
import type { Delivery, SendOutcome, StoredWebhook, WebhookSender, WebhookStore } from './ports.js';
import type { SecretBox } from './secrets.js';

interface DispatchSettings {
  timeoutInSeconds: number;
  retryScheduleInSeconds: number[];
  maxConcurrentDeliveries: number;
}

export interface DeliveryObserver {
  delivered(outcome: 'success' | 'failure' | 'gave-up', seconds: number): void;
}

interface DispatcherDeps {
  store: WebhookStore;
  log: EventLog;
  transactions: Transactions;
  sender: WebhookSender;
  secrets: SecretBox;
  now: () => Date;
  signal: EventSignal;
  settings: DispatchSettings;
  observer?: DeliveryObserver;
}

/** Events read per webhook and statement. */
const BATCH = 100;
const POLL_MS = 1000;
const CLAIM_SPACING_MS = 20;
/**
 * How many of the dispatcher's statements may run at once, whatever the deliveries in flight: under a write load
 * its reads of the outbox took every connection of the pool and the requests waited for them.
 */
const DB_LANES = 2;
/**
 * A lease lasts two attempts and this much: its holder starts no attempt that could outlast it, so it never runs out
 * while the holder is still waiting for an answer, and a killed holder's webhooks wait no longer than that.
 */
const LEASE_MARGIN_MS = 5_000;

/** A step's end: where the webhook stands and when it is due again. */
interface Step {
  cursor: Cursor;
  attempts: number;
  due: Date;
  disabledReason: string | null;
}

export class Dispatcher {
  private readonly active = new Set<ElementId>();
  private running: Promise<void> | null = null;
  private wanted = false;
  private timer: NodeJS.Timeout | undefined;
  private stopSignal: (() => Promise<void>) | null = null;
  private closed = false;
  private readonly work = new Set<Promise<void>>();
  onError: (error: unknown) => void = () => {};

  /** Statements of the dispatcher running now, and those waiting for one of the DB_LANES. */
  private lanes = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly deps: DispatcherDeps) {}

  /** Runs a statement in one of DB_LANES: the pool's connections are the requests' first. */
  private async db<T>(statement: () => Promise<T>): Promise<T> {
    if (this.lanes < DB_LANES) this.lanes++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await statement();
    } finally {
      // A waiting statement takes the lane over; else it is free.
      const next = this.waiting.shift();
      if (next) next();
      else this.lanes--;
    }
  }

  async start(): Promise<void> {
    this.stopSignal = await this.deps.signal(() => this.wake());
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref();
    this.wake();
  }

  async stop(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.stopSignal?.();
    await this.running;
    await Promise.allSettled([...this.work]);
  }

  /** Claims due webhooks now, or once more after the claim in progress. */
  wake(): void {
    if (this.closed) return;
    if (this.running) {
      this.wanted = true;
      return;
    }
    this.running = this.claim()
      .catch((error) => this.onError(error))
      .finally(() => {
        this.running = null;
        if (this.wanted) {
          this.wanted = false;
          // Commits notify many times a second under load: the claims after the first wait a little and serve them
          // together.
          setTimeout(() => this.wake(), CLAIM_SPACING_MS).unref();
        }
      });
  }

  private leaseMs(): number {
    return 2 * this.deps.settings.timeoutInSeconds * 1000 + LEASE_MARGIN_MS;
  }

  private async claim(): Promise<void> {
    const free = this.deps.settings.maxConcurrentDeliveries - this.active.size;
    if (free <= 0) return;
    const now = this.deps.now();
    const until = new Date(now.getTime() + this.leaseMs());
    const claimed = await this.db(() =>
      this.deps.store.claim(this.deps.transactions.direct, now, until, free, [...this.active]),
    );
    for (const webhook of claimed) {
      this.active.add(webhook.id);
      const job = this.deliverAll(webhook, until)
        .catch((error) => this.onError(error))
        .finally(() => {
          this.active.delete(webhook.id);
          this.work.delete(job);
          this.wake();
        });
      this.work.add(job);
    }
  }

  /** Works one claimed webhook until it is caught up, fails, or its lease nears its end; then settles it. */
  private async deliverAll(webhook: StoredWebhook, leaseUntil: Date): Promise<void> {
    const { store, transactions } = this.deps;
    let step: Step = { cursor: webhook.cursor, attempts: webhook.attempts, due: this.deps.now(), disabledReason: null };
    // The attempts are logged with the webhook's new state, in one statement: a crash before it loses the log of
    // attempts whose events are then sent again (the cursor did not move either).
    const log: Delivery[] = [];
    try {
      step = await this.steps(webhook, leaseUntil, step, log);
    } finally {
      const state = { ...step, now: this.deps.now() };
      await this.db(() => store.settle(transactions.direct, webhook.id, webhook.leaseToken!, state, log));
    }
  }

  private async steps(webhook: StoredWebhook, leaseUntil: Date, from: Step, attempts: Delivery[]): Promise<Step> {
    const { log, transactions } = this.deps;
    let step = from;
    const timeoutMs = this.deps.settings.timeoutInSeconds * 1000;
    for (;;) {
      const page = await this.db(() => log.read(transactions.direct, step.cursor, BATCH, null));
      if (page.lost) {
        const sent = await this.attempt(
          webhook,
          resetMessage(webhook.id, page.stable, this.deps.now()),
          step,
          attempts,
        );
        if (sent.attempts > 0 || sent.disabledReason) return sent;
        step = { ...sent, cursor: page.stable };
        continue;
      }
      const audience = await this.audience(webhook, page.events);
      for (const event of page.events) {
        if (!this.wants(webhook, event, audience)) {
          step = { ...step, cursor: event.cursor };
          continue;
        }
        if (this.deps.now().getTime() + timeoutMs > leaseUntil.getTime()) return step;
        const sent = await this.attempt(webhook, eventMessage(event), step, attempts);
        if (sent.attempts > 0 || sent.disabledReason) return sent;
        step = { ...sent, cursor: event.cursor };
      }
      const lost = this.watchedLost(webhook, audience);
      if (lost) return { ...step, disabledReason: lost };
      if (page.events.length < BATCH) return { ...step, cursor: laterCursor(step.cursor, page.stable) };
    }
  }

  private audience(webhook: StoredWebhook, events: StoredEvent[]): Promise<Audience> {
    const watched =
      webhook.scope.kind === 'ids' ? [...webhook.scope.ids] : webhook.scope.kind === 'parent' ? [webhook.scope.id] : [];
    const ids = [...new Set([...idsOf(events), ...watched])];
    return this.db(() => this.deps.log.audience(this.deps.transactions.direct, [webhook.ownerId], ids));
  }

  private wants(webhook: StoredWebhook, event: StoredEvent, audience: Audience): boolean {
    return (
      webhook.events.includes(event.change) &&
      inScope(webhook.scope, event, audience) &&
      visible(event, webhook.ownerId, audience)
    );
  }

  /** Why the webhook stops because its owner can no longer read what it watches, or null. */
  private watchedLost(webhook: StoredWebhook, audience: Audience): string | null {
    const readable = audience.readable.get(webhook.ownerId) ?? new Set();
    const { scope } = webhook;
    if (scope.kind === 'parent' && !readable.has(scope.id)) return 'The owner can no longer read the watched parent.';
    if (scope.kind === 'ids' && ![...scope.ids].some((id) => readable.has(id)))
      return 'The owner can no longer read any watched element.';
    return null;
  }

  /** One attempt of a message; the step after it (attempts 0: delivered). */
  private async attempt(webhook: StoredWebhook, message: Message, step: Step, log: Delivery[]): Promise<Step> {
    const outcome = await this.send(webhook, message);
    const now = this.deps.now();
    const attempt = step.attempts + 1;
    const next = nextStep(outcome, attempt, now, this.deps.settings.retryScheduleInSeconds);
    log.push({
      id: newId(),
      webhookId: webhook.id,
      messageId: message.id,
      eventType: message.type,
      payload: message.payload,
      attempted: now,
      attempt,
      status: outcome.status,
      error: outcome.error,
      durationMs: outcome.durationMs,
      response: outcome.response,
      nextRetry: next.attempts > 0 && !next.disabledReason ? next.due : null,
    });
    this.deps.observer?.delivered(
      next.attempts === 0 ? 'success' : next.disabledReason ? 'gave-up' : 'failure',
      outcome.durationMs / 1000,
    );
    return { ...next, cursor: step.cursor };
  }

  /** Signs and sends one message with every secret of the webhook that signs now. */
  async send(webhook: StoredWebhook, message: Message): Promise<SendOutcome> {
    const secrets = await this.signingSecrets(webhook);
    if (secrets.length === 0)
      return {
        status: null,
        error: 'network',
        response: 'No key of this instance opens the secret.',
        retryAfterSeconds: null,
        durationMs: 0,
      };
    const at = this.deps.now();
    return this.deps.sender.send({
      url: webhook.url,
      headers: signedHeaders(message, secrets, at),
      body: message.payload,
    });
  }

  private async signingSecrets(webhook: StoredWebhook): Promise<string[]> {
    const { secrets } = this.deps;
    const now = this.deps.now();
    const sealed = [webhook.secret];
    if (webhook.previousSecret && webhook.previousUntil && webhook.previousUntil > now)
      sealed.push(webhook.previousSecret);
    const opened = await Promise.all(sealed.map((s) => secrets.open(s)));
    return opened.filter((s): s is string => s !== null);
  }
}

/** After an attempt: delivered, retried on the schedule (or Retry-After), or given up and disabled. */
export function nextStep(outcome: SendOutcome, attempt: number, now: Date, schedule: number[]): Omit<Step, 'cursor'> {
  const { status } = outcome;
  if (status !== null && status >= 200 && status < 300) return { attempts: 0, due: now, disabledReason: null };
  if (status === 410) return { attempts: attempt, due: now, disabledReason: 'The receiver answered 410 Gone.' };
  if (attempt > schedule.length)
    return {
      attempts: attempt,
      due: now,
      disabledReason: `The retry schedule is exhausted: ${attempt} attempts failed (the last: ${status ?? outcome.error}).`,
    };
  // Up to a tenth earlier or later, so that receivers that failed together are not retried together.
  const jitter = 0.9 + Math.random() * 0.2;
  const scheduled = schedule[attempt - 1]! * jitter;
  const seconds = Math.max(scheduled, outcome.retryAfterSeconds ?? 0);
  return { attempts: attempt, due: new Date(now.getTime() + seconds * 1000), disabledReason: null };
}
