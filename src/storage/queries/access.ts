// The one access module: every capability asks "which of these ids may user U do P on" here, in one statement.
import type { Permission } from '../../domain/elements/types.js';
import type { Queryable } from '../db.js';
import { searchKeysSql } from '../schema/access-keys.js';

/** SQL boolean expression: may user `$user` (with principals `principals`) do `perm` on the row alias `e`. */
export const allowsSql = (user: string, principals: string, perm: string, e = 'e') =>
  `trellis_allows(${user}, ${principals}, ${perm}, ${e}.id, ${e}.start_id, ${e}.end_id, ${e}.type)`;

/** Relation types that grant a permission on their end and on what it owns (trellis_grant_types, migration 004). */
const GRANT_TYPES: Record<Permission, string[]> = {
  READ: ['OWNS', 'HAS_READ_ACCESS'],
  SEARCH: ['OWNS', 'HAS_SEARCH_ACCESS', 'HAS_READ_ACCESS'],
  CREATE: ['OWNS', 'HAS_CREATE_ACCESS'],
  UPDATE: ['OWNS', 'HAS_UPDATE_ACCESS'],
  DELETE: ['OWNS', 'HAS_DELETE_ACCESS'],
};

/**
 * A permission on one element, inlined into the caller's statement: the same rules as trellis_node_allows
 * (migration 004), written out so that the statement is planned once as a prepared statement instead of entering
 * the PL/pgSQL functions. The caller's groups and the element's owners come from the access index (migration 005),
 * so the check is a few index probes: one range of element_owners, then per owner one probe of the (end_id, type)
 * index for a grant whose start is one of the caller's principals (for READ and SEARCH, on the element itself also
 * its creator: one probe for both, so that the planner cannot pick the (start_id, type) index and scan everything
 * the user created), and for READ, SEARCH and CREATE whether the element is one of the caller's principals (one
 * probe of group_memberships). Plain subqueries rather than CTEs: executor set-up per CTE dominates at this size
 * (docs/decisions/011-access-index.md). Relations, whose rules look at both ends, go through trellis_allows. `user` is a SQL
 * expression for the caller's id, `e` the element row (NULL columns when missing). The access-matrix tests check
 * this and the functions against one table.
 */
export function inlineCheck(user: string, permission: Permission, e = 'e'): string {
  const key = `${user}|${permission}|${e}`;
  let sql = inlined.get(key);
  if (sql === undefined) {
    sql = buildInlineCheck(user, permission, e);
    inlined.set(key, sql);
  }
  return sql;
}

// The statements embedding a check are built per request; the check's text is built once per shape.
const inlined = new Map<string, string>();

function buildInlineCheck(user: string, permission: Permission, e: string): string {
  const readLike = permission === 'READ' || permission === 'SEARCH';
  const types = [...GRANT_TYPES[permission], ...(readLike ? ['CREATED'] : [])].map((t) => `'${t}'`).join(', ');
  const principals = `${user} || ARRAY(SELECT m.group_id FROM group_memberships m WHERE m.member_id = ${user})`;
  // The caller's own principals (itself and its groups): one probe of group_memberships' primary key, after the
  // grant probes, so that an element the caller owns is decided as before.
  const principal = PRINCIPAL_PERMISSIONS.has(permission)
    ? ` OR EXISTS (SELECT 1 FROM group_memberships m WHERE m.member_id = ${user} AND m.group_id = ${e}.id)`
    : '';
  return `CASE
      WHEN ${e}.id IS NULL OR ${user} IS NULL THEN false
      WHEN ${e}.start_id IS NOT NULL THEN ${allowsSql(user, `trellis_principals(${user})`, `'${permission}'`, e)}
      ELSE ${PRINCIPAL_PERMISSIONS.has(permission) ? `${e}.id = ${user} OR ` : ''}EXISTS (
          SELECT 1 FROM (SELECT ${e}.id AS id UNION ALL SELECT o.owner_id FROM element_owners o WHERE o.element_id = ${e}.id) up
          JOIN elements g ON g.end_id = up.id AND g.type IN (${types})
          WHERE ${readLike ? `CASE WHEN g.type = 'CREATED' THEN g.end_id = ${e}.id AND g.start_id = ${user} ELSE g.start_id = ANY(${principals}) END` : `g.start_id = ANY(${principals})`})${principal}
    END`;
}

