// The WebhookStore port (domain/webhooks/ports.ts) in SQL over schema/webhooks.ts.
import type { Cursor } from '../domain/events/cursor.js';
import type { Change } from '../domain/events/ports.js';
import type { Scope } from '../domain/events/subscription.js';
import type { Delivery, DeliveryError, StoredWebhook, WebhookStore } from '../domain/webhooks/ports.js';
import { storedElementId } from '../values.js';
import type { Queryable } from './db.js';
import { queryable } from './transactions.js';

interface WebhookRow {
  id: string;
  owner_id: string;
  url: string;
  events: string[];
  scope: 'all' | 'ids' | 'parent';
  watched: string[];
  description: string;
  secret: Buffer | Uint8Array;
  previous_secret: Buffer | Uint8Array | null;
  previous_until: Date | null;
  enabled: boolean;
  disabled_reason: string | null;
  cursor_xid: string;
  cursor_seq: string;
  attempts: number;
  due: Date;
  lease_token: string | null;
  created: Date;
  updated: Date;
}

interface DeliveryRow {
  id: string;
  webhook_id: string;
  message_id: string;
  event_type: string;
  payload: string;
  attempted: Date;
  attempt: number;
  status: number | null;
  error: string | null;
  duration_ms: number;
  response: string | null;
  next_retry: Date | null;
}

/** The columns a webhook is read with, of the table named `t` when given. */
const columns = (t = '') =>
  [
    'id',
    'owner_id',
    'url',
    'events',
    'scope',
    'watched',
    'description',
    'secret',
    'previous_secret',
    'previous_until',
    'enabled',
    'disabled_reason',
    'cursor_xid::text AS cursor_xid',
    'cursor_seq::text AS cursor_seq',
    'attempts',
    'due',
    'lease_token',
    'created',
    'updated',
  ]
    .map((c) => `${t}${c}`)
    .join(', ');
const COLUMNS = columns();

function scopeOf(row: WebhookRow): Scope {
  const ids = row.watched.map(storedElementId);
  if (row.scope === 'parent') return { kind: 'parent', id: ids[0]! };
  if (row.scope === 'ids') return { kind: 'ids', ids: new Set(ids) };
  return { kind: 'all' };
}

function webhookOf(row: WebhookRow): StoredWebhook {
  return {
    id: storedElementId(row.id),
    ownerId: storedElementId(row.owner_id),
    url: row.url,
    events: row.events as Change[],
    scope: scopeOf(row),
    description: row.description,
    secret: Buffer.from(row.secret),
    previousSecret: row.previous_secret ? Buffer.from(row.previous_secret) : null,
    previousUntil: row.previous_until,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    cursor: { xid: BigInt(row.cursor_xid), seq: BigInt(row.cursor_seq) },
    attempts: row.attempts,
    due: row.due,
    leaseToken: row.lease_token,
    created: row.created,
    updated: row.updated,
  };
}

function deliveryOf(row: DeliveryRow): Delivery {
  return {
    id: storedElementId(row.id),
    webhookId: storedElementId(row.webhook_id),
    messageId: row.message_id,
    eventType: row.event_type,
    payload: row.payload,
    attempted: row.attempted,
    attempt: row.attempt,
    status: row.status,
    error: row.error as DeliveryError | null,
    durationMs: row.duration_ms,
    response: row.response,
    nextRetry: row.next_retry,
  };
}

const cursorParams = (c: Cursor) => [c.xid.toString(), c.seq.toString()];

async function counted<R>(q: Queryable, sql: string, params: unknown[], name: string) {
  const { rows } = await q.query<R & { total: string }>(sql, params, name);
  return { rows, total: Number(rows[0]?.total ?? 0) };
}

