// SQL of the collection endpoints: one statement per request that authenticates, checks the anchor, filters by
// access, counts and pages.

import type { Credentials } from '../../domain/accounts/types.js';
import type { CollectionKind } from '../../domain/elements/types.js';
import {
  type AccessDecisions,
  decisionKey,
  EPOCH_SQL,
  expiresMsSql,
  whileEpochStands,
  withDecision,
} from '../access-decisions.js';
import type { Queryable } from '../db.js';
import { allowsSql, grantedSql, inlineReadCheck, principalsSql } from './access.js';
import { callerParams, callerSql } from './accounts.js';
import { elementArraySql } from './element-json.js';
import { ELEMENT_COLUMNS } from './elements.js';

// Which relations connect the anchor (`p.anchor_id`) to the members, and which end of each is the member.
// `inherits`: every member and relation is readable when the caller's READ on the anchor comes from an OWNS path
// or a READ grant, because those propagate down OWNS (docs/architecture.md "Access model"), or when the anchor is one of the
// caller's principals (its User node or one of its groups), whose OWNS make the caller an owner; the per-row check
// is then skipped.
// `nodesOnly`: the page lists its nodes and no relations (the index, as in the reference implementation, whose
// clients take every listed relation for content); the relations still decide the members and the count.
const SHAPES: Record<CollectionKind, { where: string; other: string; inherits?: boolean; nodesOnly?: boolean }> = {
  index: {
    where: `e.start_id = p.anchor_id AND e.type IN ('OWNS', 'IS_IN_GROUP', 'HAS_READ_ACCESS')`,
    other: 'e.end_id',
    nodesOnly: true,
  },
  children: { where: `e.start_id = p.anchor_id AND e.type = 'OWNS'`, other: 'e.end_id', inherits: true },
  // Every incoming relation (spec: "the elements that have a relation pointing to the element, including access
  // relations"), so that every grant, membership and CREATED on an element can be found and revoked.
  parents: { where: `e.end_id = p.anchor_id`, other: 'e.start_id' },
  related: {
    where: `(e.start_id = p.anchor_id OR e.end_id = p.anchor_id)`,
    other: 'CASE WHEN e.start_id = p.anchor_id THEN e.end_id ELSE e.start_id END',
  },
};

export interface CollectionPage {
  /** False when the credentials name no user (401); nothing else is then known. */
  authenticated: boolean;
  /** False when the anchor is missing or the caller may not read it (404); the page is then empty. */
  found: boolean;
  total: number;
  /** The JSON arrays of the page's nodes and relations (element-json.ts), ordered by member id, then relation id. */
  nodesJson: string;
  relationsJson: string;
}

/**
 * The page's part of a collection statement, given a CTE `p` with the anchor_id (and, for a per-row check
 * `readable`, the user_id, ids and inherited).
 */
function pageSql(shape: (typeof SHAPES)[CollectionKind], readable: string, limit: string, offset: string): string {
  return `rels AS MATERIALIZED (
       SELECT ${ELEMENT_COLUMNS}, ${shape.other} AS other FROM p, elements e
       WHERE ${shape.where} AND ${readable}
     ),
     members AS (SELECT DISTINCT other FROM rels),
     page AS (SELECT other FROM members ORDER BY other LIMIT ${limit} OFFSET ${offset})`;
}

/** The columns every collection statement ends with: the count and the rendered page. */
const pageColumns = (
  shape: (typeof SHAPES)[CollectionKind],
  readable: string,
) => `(SELECT count(*) FROM members) AS total,
            (SELECT ${elementArraySql('e', 'e.id')} FROM page JOIN elements e ON e.id = page.other, p WHERE ${readable}) AS nodes,
            ${shape.nodesOnly ? `'[]'` : `(SELECT ${elementArraySql('r', 'r.other, r.id')} FROM rels r JOIN page ON page.other = r.other)`} AS relations`;

/**
 * One collection page in one statement: resolves the credentials (callerSql), checks READ on the anchor
 * (inlineReadCheck; for the index the anchor is the caller's own User node, always readable), then filters by
 * access, counts and pages. Members are the far ends of the readable relations that connect the anchor; the page
 * is over members ordered by id. Listed nodes are the readable members of the page; listed relations are the
 * readable relations to them. `anchorId` is ignored for the index. The one row always comes back and says
 * whether the caller was authenticated and the anchor found and readable; when not, `p` is empty and so is the page.
 * The elements come rendered as JSON by the database (element-json.ts says why).
 *
 * With `decisions`, for a shape whose members inherit the anchor's READ (children): when these credentials were
 * allowed to READ the anchor by inheritance before, under the current access epoch, that is not decided again
 * (access-decisions.ts): the statement is then the page alone, with the epoch (on PGlite the epoch this process
 * was notified of), and the anchor's existence. Anything that could take the inheritance away (an OWNS or a grant
 * removed, a token revoked) moves the epoch; a child added since is readable by the same inheritance.
 */