/**
 * The permissions a caller has on its own principals, its User node and every group it reaches over IS_IN_GROUP
 * alone (migration 019): it reads and searches them, and creates in them. UPDATE and DELETE stay with the owners.
 */
const PRINCIPAL_PERMISSIONS: ReadonlySet<Permission> = new Set(['READ', 'SEARCH', 'CREATE']);

/**
 * SEARCH, decided for thousands of candidates at once. The per-row check of the access module (inlineCheck) costs a
 * candidate the caller may NOT search all of its probes (its owners, each with an index probe for a grant), which
 * dominates a search with many candidates. Here the node rule of access.ts (docs/architecture.md "Access model") is
 * restated set-wise: the caller may search a node when it is the caller, when the
 * caller CREATED it, or when the node or one of its owners (element_owners) is the end of an OWNS, HAS_SEARCH_ACCESS
 * or HAS_READ_ACCESS relation from the caller or one of its groups (`grants` of accessSetsCtes and what those
 * own, computed once per statement; PostgreSQL then probes hash tables per candidate;
 * docs/decisions/013-set-wise-access.md). When the grants are too many to hash for every search, the check goes per candidate (see ACCESS_SET_CAPS).
 *
 * For nodes this IS the rule, for many rows at once (used by the search-engine step, whose statement must define
 * accessSetsCtes('SEARCH')); test/search/search-engine.test.ts compares it with permittedIds on a graph with every
 * kind of grant, both ways of deciding, so a rule changed in one place and not the other fails there. Relations,
 * whose rules look at both ends, still go through inlineCheck, behind a necessary condition of the same form (every
 * relation rule needs one of: the caller is its start, the caller may read its end, a grant on the relation itself).
 */
function searchableSetwise(user: string): string {
  const reachable = (x: string) => reachableSetwise(user, x, 'SEARCH');
  // A necessary condition of every relation rule (its start is the caller, its end is reachable, or a grant
  // reaches the relation itself); the exact check runs only behind it.
  const relationSuperset = `(e.start_id = ${user} OR ${reachable('e.end_id')} OR ${reachable('e.id')})`;
  // A relation whose two ends the caller may read is searchable (trellis_allows); when the caller's principals hold
  // no HAS_SEARCH_ACCESS, what it may search is what it may read, so the set-wise rule decides that clause too.
  return `CASE WHEN e.start_id IS NULL THEN ${reachable('e.id')}
    WHEN (SELECT search_is_read FROM setwise) AND ${reachable('e.start_id')} AND ${reachable('e.end_id')} THEN true
    WHEN ${relationSuperset} THEN ${inlineCheck(user, 'SEARCH', 'e')}
    ELSE false END`;
}

/**
 * SEARCH for the rows of a search, as the search index can help decide it: the node is filed under one of the
 * caller's search keys (migration 014: the caller, its groups, the ends of their HAS_SEARCH_ACCESS and
 * HAS_READ_ACCESS relations, and the key every relation is filed under), AND the rule holds. The first part is a
 * necessary condition of the node rule that the GIN index of the search document answers together with the query's
 * own lexemes, so PostgreSQL reads only rows that match the query and that the caller can probably search; the
 * second is the rule itself, decided on those rows (nodeFromRow when it may, else searchableSetwise). The
 * statement must define accessSetsCtes('SEARCH'). test/search/search-engine.test.ts checks that this finds exactly
 * what permittedIds allows, on a graph with every kind of grant.
 */
export function searchableIndexed(user: string): string {
  return `${searchKeysSql('e')} && (SELECT keys FROM caller_keys)
      AND CASE WHEN e.start_id IS NULL AND (SELECT direct FROM caller_keys) THEN ${nodeFromRow}
        WHEN e.start_id IS NOT NULL AND (SELECT direct FROM caller_keys) AND (SELECT search_is_read FROM setwise)
             AND ${endFromRow('e.start_id')} AND ${endFromRow('e.end_id')} THEN true
        WHEN e.start_id IS NOT NULL AND (SELECT direct FROM caller_keys) AND trellis_is_access_type(e.type)
             AND ${ownedEnd(user)} THEN true
        ELSE ${searchableSetwise(user)} END`;
}

/**
 * An access relation whose end the caller's groups own is searchable (trellis_allows). With `direct`, a key of the
 * end's row that is one of the caller's principals other than the caller is one of its owners (only the caller may
 * have created anything), so the row decides: one probe of the primary key.
 */
