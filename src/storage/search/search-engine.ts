// The search capability's store (domain/search/ports.ts) in SQL: the search module's compilers (search/sql/) turn
// the parsed queries into statements, and the access module (queries/access.ts) restricts them to what the caller
// may SEARCH (the search-engine step) or READ (Cypher paths, hydration).
import type { RenderedElement, SearchEngine } from '../../domain/search/ports.js';
import type { Tx } from '../../domain/transactions.js';
import { badContent } from '../../errors.js';
import type { CypherQuery } from '../../search/language/cypher-ast.js';
import { CYPHER_LIMITS, type CypherLimits } from '../../search/language/limits.js';
import type { DslQuery } from '../../search/language/query-dsl-types.js';
import type { Sort } from '../../search/language/sort.js';
import {
  type PathsOutput,
  type SearchEngineOptions,
  type SearchEngineOutput,
  TOTAL_HITS_EXACT_UP_TO,
} from '../../search/results.js';
import { Binder } from '../../search/sql/binder.js';
import { compileCypher, type PathRow, pathsOf } from '../../search/sql/cypher-statement.js';
import { compileQuery } from '../../search/sql/query-dsl-compile.js';
import { type CompiledSort, checkSortKinds, compileSort } from '../../search/sql/sort-compile.js';
import { storedElementId } from '../../values.js';
import type { Queryable } from '../db.js';
import { ACCESS_SET_CAPS, accessSetsCtes, inlineCheck, readsMuch, searchableIndexed } from '../queries/access.js';
import { preparedName } from '../queries/statement-names.js';
import { queryable } from '../transactions.js';
import { readableElements } from './hydration.js';
import {
  WALK_COUNT_ROWS_PER_HIT,
  WALK_ROWS_PER_HIT,
  type WalkOrder,
  walkedRows,
  walkOrder,
  walkRows,
} from './list-walk.js';

/** The SearchEngine port on the database. `caps`: access.ts ACCESS_SET_CAPS, for tests. */
export function sqlSearchEngine(caps = ACCESS_SET_CAPS): SearchEngine {
  return {
    searchIndex: (tx: Tx, userId: string, query: DslQuery, options: SearchEngineOptions) =>
      searchIndex(queryable(tx), userId, query, options, caps),
    findPaths: (tx, userId, query, parameters, limits) => findPaths(queryable(tx), userId, query, parameters, limits),
    readableElements: async (tx, userId, ids): Promise<RenderedElement[]> =>
      (await readableElements(queryable(tx), userId, ids, caps)).map((row) => ({
        id: storedElementId(row.id),
        body: row.body,
      })),
  };
}

interface HitRow {
  total: number;
  max_score: number | null;
  id: string | null;
  type: string | null;
  score: number | null;
  sort: unknown[] | null;
  /** The kinds of each data property sorted on (k0, k1, ...: sort-compile.ts). */
  [kinds: `k${number}`]: unknown;
}

/** Restriction to node types and relation types; null when both are absent (every element). */
function typeFilter(options: SearchEngineOptions, params: Binder): string | null {
  if (options.nodeTypes === null && options.relationTypes === null) return null;
  const nodes =
    options.nodeTypes === null
      ? 'false'
      : `(e.start_id IS NULL AND e.type = ANY(${params.bind(options.nodeTypes, 'text[]')}))`;
  const relations =
    options.relationTypes === null
      ? 'false'
      : `(e.start_id IS NOT NULL AND e.type = ANY(${params.bind(options.relationTypes, 'text[]')}))`;
  return `(${nodes} OR ${relations})`;
}

/** A value of the query PostgreSQL cannot take: the client's mistake, a 400. */
const unstorable = () =>
  badContent('query: a string holds U+0000 or an unpaired surrogate, which no stored text holds');

/** What both plans of a search share: the query compiled for one statement's parameters. */
interface SearchParts {
  params: Binder;
  ctes: string;
  /** The conditions of a hit on the row `e`, the caller's access among them. */
  where: string;
  score: string;
  minScore: string | null;
  sort: CompiledSort;
}