export const sqlWebhookStore: WebhookStore = {
  async lockOwner(tx, ownerId) {
    await queryable(tx).query(
      "SELECT pg_advisory_xact_lock(hashtextextended('webhooks ' || $1::text, 0))",
      [ownerId],
      'webhooks_lock_owner',
    );
  },

  async count(tx, ownerId) {
    const { rows } = await queryable(tx).query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhooks WHERE owner_id = $1',
      [ownerId],
      'webhooks_count',
    );
    return rows[0]!.n;
  },

  async insert(tx, w) {
    const watched = w.scope.kind === 'ids' ? [...w.scope.ids] : w.scope.kind === 'parent' ? [w.scope.id] : [];
    await queryable(tx).query(
      `INSERT INTO webhooks (id, owner_id, url, events, scope, watched, description, secret, cursor_xid, cursor_seq,
         due, created, updated)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::xid8, $10, $11, $11, $11)`,
      [
        w.id,
        w.ownerId,
        w.url,
        w.events,
        w.scope.kind,
        watched,
        w.description,
        w.secret,
        ...cursorParams(w.cursor),
        w.created,
      ],
      'webhooks_insert',
    );
  },

  async get(tx, id, ownerId, lock = false) {
    const { rows } = await queryable(tx).query<WebhookRow>(
      `SELECT ${COLUMNS} FROM webhooks WHERE id = $1 AND owner_id = $2${lock ? ' FOR UPDATE' : ''}`,
      [id, ownerId],
      lock ? 'webhooks_get_locked' : 'webhooks_get',
    );
    return rows[0] ? webhookOf(rows[0]) : null;
  },

  async list(tx, ownerId, offset, limit) {
    const { rows, total } = await counted<WebhookRow>(
      queryable(tx),
      `SELECT ${COLUMNS}, count(*) OVER () AS total FROM webhooks WHERE owner_id = $1
       ORDER BY created, id OFFSET $2 LIMIT $3`,
      [ownerId, offset, limit],
      'webhooks_list',
    );
    if (rows.length > 0 || offset === 0) return { items: rows.map(webhookOf), total };
    return { items: [], total: await sqlWebhookStore.count(tx, ownerId) };
  },

  async update(tx, id, changes, now) {
    await queryable(tx).query(
      `UPDATE webhooks SET url = COALESCE($2, url), events = COALESCE($3, events),
         description = COALESCE($4, description), updated = $6,
         enabled = COALESCE($5, enabled),
         disabled_reason = CASE WHEN $5 IS NULL THEN disabled_reason WHEN $5 THEN NULL ELSE 'Disabled by its owner.' END,
         disabled_at = CASE WHEN $5 IS NULL OR $5 = enabled THEN disabled_at WHEN $5 THEN NULL ELSE $6 END,
         attempts = CASE WHEN $5 AND NOT enabled THEN 0 ELSE attempts END,
         due = CASE WHEN $5 AND NOT enabled THEN $6 ELSE due END
       WHERE id = $1`,
      [id, changes.url ?? null, changes.events ?? null, changes.description ?? null, changes.enabled ?? null, now],
      'webhooks_update',
    );
  },

  async rotate(tx, id, secret, previous, previousUntil, now) {
    await queryable(tx).query(
      'UPDATE webhooks SET secret = $2, previous_secret = $3, previous_until = $4, updated = $5 WHERE id = $1',
      [id, secret, previous, previousUntil, now],
      'webhooks_rotate',
    );
  },

  async remove(tx, id, ownerId) {
    const { rows } = await queryable(tx).query(
      'DELETE FROM webhooks WHERE id = $1 AND owner_id = $2 RETURNING id',
      [id, ownerId],
      'webhooks_delete',
    );
    return rows.length > 0;
  },

  async lastDeliveries(tx, ids) {
    const { rows } = await queryable(tx).query<DeliveryRow>(
      `SELECT d.* FROM unnest($1::uuid[]) w(id), LATERAL (
         SELECT * FROM webhook_deliveries d WHERE d.webhook_id = w.id ORDER BY attempted DESC, id DESC LIMIT 1) d`,
      [ids],
      'webhooks_last_deliveries',
    );
    return new Map(rows.map((r) => [storedElementId(r.webhook_id), deliveryOf(r)]));
  },

  async deliveries(tx, webhookId, offset, limit) {
    const q = queryable(tx);
    const { rows } = await q.query<DeliveryRow>(
      `SELECT * FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY attempted DESC, id DESC OFFSET $2 LIMIT $3`,
      [webhookId, offset, limit],
      'webhooks_deliveries',
    );
    const count = await q.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1',
      [webhookId],
      'webhooks_deliveries_count',
    );
    return { items: rows.map(deliveryOf), total: count.rows[0]!.n };
  },

  async delivery(tx, webhookId, deliveryId) {
    const { rows } = await queryable(tx).query<DeliveryRow>(
      'SELECT * FROM webhook_deliveries WHERE webhook_id = $1 AND id = $2',
      [webhookId, deliveryId],
      'webhooks_delivery',
    );
    return rows[0] ? deliveryOf(rows[0]) : null;
  },

  async claim(tx, now, leaseUntil, limit, exclude) {
    const { rows } = await queryable(tx).query<WebhookRow>(
      `WITH due AS (
         SELECT w.id FROM webhooks w
         WHERE w.enabled AND w.due <= $1 AND (w.lease_until IS NULL OR w.lease_until <= $1)
           AND NOT (w.id = ANY ($4::uuid[]))
           AND (EXISTS (SELECT 1 FROM element_events e WHERE (e.xid, e.seq) > (w.cursor_xid, w.cursor_seq))
                OR EXISTS (SELECT 1 FROM element_events_horizon h WHERE (h.xid, h.seq) > (w.cursor_xid, w.cursor_seq)))
         ORDER BY w.due LIMIT $3
         FOR UPDATE SKIP LOCKED
       )
       UPDATE webhooks w SET lease_until = $2, lease_token = gen_random_uuid() FROM due WHERE w.id = due.id
       RETURNING ${columns('w.')}`,
      [now, leaseUntil, limit, exclude],
      'webhooks_claim',
    );
    return rows.map(webhookOf);
  },

  async settle(tx, id, leaseToken, s, attempts) {
    const column = <K extends keyof Delivery>(key: K) => attempts.map((d) => d[key]);
    await queryable(tx).query(
      `WITH logged AS (
         INSERT INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, attempted, attempt, status,
           error, duration_ms, response, next_retry)
         SELECT d.id, $1, d.message_id, d.event_type, d.payload, d.attempted, d.attempt, d.status, d.error,
           d.duration_ms, d.response, d.next_retry
         FROM unnest($9::uuid[], $10::text[], $11::text[], $12::text[], $13::timestamptz[], $14::int[], $15::int[],
           $16::text[], $17::int[], $18::text[], $19::timestamptz[])
           AS d (id, message_id, event_type, payload, attempted, attempt, status, error, duration_ms, response, next_retry)
         WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = $1)
       )
       UPDATE webhooks SET cursor_xid = $3::xid8, cursor_seq = $4, attempts = $5, due = $6,
         lease_until = NULL, lease_token = NULL,
         enabled = enabled AND $7::text IS NULL,
         disabled_reason = CASE WHEN $7::text IS NULL OR NOT enabled THEN disabled_reason ELSE $7 END,
         disabled_at = CASE WHEN $7::text IS NULL OR NOT enabled THEN disabled_at ELSE $8 END
       WHERE id = $1 AND lease_token = $2`,
      [
        id,
        leaseToken,
        ...cursorParams(s.cursor),
        s.attempts,
        s.due,
        s.disabledReason,
        s.now,
        column('id'),
        column('messageId'),
        column('eventType'),
        column('payload'),
        column('attempted'),
        column('attempt'),
        column('status'),
        column('error'),
        column('durationMs'),
        column('response'),
        column('nextRetry'),
      ],
      'webhooks_settle',
    );
  },

  async record(tx, d) {
    await queryable(tx).query(
      `INSERT INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, attempted, attempt, status,
         error, duration_ms, response, next_retry)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = $2)`,
      [
        d.id,
        d.webhookId,
        d.messageId,
        d.eventType,
        d.payload,
        d.attempted,
        d.attempt,
        d.status,
        d.error,
        d.durationMs,
        d.response,
        d.nextRetry,
      ],
      'webhooks_record',
    );
  },

  async oldestCursor(tx) {
    const { rows } = await queryable(tx).query<{ xid: string; seq: string }>(
      `SELECT cursor_xid::text AS xid, cursor_seq::text AS seq FROM webhooks WHERE enabled
       ORDER BY cursor_xid, cursor_seq LIMIT 1`,
      [],
      'webhooks_oldest_cursor',
    );
    return rows[0] ? { xid: BigInt(rows[0].xid), seq: BigInt(rows[0].seq) } : null;
  },

  async pruneDeliveries(tx, before) {
    const { rows } = await queryable(tx).query<{ n: number }>(
      'WITH gone AS (DELETE FROM webhook_deliveries WHERE attempted < $1 RETURNING 1) SELECT count(*)::int AS n FROM gone',
      [before],
      'webhooks_prune_deliveries',
    );
    return rows[0]!.n;
  },

  async stats(tx, now) {
    const { rows } = await queryable(tx).query<{ enabled: number; disabled: number; oldest: Date | null }>(
      `SELECT count(*) FILTER (WHERE enabled)::int AS enabled, count(*) FILTER (WHERE NOT enabled)::int AS disabled,
         min(n.at) AS oldest
       FROM webhooks w LEFT JOIN LATERAL (
         SELECT e.at FROM element_events e WHERE w.enabled AND (e.xid, e.seq) > (w.cursor_xid, w.cursor_seq)
         ORDER BY e.xid, e.seq LIMIT 1) n ON true`,
      [],
      'webhooks_stats',
    );
    const r = rows[0]!;
    const lagSeconds = r.oldest ? Math.max(0, (now.getTime() - r.oldest.getTime()) / 1000) : 0;
    return { enabled: r.enabled, disabled: r.disabled, lagSeconds };
  },
};