const ownedEnd = (user: string) =>
  `EXISTS (SELECT 1 FROM elements x WHERE x.id = e.end_id AND x.start_id IS NULL
             AND x.access_keys && array_remove((SELECT principals FROM caller_keys), ${user}))`;

/**
 * A relation's end decided from its row, as nodeFromRow decides a node (only a node: a relation's keys are not its
 * readers): one probe of the primary key, where the set-wise rule probes the end's owners and creators.
 */
const endFromRow = (id: string) =>
  `EXISTS (SELECT 1 FROM elements x WHERE x.id = ${id} AND x.start_id IS NULL
             AND (x.access_keys && (SELECT keys FROM caller_keys) OR x.id = ANY((SELECT keys FROM caller_keys)::uuid[])))`;

/**
 * READ for many rows at once (hydration in the search pipeline, whose statement must define
 * accessSetsCtes('READ')): nodes by nodeFromRow when it may decide, else by the same set-wise node rule as
 * searchableSetwise; a relation whose two ends the caller may read is readable by that clause of the relation rule
 * (trellis_allows, migration 004), decided set-wise too; any other relation takes the exact per-row check.
 * Hydrating the 253 elements of the benchmark's Cypher paths (126 relations) went through trellis_allows once per
 * relation before. Compared with permittedIds(READ) by test/search/search-engine.test.ts on a graph with every
 * kind of grant.
 */
export function readableSetwise(user: string): string {
  const reachable = (x: string) => reachableSetwise(user, x, 'READ');
  return `CASE WHEN e.start_id IS NULL AND (SELECT direct FROM caller_keys) THEN ${nodeFromRow}
    WHEN e.start_id IS NULL THEN ${reachable('e.id')}
    WHEN ${reachable('e.start_id')} AND ${reachable('e.end_id')} THEN true
    ELSE ${inlineCheck(user, 'READ', 'e')} END`;
}

/**
 * The node rule for READ/SEARCH decided from the node's row `e`, when `direct` of the caller_keys CTE allows it.
 * The rule: the node is the caller or one of its groups, the caller CREATED it, the node is the end of a grant
 * (HAS_READ_ACCESS, and HAS_SEARCH_ACCESS for SEARCH) from the caller or its groups (`grant_ends`), or one of its
 * owners is the caller, one of its groups or one of `grant_ends` (an OWNS from a principal makes the principal an
 * owner of everything below; a grant on an owner reaches the node). The node being the caller, one of its groups or
 * one of `grant_ends` is "the node's id is one of the caller's keys" (the relations' key is no node's id). A node's
 * access_keys (migration 014) are its owners and its creators, so the last three and "the caller CREATED it" are
 * "access_keys overlap the caller's keys", except that a key found among the creators is an owner only if it is one
 * too. When none of the keys but the caller's own ever CREATED anything,
 * every key found in access_keys is an owner or the caller, and the row decides; `direct` says so (one index probe
 * per key). Otherwise, or when the keys are too many to compare row by row (each row compares with each key), the
 * set-wise rule decides. What it saves: the hash of everything the caller's grants own and a probe of element_owners
 * per row (docs/decisions/013-set-wise-access.md).
 */
const nodeFromRow = `(e.access_keys && (SELECT keys FROM caller_keys) OR e.id = ANY((SELECT keys FROM caller_keys)::uuid[]))`;

/** Up to how many keys a node is decided from its row (nodeFromRow). */
const DIRECT_KEYS_CAP = 64;

/**
 * The caller's keys, for the caller `$1` and `permission`, as the CTE `caller_keys`: `keys` (the caller, its
 * groups, `grant_ends` and the key every relation is filed under in the search index, migration 014), `grant_ends`
 * (the ends of the grants other than OWNS from the caller and its groups) and `direct` (nodeFromRow may decide).
 * OFFSET 0 keeps each part a subquery of its own: flattened, PostgreSQL computed the caller's groups and grants
 * once per use (four times). The caller is taken out of the CREATED probe rather than filtered after it, which
 * read every CREATED of the caller (docs/decisions/013-set-wise-access.md).
 */