function searchParts(
  userId: string,
  query: DslQuery,
  options: SearchEngineOptions,
  caps: typeof ACCESS_SET_CAPS,
): SearchParts | null {
  const params = new Binder([userId], { unstorable });
  const searchable = searchableIndexed('$1::uuid');
  const compiled = compileQuery(query, params, searchable);
  if (compiled.matchesNothing) return null;
  const types = typeFilter(options, params);
  const where = [...compiled.where, ...(types === null ? [] : [types]), searchable];
  // Scores are rounded so that two hits whose scores differ only by floating-point noise are ordered by id. The
  // access sets come first: the query's own WITH entries (fuzzy expansions) read them too.
  return {
    params,
    ctes: [accessSetsCtes('SEARCH', caps), ...compiled.ctes].join(',\n  '),
    where: where.map((w) => `(${w})`).join('\n      AND '),
    score: `round((${compiled.score})::numeric, 6)::float8`,
    minScore: options.minScore === null ? null : params.bind(options.minScore, 'float8'),
    sort: compileSort(options.sort ?? null, params),
  };
}

/**
 * The `searchengine-query-dsl-mixin` step: a validated query DSL run against the search index, restricted to what
 * the caller may SEARCH: the page of hits, the number of all hits (up to one past the bound, which tells an exact
 * total from a lower bound; search_after narrows the page, not the count) and the highest score (none when a sort
 * leaves out `_score`, as Elasticsearch). A list in the order of an index, by a caller who may see much, is read
 * along that index first (list-walk.ts).
 */
async function searchIndex(
  q: Queryable,
  userId: string,
  query: DslQuery,
  options: SearchEngineOptions,
  caps: typeof ACCESS_SET_CAPS,
): Promise<SearchEngineOutput> {
  const sort = options.sort ?? null;
  const order = walkOrder(query, sort);
  if (order !== null && (await readsMuch(q, userId, WALK_ROWS_PER_HIT))) {
    const parts = searchParts(userId, query, options, caps);
    if (parts === null) return NOTHING;
    const walked = await runStatement(q, walkStatement(parts, order, sort, options), options, parts);
    if (walked.elements.length === options.pageSize) return walked;
  }
  const parts = searchParts(userId, query, options, caps);
  if (parts === null) return NOTHING;
  return runStatement(q, keyedStatement(parts, options), options, parts);
}

const NOTHING: SearchEngineOutput = { elements: [], totalHits: 0, totalHitsRelation: 'eq', maxScore: null };
/** How far the count goes: one past where it is exact, which tells an exact total from a lower bound. */
const countTo = (options: SearchEngineOptions) => (options.trackTotalHits ?? TOTAL_HITS_EXACT_UP_TO) + 1;

/** Whether the highest score is told: without a sort, or with one that names `_score`. */
const scored = (options: SearchEngineOptions) => !options.sort || options.sort.keys.some((k) => k.k === 'score');

/** Every element filed under the caller's keys that the query finds, decided, then sorted and counted. */
function keyedStatement(parts: SearchParts, options: SearchEngineOptions): string {
  const { params, sort } = parts;
  return `WITH ${parts.ctes},
  hits AS MATERIALIZED (
    SELECT ${['e.id', 'e.type', `${parts.score} AS score`, ...sort.columns].join(', ')}
    FROM elements e
    WHERE ${parts.where}
  ),
  kept AS (SELECT * FROM hits ${parts.minScore === null ? '' : `WHERE score >= ${parts.minScore}`})
  SELECT agg.*, w.id, w.type, w.score, w.sort
  FROM (SELECT (SELECT count(*) FROM (SELECT 1 FROM kept LIMIT ${countTo(options)}) counted) AS total,
               ${scored(options) ? '(SELECT max(score) FROM kept)' : 'NULL::float8'} AS max_score${sort.kinds.map((k) => `, ${k.sql} AS ${k.alias}`).join('')}) agg
  LEFT JOIN LATERAL (
    SELECT id, type, score, ${sort.values ?? 'NULL::jsonb'} AS sort FROM kept ${sort.after === null ? '' : `WHERE ${sort.after}`}
    ORDER BY ${sort.orderBy}
    LIMIT ${params.bind(options.pageSize, 'int')} OFFSET ${params.bind((options.page - 1) * options.pageSize, 'bigint')}
  ) w ON true`;
}

