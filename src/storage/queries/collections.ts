// SQL of the collection endpoints: one statement per page that filters by access, counts and pages.
import type { Queryable } from '../db.js';
import { allowsSql } from './access.js';
import { ELEMENT_COLUMNS, type ElementRow } from './elements.js';

export type CollectionKind = 'index' | 'parents' | 'children' | 'related';

// Which relations connect the anchor ($2) to the members, and which end of each is the member.
// `inherits`: every member and relation is readable when the caller's READ on the anchor comes from an OWNS path
// or a READ grant, because those propagate down OWNS (DESIGN.md access model); the per-row check is then skipped.
const SHAPES: Record<CollectionKind, { where: string; other: string; inherits?: boolean }> = {
  index: { where: `e.start_id = $2 AND e.type IN ('OWNS', 'IS_IN_GROUP', 'HAS_READ_ACCESS')`, other: 'e.end_id' },
  children: { where: `e.start_id = $2 AND e.type = 'OWNS'`, other: 'e.end_id', inherits: true },
  parents: {
    where: `e.end_id = $2 AND e.type IN ('OWNS', 'HAS_READ_ACCESS', 'HAS_SEARCH_ACCESS', 'HAS_CREATE_ACCESS', 'HAS_UPDATE_ACCESS', 'HAS_DELETE_ACCESS')`,
    other: 'e.start_id',
  },
  related: { where: `(e.start_id = $2 OR e.end_id = $2)`, other: 'CASE WHEN e.start_id = $2 THEN e.end_id ELSE e.start_id END' },
};

export interface CollectionPage {
  total: number;
  nodes: ElementRow[];
  relations: ElementRow[];
}

/**
 * Members are the far ends of the readable relations that connect the anchor; the page is over members ordered
 * by id. Listed nodes are the readable members of the page; listed relations are the readable relations to them.
 */
export async function collectionPage(
  q: Queryable,
  kind: CollectionKind,
  userId: string,
  anchorId: string,
  limit: number,
  offset: number,
): Promise<CollectionPage> {
  const shape = SHAPES[kind];
  const inherited = shape.inherits ? `trellis_granted(ids, $2::uuid, trellis_grant_types('READ'))` : 'false';
  // CASE, not OR: the cheap answer is taken without evaluating the per-row check.
  const readable = `CASE WHEN p.inherited THEN true ELSE ${allowsSql('$1::uuid', 'p.ids', `'READ'`)} END`;
  const { rows } = await q.query<ElementRow & { kind: 'total' | 'node' | 'relation'; total: number; other: string | null }>(
    `WITH p AS MATERIALIZED (
       SELECT ids, ${inherited} AS inherited FROM (SELECT trellis_principals($1::uuid) AS ids) q
     ),
     rels AS MATERIALIZED (
       SELECT ${ELEMENT_COLUMNS}, ${shape.other} AS other FROM elements e, p
       WHERE ${shape.where} AND ${readable}
     ),
     members AS (SELECT DISTINCT other FROM rels),
     page AS (SELECT other FROM members ORDER BY other LIMIT $3 OFFSET $4)
     SELECT 'total' AS kind, (SELECT count(*) FROM members) AS total, NULL::uuid AS other,
            NULL::uuid AS id, NULL AS type, NULL::uuid AS start_id, NULL::uuid AS end_id, NULL::jsonb AS data,
            NULL::jsonb AS file, NULL::timestamptz AS created, NULL::timestamptz AS updated
     UNION ALL
     SELECT 'node', 0, e.id, ${ELEMENT_COLUMNS} FROM page JOIN elements e ON e.id = page.other, p
       WHERE ${readable}
     UNION ALL
     SELECT 'relation', 0, r.other, r.id, r.type, r.start_id, r.end_id, r.data, r.file, r.created, r.updated
       FROM rels r JOIN page ON page.other = r.other`,
    [userId, anchorId, limit, offset],
    `collection_${kind}`,
  );
  const byId = (a: ElementRow & { other: string | null }, b: ElementRow & { other: string | null }) =>
    a.other! < b.other! ? -1 : a.other! > b.other! ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  return {
    total: Number(rows.find((r) => r.kind === 'total')?.total ?? 0),
    nodes: rows.filter((r) => r.kind === 'node').sort(byId),
    relations: rows.filter((r) => r.kind === 'relation').sort(byId),
  };
}