const callerKeysCte = (permission: 'READ' | 'SEARCH') => `caller_keys AS MATERIALIZED (
    SELECT k.keys, k.grant_ends, k.principals,
      cardinality(k.keys) <= ${DIRECT_KEYS_CAP} AND NOT EXISTS (
        SELECT 1 FROM elements c WHERE c.start_id = ANY(array_remove(k.keys, $1::uuid)) AND c.type = 'CREATED') AS direct
    FROM (
      SELECT p.ids || g.ends AS keys, g.ends AS grant_ends, p.ids AS principals
      FROM (SELECT ${principalsSql('$1::uuid')} AS ids OFFSET 0) p,
      LATERAL (SELECT ARRAY(
        SELECT g.end_id FROM unnest(p.ids) q(id), LATERAL (
          SELECT g.end_id FROM elements g
          WHERE g.start_id = q.id AND g.type IN (${GRANT_TYPES[permission]
            .filter((t) => t !== 'OWNS')
            .map((t) => `'${t}'`)
            .join(', ')}) OFFSET 0) g) AS ends OFFSET 0) g
      OFFSET 0) k)`;

/**
 * The node rule for READ/SEARCH: the caller itself or one of its groups, created by the caller, or the node or one
 * of its owners granted to the caller or its groups. Through the hashed `grants` (and, as PostgreSQL chooses, a
 * hash of everything they own) when accessSetsCtes found the grants few enough, else per candidate: the node and
 * its owners (element_owners), each probed for a grant from one of the caller's principals in the (end_id, type)
 * index.
 *
 * `IS TRUE` around the owners' IN keeps PostgreSQL from turning it into a semi join: as a join it scanned all of
 * `grants` against a hash of the candidate's few owners, once per candidate; as an expression it becomes one hash
 * of `grants` per statement, probed by each owner. Same result (ids are never NULL);
 * docs/decisions/013-set-wise-access.md.
 */
function reachableSetwise(user: string, x: string, permission: 'READ' | 'SEARCH'): string {
  // The caller's groups as a hashed subplan: computed once per statement, probed per candidate.
  return `(${x} = ${user}
      OR ${x} IN (SELECT m.group_id FROM group_memberships m WHERE m.member_id = ${user})
      OR CASE WHEN (SELECT ok FROM setwise) THEN ${x} IN (SELECT id FROM grants)
           OR EXISTS (SELECT 1 FROM element_owners o WHERE o.element_id = ${x} AND (o.owner_id IN (SELECT id FROM grants)) IS TRUE)
         ELSE ${grantedSql(principalsSql(user), x, permission)}
         END
      OR EXISTS (SELECT 1 FROM elements c WHERE c.end_id = ${x} AND c.type = 'CREATED' AND c.start_id = ${user}))`;
}

/**
 * Up to how many grants (relations granting the permission from the caller or its groups) the set-wise checks hash
 * them (accessSetsCtes). Hashing costs every statement a little per grant whatever the number of candidates;
 * deciding per candidate costs per candidate whatever the grants. A user who directly owns a very large number of
 * elements (an element POSTed without a parent is owned by its creator) would otherwise pay for hashing them all in
 * every search (docs/decisions/013-set-wise-access.md).
 */
export const ACCESS_SET_CAPS = { grants: 10_000 };

/**
 * The CTEs the set-wise checks read, for the caller `$1`:
 *   grants   the ends of the relations granting `permission` from the caller or its groups (at most caps.grants + 1)
 *   setwise  whether `grants` is complete, i.e. whether the checks may hash it (else they decide per candidate),
 *            and whether the caller's principals hold no HAS_SEARCH_ACCESS (then SEARCH reaches what READ does)
 *   caller_keys  the caller's keys: which nodes may be decided from their rows (nodeFromRow), and for SEARCH
 *                the keys the search index files nodes under (searchableIndexed)
 * `caps` is a parameter so that the tests can run both ways of deciding on a small graph.
 */
export const accessSetsCtes = (permission: 'READ' | 'SEARCH', caps = ACCESS_SET_CAPS) => `grants AS MATERIALIZED (
    SELECT g.end_id AS id FROM elements g
    WHERE g.start_id = ANY(${principalsSql('$1::uuid')})
      AND g.type IN (${GRANT_TYPES[permission].map((t) => `'${t}'`).join(', ')})
    LIMIT ${caps.grants + 1}),
  setwise AS MATERIALIZED (
    SELECT (SELECT count(*) FROM grants) <= ${caps.grants} AS ok,
      NOT EXISTS (SELECT 1 FROM elements g
                  WHERE g.start_id = ANY(${principalsSql('$1::uuid')}) AND g.type = 'HAS_SEARCH_ACCESS') AS search_is_read),
  ${callerKeysCte(permission)}`;