export async function collectionPage(
  q: Queryable,
  kind: CollectionKind,
  credentials: Credentials,
  now: Date,
  anchorId: string | null,
  limit: number,
  offset: number,
  decisions?: AccessDecisions,
): Promise<CollectionPage> {
  const shape = SHAPES[kind];
  const decide = async () => {
    const caller = callerSql(credentials);
    const params: unknown[] = [...callerParams(credentials, now), limit, offset];
    // $1-$3 are callerSql's, $4 and $5 limit and offset, $6 the anchor (not for the index).
    // The anchor, whether the caller may read it, and whether that READ reaches the members by inheritance.
    let anchor = `SELECT caller.user_id AS id, true AS allowed, false AS inherited FROM caller`;
    if (kind !== 'index') {
      params.push(anchorId);
      // The caller's own principals (its User node, its groups) count too: what they OWN, the caller owns.
      const principals = principalsSql('caller.user_id');
      const inherited = shape.inherits
        ? `e.id IS NOT NULL AND (e.id = ANY(${principals}) OR ${grantedSql(principals, 'e.id', 'READ')})`
        : 'false';
      anchor = `SELECT e.id, ${inlineReadCheck('caller.user_id')} AS allowed, ${inherited} AS inherited
        FROM caller LEFT JOIN elements e ON e.id = $6::uuid`;
    }
    // CASE, not OR: the cheap answer is taken without evaluating the per-row check.
    const readable = `CASE WHEN p.inherited THEN true ELSE ${allowsSql('p.user_id', 'p.ids', `'READ'`)} END`;
    // Only a shape whose members inherit reads what a decision needs (the epoch costs PGlite a table scan).
    const decision = shape.inherits
      ? `, (SELECT inherited FROM p) AS inherited, ${EPOCH_SQL} AS epoch, (SELECT ${expiresMsSql('c')} FROM caller c) AS expires`
      : '';
    const { rows } = await q.query<
      PageRow & { authenticated: boolean; inherited?: boolean | null; epoch?: string; expires?: number | null }
    >(
      `WITH caller AS MATERIALIZED (${caller.sql}),
       anchor AS MATERIALIZED (${anchor}),
       p AS MATERIALIZED (
         SELECT caller.user_id, anchor.id AS anchor_id, ${principalsSql('caller.user_id')} AS ids, anchor.inherited
         FROM caller, anchor
         WHERE anchor.allowed
       ),
       ${pageSql(shape, readable, '$4', '$5')}
       SELECT EXISTS (SELECT 1 FROM caller) AS authenticated, EXISTS (SELECT 1 FROM p) AS found,
              ${pageColumns(shape, readable)}${decision}`,
      params,
      `collection_${kind}${caller.suffix}`,
    );
    const row = rows[0]!;
    const result = { authenticated: row.authenticated, ...fromRow(row) };
    return { result, decision: row.inherited === true ? { epoch: row.epoch!, expires: row.expires ?? null } : null };
  };
  if (!shape.inherits || decisions === undefined || anchorId === null) return (await decide()).result;

  const known = (epoch: string) =>
    whileEpochStands(decisions.sessionEpoch, epoch, async (readEpoch) => {
      const name = `${readEpoch ? 'known' : 'session'}_collection_${kind}`;
      let text = knownPageSql.get(name);
      if (text === undefined) {
        text = `WITH p AS MATERIALIZED (SELECT $1::uuid AS anchor_id),
           ${pageSql(shape, 'true', '$2', '$3')}
           SELECT EXISTS (SELECT 1 FROM elements a WHERE a.id = $1::uuid) AS found, ${pageColumns(shape, 'true')}
                  ${readEpoch ? `, ${EPOCH_SQL} AS epoch` : ''}`;
        knownPageSql.set(name, text);
      }
      const { rows } = await q.query<PageRow & { epoch?: string }>(text, [anchorId, limit, offset], name);
      return { result: { authenticated: true, ...fromRow(rows[0]!) }, epoch: rows[0]!.epoch };
    });
  return withDecision(decisions, decisionKey(credentials, 'READ_MEMBERS', anchorId), now, known, decide);
}

/** The statements of remembered pages by name, built once (the text never changes). */
const knownPageSql = new Map<string, string>();

interface PageRow {
  found: boolean;
  total: string;
  nodes: string;
  relations: string;
}

const fromRow = (row: PageRow) => ({
  found: row.found,
  total: Number(row.total),
  nodesJson: row.nodes,
  relationsJson: row.relations,
});
