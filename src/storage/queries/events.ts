// The change feed's statements over the outbox (schema/events.ts). A read takes only rows below the point that no
// running transaction of this database can add to (trellis_events_stable, docs/decisions/028-event-order.md).
import type { Retained } from '../../domain/events/ports.js';
import type { Queryable } from '../db.js';

export interface EventRow {
  xid: string | null;
  seq: string | null;
  at: Date | null;
  change: string | null;
  element_id: string | null;
  type: string | null;
  start_id: string | null;
  end_id: string | null;
  body: string | null;
  parents: string[] | null;
  readers: string[] | null;
  readers_end: string[] | null;
  stable: string;
  lost: boolean;
  pending: boolean;
}

/**
 * One page after ($1, $2), at or below ($3, $4) when $3 is given, at most $5 rows; every row carries the stable
 * point, whether the cursor lies below the pruned horizon, and whether committed rows wait above it (a LEFT
 * JOIN, so an empty page still answers one row of these).
 */
const READ = `
WITH s AS MATERIALIZED (SELECT trellis_events_stable() AS xmin),
page AS (
  SELECT e.* FROM element_events e, s
  WHERE (e.xid, e.seq) > ($1::xid8, $2::bigint) AND e.xid < s.xmin
    AND ($3::xid8 IS NULL OR (e.xid, e.seq) <= ($3::xid8, $4::bigint))
  ORDER BY e.xid, e.seq
  LIMIT $5
)
SELECT s.xmin::text AS stable,
       (SELECT (h.xid, h.seq) > ($1::xid8, $2::bigint) FROM element_events_horizon h) AS lost,
       EXISTS (SELECT 1 FROM element_events w WHERE w.xid >= s.xmin) AS pending,
       p.xid::text AS xid, p.seq::text AS seq, p.at, p.change, p.element_id, p.type, p.start_id, p.end_id, p.body,
       p.parents, p.readers, p.readers_end
FROM s LEFT JOIN page p ON true
ORDER BY p.xid, p.seq`;

export async function readEvents(
  q: Queryable,
  after: { xid: bigint; seq: bigint },
  limit: number,
  upTo: { xid: bigint; seq: bigint } | null,
): Promise<EventRow[]> {
  const { rows } = await q.query<EventRow>(
    READ,
    [after.xid.toString(), after.seq.toString(), upTo?.xid.toString() ?? null, upTo?.seq.toString() ?? '0', limit],
    'read_events',
  );
  return rows;
}

interface AudienceRow {
  user_id: string;
  principals: string[];
  readable: string[];
}

/** Per user: its principals and which of the ids it may READ, by the access rules (schema/access.ts). */
export async function readersOf(q: Queryable, userIds: string[], ids: string[]): Promise<AudienceRow[]> {
  const { rows } = await q.query<AudienceRow>(
    `SELECT u.id AS user_id, p.principals,
            ARRAY(SELECT e.id FROM elements e
                  WHERE e.id = ANY($2::uuid[])
                    AND trellis_allows(u.id, p.principals, 'READ', e.id, e.start_id, e.end_id, e.type)) AS readable
     FROM unnest($1::uuid[]) u(id), LATERAL (SELECT trellis_principals(u.id) AS principals) p`,
    [userIds, ids],
    'event_readers',
  );
  return rows;
}

interface ShapeRow {
  id: string;
  type: string;
  relation: boolean;
  parents: string[];
}

/** The ids that exist: their type, kind and OWNS parents. */
export async function shapesOf(q: Queryable, ids: string[]): Promise<ShapeRow[]> {
  const { rows } = await q.query<ShapeRow>(
    `SELECT e.id, e.type, e.start_id IS NOT NULL AS relation,
            ARRAY(SELECT p.start_id FROM elements p WHERE p.end_id = e.id AND p.type = 'OWNS') AS parents
     FROM elements e WHERE e.id = ANY($1::uuid[])`,
    [ids],
    'event_shapes',
  );
  return rows;
}

export async function activeTokenHashes(q: Queryable, hashes: string[], now: Date): Promise<string[]> {
  const { rows } = await q.query<{ hash: string }>(
    `SELECT hash FROM tokens WHERE hash = ANY($1::text[]) AND state = 'ACTIVE' AND (expires IS NULL OR expires > $2)`,
    [hashes, now],
    'event_active_tokens',
  );
  return rows.map((r) => r.hash);
}

/**
 * Drops the final rows up to the last one written before $1, in feed order, and moves the horizon there: a cursor
 * below it has lost events. Concurrent prunes of several instances delete disjoint or no rows. Rows after `keep`'s
 * cursor stay unless written before its `notBefore` (what enabled webhooks still have to deliver).
 */
export async function pruneEvents(q: Queryable, before: Date, keep: Retained | null): Promise<number> {
  const { rows } = await q.query<{ n: string }>(
    `WITH bound AS (
       SELECT e.xid, e.seq FROM element_events e
       WHERE e.at < $1 AND e.xid < trellis_events_stable()
         AND ($2::xid8 IS NULL OR (e.xid, e.seq) <= ($2::xid8, $3::bigint) OR e.at < $4)
       ORDER BY e.xid DESC, e.seq DESC LIMIT 1
     ), gone AS (
       DELETE FROM element_events e USING bound b WHERE (e.xid, e.seq) <= (b.xid, b.seq) RETURNING 1
     ), moved AS (
       UPDATE element_events_horizon h SET xid = b.xid, seq = b.seq FROM bound b
       WHERE (h.xid, h.seq) < (b.xid, b.seq) RETURNING 1
     )
     SELECT count(*)::text AS n FROM gone`,
    [before, keep?.cursor.xid.toString() ?? null, keep?.cursor.seq.toString() ?? '0', keep?.notBefore ?? null],
    'prune_events',
  );
  return Number(rows[0]?.n ?? 0);
}
