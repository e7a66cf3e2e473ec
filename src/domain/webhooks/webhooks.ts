// The webhooks API (POST/GET/PATCH/DELETE /webhooks..., docs/webhooks.md): a signed-in user's webhooks, their
// secrets (shown once), their delivery log, a redelivery and a ping. Another user's webhook is 404, as an element is.
import type { Settings } from '../../config/schema.js';
import { badContent, notFound, Problem } from '../../errors.js';
import { type ElementId, isoTime, isPlainObject, newId, parseElementId, unstorableAt } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import { type PageRequest, pagination } from '../elements/collections.js';
import { CHANGES, type Change, type EventLog, type Retained } from '../events/ports.js';
import type { Scope } from '../events/subscription.js';
import type { Transactions } from '../transactions.js';
import type { Dispatcher } from './dispatcher.js';
import { type Message, pingMessage } from './messages.js';
import type { Delivery, StoredWebhook, WebhookChanges, WebhookSender, WebhookStore } from './ports.js';
import { newSecret, type SecretBox } from './secrets.js';

interface WebhooksDeps {
  store: WebhookStore;
  log: EventLog;
  transactions: Transactions;
  sender: WebhookSender;
  secrets: SecretBox;
  dispatcher: Dispatcher;
  now: () => Date;
  settings: Settings;
}

const MAX_URL = 2048;
const MAX_DESCRIPTION = 1000;
const MAX_IDS = 100;

/** A collection page of any items, with the links of the element collections. */
function page<T>(
  path: string,
  query: { page: number; pageSize: number },
  total: number,
  items: T[],
  defaultSize: number,
) {
  const last = Math.max(1, Math.ceil(total / query.pageSize));
  const link = (n: number) => {
    const params = new URLSearchParams();
    if (n > 1) params.set('page', String(n));
    if (query.pageSize !== defaultSize) params.set('pageSize', String(query.pageSize));
    return params.size > 0 ? `${path}?${params}` : path;
  };
  return {
    type: '_PartialCollection',
    id: link(query.page),
    totalItems: total,
    links: {
      first: link(1),
      previous: query.page > 1 ? link(Math.min(query.page - 1, last)) : null,
      next: query.page < last ? link(query.page + 1) : null,
      last: link(last),
    },
    items,
  };
}

function deliveryView(d: Delivery) {
  return {
    id: d.id,
    eventId: d.messageId,
    eventType: d.eventType,
    attempted: isoTime(d.attempted),
    attempt: d.attempt,
    status: d.status,
    error: d.error,
    durationMs: d.durationMs,
    response: d.response,
    nextRetry: d.nextRetry ? isoTime(d.nextRetry) : null,
  };
}

function watchView(scope: Scope) {
  if (scope.kind === 'ids') return { id: [...scope.ids] };
  if (scope.kind === 'parent') return { parent: scope.id };
  return {};
}

function webhookView(w: StoredWebhook, last: Delivery | undefined) {
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    watch: watchView(w.scope),
    description: w.description,
    enabled: w.enabled,
    disabledReason: w.disabledReason,
    created: isoTime(w.created),
    updated: isoTime(w.updated),
    lastDelivery: last ? deliveryView(last) : null,
  };
}

