// What webhooks need from the database and the network, in the domain's words. The SQL adapter is
// storage/webhook-store.ts, the sender webhooks/http-sender.ts; src/services.ts wires them.
import type { ElementId } from '../../values.js';
import type { Cursor } from '../events/cursor.js';
import type { Change } from '../events/ports.js';
import type { Scope } from '../events/subscription.js';
import type { Tx } from '../transactions.js';

/** A webhook as stored; the secrets sealed (webhooks/secrets.ts). */
export interface StoredWebhook {
  id: ElementId;
  ownerId: ElementId;
  url: string;
  events: Change[];
  scope: Scope;
  description: string;
  secret: Buffer;
  previousSecret: Buffer | null;
  previousUntil: Date | null;
  enabled: boolean;
  disabledReason: string | null;
  cursor: Cursor;
  attempts: number;
  due: Date;
  /** The lease a claim took (null outside a claim). */
  leaseToken: string | null;
  created: Date;
  updated: Date;
}

/** One attempt to deliver one message. */
export interface Delivery {
  id: ElementId;
  webhookId: ElementId;
  messageId: string;
  eventType: string;
  payload: string;
  attempted: Date;
  attempt: number;
  status: number | null;
  error: DeliveryError | null;
  durationMs: number;
  response: string | null;
  nextRetry: Date | null;
}

/** Why an attempt got no HTTP status, or why its status is a failure that is not the receiver's answer. */
export type DeliveryError =
  | 'timeout'
  | 'connection-refused'
  | 'connection-reset'
  | 'tls'
  | 'redirect'
  | 'blocked-address'
  | 'dns'
  | 'network';

export interface WebhookChanges {
  url?: string;
  events?: Change[];
  description?: string;
  enabled?: boolean;
}

export interface WebhookStore {
  /** Holds a lock on the owner's webhooks until the transaction ends. */
  lockOwner(tx: Tx, ownerId: ElementId): Promise<void>;
  count(tx: Tx, ownerId: ElementId): Promise<number>;
  insert(tx: Tx, webhook: StoredWebhook): Promise<void>;
  /** The webhook if `ownerId` owns it (locked for update inside a transaction when `lock`). */
  get(tx: Tx, id: ElementId, ownerId: ElementId, lock?: boolean): Promise<StoredWebhook | null>;
  list(tx: Tx, ownerId: ElementId, offset: number, limit: number): Promise<{ items: StoredWebhook[]; total: number }>;
  /** Applies the changes; re-enabling clears the reason and makes the webhook due now. */
  update(tx: Tx, id: ElementId, changes: WebhookChanges, now: Date): Promise<void>;
  rotate(tx: Tx, id: ElementId, secret: Buffer, previous: Buffer, previousUntil: Date, now: Date): Promise<void>;
  remove(tx: Tx, id: ElementId, ownerId: ElementId): Promise<boolean>;
  /** The last delivery of each webhook. */
  lastDeliveries(tx: Tx, ids: ElementId[]): Promise<Map<ElementId, Delivery>>;
  deliveries(
    tx: Tx,
    webhookId: ElementId,
    offset: number,
    limit: number,
  ): Promise<{ items: Delivery[]; total: number }>;
  delivery(tx: Tx, webhookId: ElementId, deliveryId: ElementId): Promise<Delivery | null>;

  /**
   * Up to `limit` enabled webhooks due at `now` that no live lease holds (nor `exclude`), leased until `leaseUntil`:
   * no other instance takes them until then.
   */
  claim(tx: Tx, now: Date, leaseUntil: Date, limit: number, exclude: ElementId[]): Promise<StoredWebhook[]>;
  /** Logs the attempts and sets the webhook's state after them, if the lease is still its own (then released). */
  settle(tx: Tx, id: ElementId, leaseToken: string, state: SettledState, attempts: Delivery[]): Promise<void>;
  record(tx: Tx, delivery: Delivery): Promise<void>;
  /** The oldest cursor an enabled webhook still stands at (null: none). */
  oldestCursor(tx: Tx): Promise<Cursor | null>;
  /** Drops the delivery log before `before`; how many rows. */
  pruneDeliveries(tx: Tx, before: Date): Promise<number>;
  /** Enabled webhooks, and the age in seconds of the oldest event one of them waits to deliver. */
  stats(tx: Tx, now: Date): Promise<{ enabled: number; disabled: number; lagSeconds: number }>;
}

interface SettledState {
  cursor: Cursor;
  attempts: number;
  due: Date;
  /** Set: the webhook is disabled for this reason. */
  disabledReason: string | null;
  now: Date;
}

/** What the network said to one POST. */
export interface SendOutcome {
  status: number | null;
  error: DeliveryError | null;
  /** The first KiB of the answer's body (of at most 64 KiB read). */
  response: string | null;
  /** Seconds from a Retry-After of a 429 or 503. */
  retryAfterSeconds: number | null;
  durationMs: number;
}

export interface OutboundRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface WebhookSender {
  /** Refuses (with the reason) a URL whose host resolves to an address the operator did not allow. */
  check(url: string): Promise<string | null>;
  send(request: OutboundRequest): Promise<SendOutcome>;
}