/**
 * Whether the caller may search at least one element in `ratio` of the graph, as far as its keys own them
 * (element_owners, read up to the bound) against the planner's estimate of the elements: a list in the order of an
 * index then fills a page by reading about `ratio` rows per hit (storage/search/list-walk.ts). An estimate only
 * chooses a plan; the rows are decided by the rule either way.
 */
export async function readsMuch(q: Queryable, userId: string, ratio: number): Promise<boolean> {
  const { rows } = await q.query<{ owned: number; elements: number }>(
    `WITH ${callerKeysCte('SEARCH')},
     size AS (SELECT greatest(reltuples, 0)::bigint AS elements FROM pg_class WHERE oid = 'elements'::regclass)
     SELECT (SELECT count(*) FROM (
               SELECT 1 FROM element_owners o WHERE o.owner_id = ANY((SELECT keys FROM caller_keys)::uuid[])
               LIMIT (SELECT elements FROM size) / $2::int + 1) c)::int AS owned,
            (SELECT elements FROM size)::int AS elements`,
    [userId, ratio],
    'reads_much',
  );
  const { owned, elements } = rows[0]!;
  return owned * ratio >= elements;
}

/**
 * SQL boolean: does a relation granting `permission` (GRANT_TYPES) lead from one of `principals` (a uuid[]
 * expression) to `target` or to an element owning it? trellis_granted(principals, target,
 * trellis_grant_types(permission)) of migration 005, inlined: a PL/pgSQL call costs more than its index probes.
 * Such a READ propagates down OWNS (docs/architecture.md "Access model"), so a collection whose anchor passes it for READ lists
 * its children without checking each.
 */
export const grantedSql = (principals: string, target: string, permission: Permission): string => `EXISTS (
    SELECT 1 FROM (SELECT ${target} AS id UNION ALL SELECT o.owner_id FROM element_owners o WHERE o.element_id = ${target}) up
    JOIN elements g ON g.end_id = up.id AND g.type IN (${GRANT_TYPES[permission].map((t) => `'${t}'`).join(', ')})
    WHERE g.start_id = ANY(${principals}))`;

/** The caller and its groups (trellis_principals of migration 005, inlined), as a uuid[] expression. */
export const principalsSql = (user: string): string =>
  `(${user} || ARRAY(SELECT m.group_id FROM group_memberships m WHERE m.member_id = ${user}))`;

/** READ, for GET /<id> and the collections. */
export const inlineReadCheck = (user: string, e = 'e'): string => inlineCheck(user, 'READ', e);

/** The subset of `ids` on which `userId` has `permission`. Missing ids are simply absent from the result. */
export async function permittedIds(
  q: Queryable,
  userId: string,
  permission: Permission,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await q.query<{ id: string }>(
    `SELECT e.id FROM elements e, (SELECT trellis_principals($1::uuid) AS ids) p
     WHERE e.id = ANY($3::uuid[]) AND ${allowsSql('$1::uuid', 'p.ids', '$2::text')}`,
    [userId, permission, ids],
    'permitted_ids',
  );
  return new Set(rows.map((r) => r.id));
}

/** Does the user own the element (an OWNS path from the user or one of its groups)? */
export async function owns(q: Queryable, userId: string, id: string): Promise<boolean> {
  const { rows } = await q.query<{ ok: boolean }>(
    `SELECT trellis_granted(trellis_principals($1::uuid), $2::uuid, ARRAY['OWNS']) AS ok`,
    [userId, id],
    'owns',
  );
  return rows[0]?.ok === true;
}

/**
 * For bulk loads inside one transaction: the access index triggers stand aside until `rebuildAccessIndex` (which
 * must run in the same transaction, before it commits) recomputes both closures in one pass.
 */
export async function deferAccessIndex(tx: Queryable): Promise<void> {
  await tx.query(`SELECT set_config('trellis.defer_access_index', 'on', true)`);
}

export async function rebuildAccessIndex(tx: Queryable): Promise<void> {
  await tx.query(`SELECT set_config('trellis.defer_access_index', 'off', true)`);
  await tx.query('SELECT trellis_rebuild_access_index()');
}