function parseUrl(value: unknown): string {
  if (typeof value !== 'string') throw badContent("'url' must be a string.");
  if (value.length > MAX_URL) throw badContent(`'url' is longer than ${MAX_URL} characters.`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw badContent("'url' is not a URL.");
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badContent("'url' must be an http or https URL.");
  if (url.username || url.password) throw badContent("'url' must not carry a user name or password.");
  return url.href;
}

function parseEvents(value: unknown): Change[] {
  if (!Array.isArray(value) || value.length === 0) throw badContent("'events' must be a non-empty list of changes.");
  for (const item of value)
    if (!CHANGES.includes(item as Change))
      throw badContent(`'events' holds ${JSON.stringify(item)}; the changes are ${CHANGES.join(', ')}.`);
  return [...new Set(value as Change[])];
}

function parseDescription(value: unknown): string {
  if (typeof value !== 'string') throw badContent("'description' must be a string.");
  if (value.length > MAX_DESCRIPTION) throw badContent(`'description' is longer than ${MAX_DESCRIPTION} characters.`);
  if (unstorableAt(value) !== null) throw badContent("'description' holds U+0000 or an unpaired surrogate.");
  return value;
}

function parseScope(input: Record<string, unknown>): Scope {
  if (input.id !== undefined && input.parent !== undefined)
    throw badContent("Watch either 'id' or 'parent', not both.");
  if (input.parent !== undefined) {
    const id = parseElementId(input.parent);
    if (id === null) throw badContent("'parent' must be an element id.");
    return { kind: 'parent', id };
  }
  if (input.id === undefined) return { kind: 'all' };
  const list = Array.isArray(input.id) ? input.id : [input.id];
  if (list.length === 0 || list.length > MAX_IDS) throw badContent(`'id' must list 1 to ${MAX_IDS} element ids.`);
  const ids = list.map((text) => parseElementId(text));
  if (ids.some((id) => id === null)) throw badContent("Every 'id' must be an element id.");
  return { kind: 'ids', ids: new Set(ids as ElementId[]) };
}

function onlyKeys(input: Record<string, unknown>, allowed: string[]) {
  for (const key of Object.keys(input))
    if (!allowed.includes(key)) throw badContent(`'${key}' is not a property of a webhook.`);
}

export class Webhooks {
  constructor(private readonly deps: WebhooksDeps) {}

  private signedIn(caller: Caller): ElementId {
    if (caller.tokenId === null) throw new Problem('unauthorized', 'Webhooks need a signed-in user (a token).');
    return caller.userId;
  }

  private async owned(caller: Caller, id: ElementId): Promise<StoredWebhook> {
    const found = await this.deps.store.get(this.deps.transactions.direct, id, this.signedIn(caller));
    if (!found) throw notFound();
    return found;
  }

  private async checkUrl(url: string): Promise<void> {
    const refused = await this.deps.sender.check(url);
    if (refused !== null) throw badContent(`'url' may not be called: ${refused} (webhooks.allowedHosts).`);
  }

  async create(caller: Caller, body: unknown): Promise<{ id: ElementId; secret: string }> {
    const owner = this.signedIn(caller);
    if (!isPlainObject(body)) throw badContent('The body must be a JSON object.');
    onlyKeys(body, ['url', 'events', 'id', 'parent', 'description']);
    const url = parseUrl(body.url);
    const events = body.events === undefined ? [...CHANGES] : parseEvents(body.events);
    const description = body.description === undefined ? '' : parseDescription(body.description);
    const scope = parseScope(body);
    const { store, log, transactions, settings } = this.deps;
    const watched = scope.kind === 'ids' ? [...scope.ids] : scope.kind === 'parent' ? [scope.id] : [];
    if (watched.length > 0) {
      const readable = (await log.audience(transactions.direct, [owner], watched)).readable.get(owner);
      if (watched.some((id) => !readable?.has(id))) throw notFound();
    }
    await this.checkUrl(url);
    const secret = newSecret();
    const sealed = await this.deps.secrets.seal(secret);
    const head = (await log.read(transactions.direct, { xid: 0n, seq: 0n }, 0, null)).stable;
    const now = this.deps.now();
    const id = newId();
    await transactions.transaction(async (tx) => {
      // A lock per owner keeps two concurrent creations from both passing the bound.
      await store.lockOwner(tx, owner);
      if ((await store.count(tx, owner)) >= settings.webhooks.maxPerUser)
        throw new Problem(
          'conflict',
          `A user may have at most ${settings.webhooks.maxPerUser} webhooks (webhooks.maxPerUser).`,
        );
      await store.insert(tx, {
        id,
        ownerId: owner,
        url,
        events,
        scope,
        description,
        secret: sealed,
        previousSecret: null,
        previousUntil: null,
        enabled: true,
        disabledReason: null,
        cursor: head,
        attempts: 0,
        due: now,
        leaseToken: null,
        created: now,
        updated: now,
      });
    });
    return { id, secret };
  }

  async list(caller: Caller, query: PageRequest) {
    const owner = this.signedIn(caller);
    const paging = pagination(query, this.deps.settings.pageSize);
    const { direct } = this.deps.transactions;
    const { items, total } = await this.deps.store.list(
      direct,
      owner,
      (paging.page - 1) * paging.pageSize,
      paging.pageSize,
    );
    const last = await this.deps.store.lastDeliveries(
      direct,
      items.map((w) => w.id),
    );
    const views = items.map((w) => webhookView(w, last.get(w.id)));
    return page('/webhooks', paging, total, views, this.deps.settings.pageSize.default);
  }

  async get(caller: Caller, id: ElementId) {
    const w = await this.owned(caller, id);
    const last = await this.deps.store.lastDeliveries(this.deps.transactions.direct, [w.id]);
    return webhookView(w, last.get(w.id));
  }

  async update(caller: Caller, id: ElementId, body: unknown) {
    const w = await this.owned(caller, id);
    if (!isPlainObject(body)) throw badContent('The body must be a JSON object.');
    onlyKeys(body, ['url', 'events', 'description', 'enabled']);
    const changes: WebhookChanges = {};
    if (body.url !== undefined) changes.url = parseUrl(body.url);
    if (body.events !== undefined) changes.events = parseEvents(body.events);
    if (body.description !== undefined) changes.description = parseDescription(body.description);
    if (body.enabled !== undefined) {
      if (typeof body.enabled !== 'boolean') throw badContent("'enabled' must be true or false.");
      changes.enabled = body.enabled;
    }
    if (changes.url !== undefined) await this.checkUrl(changes.url);
    await this.deps.store.update(this.deps.transactions.direct, w.id, changes, this.deps.now());
    if (changes.enabled) this.deps.dispatcher.wake();
    return this.get(caller, id);
  }

  async remove(caller: Caller, id: ElementId): Promise<void> {
    const owner = this.signedIn(caller);
    if (!(await this.deps.store.remove(this.deps.transactions.direct, id, owner))) throw notFound();
  }

  /** A new secret, shown once; the old one signs beside it for webhooks.secretOverlapInSeconds. */
  async rotate(caller: Caller, id: ElementId): Promise<{ secret: string }> {
    const w = await this.owned(caller, id);
    const secret = newSecret();
    const now = this.deps.now();
    const until = new Date(now.getTime() + this.deps.settings.webhooks.secretOverlapInSeconds * 1000);
    const sealed = await this.deps.secrets.seal(secret);
    await this.deps.store.rotate(this.deps.transactions.direct, w.id, sealed, w.secret, until, now);
    return { secret };
  }

  async deliveries(caller: Caller, id: ElementId, query: PageRequest) {
    const w = await this.owned(caller, id);
    const paging = pagination(query, this.deps.settings.pageSize);
    const offset = (paging.page - 1) * paging.pageSize;
    const { items, total } = await this.deps.store.deliveries(
      this.deps.transactions.direct,
      w.id,
      offset,
      paging.pageSize,
    );
    return page(
      `/webhooks/${w.id}/deliveries`,
      paging,
      total,
      items.map(deliveryView),
      this.deps.settings.pageSize.default,
    );
  }

  /** Sends a logged delivery's message again now, outside the webhook's queue; the new attempt. */
  async redeliver(caller: Caller, id: ElementId, deliveryId: ElementId) {
    const w = await this.owned(caller, id);
    const old = await this.deps.store.delivery(this.deps.transactions.direct, w.id, deliveryId);
    if (!old) throw notFound();
    return this.sendNow(w, { id: old.messageId, type: old.eventType, payload: old.payload });
  }

  async ping(caller: Caller, id: ElementId) {
    const w = await this.owned(caller, id);
    return this.sendNow(w, pingMessage(w.id, newId(), this.deps.now()));
  }

  private async sendNow(w: StoredWebhook, message: Message) {
    const outcome = await this.deps.dispatcher.send(w, message);
    const delivery: Delivery = {
      id: newId(),
      webhookId: w.id,
      messageId: message.id,
      eventType: message.type,
      payload: message.payload,
      attempted: this.deps.now(),
      attempt: 1,
      status: outcome.status,
      error: outcome.error,
      durationMs: outcome.durationMs,
      response: outcome.response,
      nextRetry: null,
    };
    await this.deps.store.record(this.deps.transactions.direct, delivery);
    return deliveryView(delivery);
  }

  /** Drops the delivery log older than webhooks.deliveryLogRetentionInSeconds. */
  pruneDeliveries(): Promise<number> {
    const before = new Date(
      this.deps.now().getTime() - this.deps.settings.webhooks.deliveryLogRetentionInSeconds * 1000,
    );
    return this.deps.store.pruneDeliveries(this.deps.transactions.direct, before);
  }

  /**
   * What the outbox must keep for enabled webhooks: the events after the oldest cursor, unless older than the
   * retention and the whole retry schedule together.
   */
  async retained(): Promise<Retained | null> {
    const cursor = await this.deps.store.oldestCursor(this.deps.transactions.direct);
    if (!cursor) return null;
    const { webhooks, events } = this.deps.settings;
    const window = events.retentionInSeconds + webhooks.retryScheduleInSeconds.reduce((a, b) => a + b, 0);
    return { cursor, notBefore: new Date(this.deps.now().getTime() - window * 1000) };
  }
}