/**
 * The page read along the index of its order (the rows come out of the walk in that order, which the filters keep,
 * so nothing sorts them and reading stops when the page is full), and the count from the search index as above.
 * Every hit of a walked order scores the same when there is no sort, so the first hit's score is the highest.
 */
function walkStatement(parts: SearchParts, order: WalkOrder, sort: Sort | null, options: SearchEngineOptions): string {
  const { params } = parts;
  const minScore = parts.minScore === null ? '' : `AND ${parts.score} >= ${parts.minScore}`;
  const to = countTo(options);
  const keyedCount = `(SELECT count(*) FROM (SELECT 1 FROM elements e WHERE ${parts.where} ${minScore} LIMIT ${to}) counted)`;
  // Along created the count follows the walk while it finds enough hits within a bound of rows, so that it reads
  // what the bound says rather than everything filed under the caller's keys. Along the primary key the rows come
  // in random order, each on a page of its own, where the search index yields them page by page: there it counts.
  const total =
    order.column === 'id'
      ? keyedCount
      : `CASE WHEN (SELECT count(*) FROM (
          SELECT 1 FROM (${walkedRows(order, null, WALK_COUNT_ROWS_PER_HIT * to, params)}) e
          WHERE ${parts.where} ${minScore} LIMIT ${to}) walked) = ${to} THEN ${to} ELSE ${keyedCount} END`;
  return `WITH ${parts.ctes}
  SELECT ${total} AS total,
         ${scored(options) ? 'first_value(w.score) OVER ()' : 'NULL::float8'} AS max_score, w.id, w.type, w.score, w.sort
  FROM (
    SELECT h.id, h.type, h.score, ${parts.sort.values ?? 'NULL::jsonb'} AS sort FROM (
      SELECT ${['e.id', 'e.type', `${parts.score} AS score`, ...parts.sort.columns].join(', ')}
      FROM (${walkedRows(order, sort, walkRows(options), params)}) e
      WHERE ${parts.where} ${minScore}
    ) h
    LIMIT ${params.bind(options.pageSize, 'int')} OFFSET ${params.bind((options.page - 1) * options.pageSize, 'bigint')}
  ) w`;
}

async function runStatement(
  q: Queryable,
  sql: string,
  options: SearchEngineOptions,
  { params, sort }: SearchParts,
): Promise<SearchEngineOutput> {
  // A walk leaves out search_after's values as the sort bound them (the walk starts at its own position).
  const { text, values } = params.finish(sql);
  const { rows } = await q.query<HitRow>(text, values, preparedName('search', text));
  const first = rows[0];
  if (options.sort && first !== undefined)
    checkSortKinds(
      options.sort,
      new Map(sort.kinds.map((k) => [k.key, first[k.alias as `k${number}`] as string[] | null])),
    );
  const elements = rows
    .filter((r) => r.id !== null)
    .map((r) => ({
      id: storedElementId(r.id!),
      type: r.type!,
      metadata: r.sort === null ? { score: r.score! } : { score: r.score!, sort: r.sort },
    }));
  const counted = Number(first?.total ?? 0);
  const exactUpTo = options.trackTotalHits ?? TOTAL_HITS_EXACT_UP_TO;
  return {
    elements,
    totalHits: Math.min(counted, exactUpTo),
    totalHitsRelation: counted > exactUpTo ? 'gte' : 'eq',
    maxScore: first?.max_score ?? null,
  };
}

/** The paths of a parsed Cypher query for `userId`, READ checked on every node by the access module. */
async function findPaths(
  q: Queryable,
  userId: string,
  query: CypherQuery,
  parameters: Readonly<Record<string, unknown>>,
  limits: CypherLimits = CYPHER_LIMITS,
): Promise<PathsOutput> {
  const readable = (user: string, alias: string) => inlineCheck(user, 'READ', alias);
  const compiled = compileCypher(query, parameters, userId, readable, limits);
  const { rows } = await q.query<PathRow>(compiled.text, compiled.values, preparedName('cypher', compiled.text));
  return pathsOf(rows, compiled, limits);
}
