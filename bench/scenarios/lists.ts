// Lists (issue 51): the searches an app sends first, "everything I may see, newest first", for two kinds of caller
// of the data set (dataset.ts's ListCallers): eight users who read about 770 elements each and eight who read about
// half the graph. Each at 8 clients and at one (cycling through the eight), on the run's data set (both backends)
// and on --large's.
import type { Bench } from '../lib/context.js';
import { COMMON_WORD, type Dataset } from '../lib/dataset.js';
import type { HttpRequest } from '../lib/load.js';
import { check, failedRow, jsonHeaders, latencyTarget, measure, requestRow, type Servers } from '../lib/measure.js';
import { searchRequest } from './search.js';

export interface ListRow {
  name: string;
  connections: 1 | 8;
  /** The row's requests, one per caller of its kind (the same body), made once their cursors (if any) are known. */
  requests: (ds: Dataset, baseUrl: string) => Promise<HttpRequest[]>;
  /** Only on --large's data sets. */
  largeOnly?: boolean;
}

type Caller = 'few' | 'many';
const tokensOf = (ds: Dataset, caller: Caller) => (caller === 'few' ? ds.lists!.fewTokens : ds.lists!.manyTokens);
const dsl = (query: unknown, parameters: Record<string, unknown> = {}) => ({
  steps: [{ type: 'searchengine-query-dsl-mixin', query, parameters }],
});

/** The last tenth of the data set's elements by `created` (they were created one second apart). */
function lastTenth(ds: Dataset): string {
  const first = Date.parse(ds.createdSpan!.first);
  const last = Date.parse(ds.createdSpan!.last);
  return new Date(first + (last - first) * 0.9).toISOString();
}

const byNumber = { nodeTypes: ['Document'], sort: [{ number: 'desc' }] };
/** Page 40 of the Documents by number; the caller with few elements has 10 pages of them, so its last one. */
const deepPage = (caller: Caller) => (caller === 'few' ? 10 : 40);

/** The searchAfter of the page before `page`, walked from the first page as a client would. */
async function cursorBefore(baseUrl: string, token: string, page: number): Promise<unknown[]> {
  let after: unknown[] | undefined;
  for (let p = 1; p < page; p++) {
    const response = await fetch(`${baseUrl}/search`, {
      method: 'POST',
      headers: jsonHeaders(token),
      body: JSON.stringify(dsl({ match_all: {} }, { ...byNumber, ...(after ? { search_after: after } : {}) })),
    });
    const body = (await response.json()) as { searchAfter?: unknown[] };
    if (!response.ok || !body.searchAfter) throw new Error(`no cursor after page ${p}: ${response.status}`);
    after = body.searchAfter;
  }
  return after!;
}

function callerRows(caller: Caller): Omit<ListRow, 'connections'>[] {
  const fixed = (body: (ds: Dataset) => unknown) => async (ds: Dataset) =>
    tokensOf(ds, caller).map((token) => searchRequest(token, JSON.stringify(body(ds))));
  return [
    { name: `list match_all, ${caller}`, requests: fixed(() => dsl({ match_all: {} })) },
    {
      name: `list created desc (last tenth), ${caller}`,
      requests: fixed((ds) => dsl({ range: { created: { gte: lastTenth(ds) } } }, { sort: [{ created: 'desc' }] })),
    },
    { name: `list Documents by number, ${caller}`, requests: fixed(() => dsl({ match_all: {} }, byNumber)) },
    {
      name: `list Documents by number, page ${deepPage(caller)} via search_after, ${caller}`,
      // One caller after the other: eight walks at once queued past the embedded database's search queue bound.
      requests: async (ds, baseUrl) => {
        const requests: HttpRequest[] = [];
        for (const token of tokensOf(ds, caller)) {
          const after = await cursorBefore(baseUrl, token, deepPage(caller));
          requests.push(
            searchRequest(token, JSON.stringify(dsl({ match_all: {} }, { ...byNumber, search_after: after }))),
          );
        }
        return requests;
      },
    },
    {
      name: `list Documents by number, page ${deepPage(caller)} via page, ${caller}`,
      requests: fixed(() => dsl({ match_all: {} }, { ...byNumber, page: deepPage(caller) })),
    },
    {
      name: `list common word by created desc, ${caller}`,
      requests: fixed(() => dsl({ match: { title: COMMON_WORD } }, { sort: [{ created: 'desc' }] })),
      largeOnly: true,
    },
  ];
}

/** Every list row, each at 8 clients and then at one. */
export const LIST_ROWS: ListRow[] = (['few', 'many'] as const).flatMap((caller) =>
  callerRows(caller).flatMap((row) => [
    { ...row, name: `POST /search ${row.name}, 8 clients`, connections: 8 as const },
    { ...row, name: `POST /search ${row.name}, 1 client`, connections: 1 as const },
  ]),
);

export const LIST_SCENARIOS = LIST_ROWS.filter((r) => !r.largeOnly).map((r) => r.name);

/** The targets: one client p50 <= 3 ms; 8 clients p50 <= 10 ms (15 for the common word), p99 <= 40 ms. */
export function listTarget(row: ListRow, backend: string): { p50: number; p99: number | null } {
  if (row.connections === 1) return { p50: 3, p99: null };
  if (backend === 'pglite') return { p50: 12, p99: null };
  return { p50: row.name.includes('common word') ? 15 : 10, p99: row.name.includes('common word') ? null : 40 };
}

/** The list rows on the run's data set, with the hits each found (totalHits) in the row's note. */
export async function listScenarios(bench: Bench, s: Servers) {
  const url = s.trellis.baseUrl;
  for (const list of LIST_ROWS) {
    if (list.largeOnly || !bench.wanted(list.name)) continue;
    let requests: HttpRequest[];
    try {
      requests = await list.requests(s.ds, url);
    } catch (error) {
      bench.rows.push(failedRow(bench, list.name, s.backend, (error as Error).message));
      continue;
    }
    let total = '';
    const problem = await check(`${url}/search`, requests[0] as RequestInit, 200, (body) => {
      const found = JSON.parse(body) as { totalHits?: number; totalHitsRelation?: string };
      total = `${found.totalHitsRelation === 'gte' ? '>= ' : ''}${found.totalHits} hits`;
      return null;
    });
    const row = problem
      ? failedRow(bench, list.name, s.backend, problem)
      : requestRow(
          list.name,
          s.backend,
          await measure(bench, `${list.name} (${s.backend})`, url, requests, list.connections),
        );
    // A row that no request answered within the measurement has no latency to hold to its target.
    if (row.status === 'measured' && row.requests === 0) row.status = 'failed';
    const target = listTarget(list, s.backend);
    latencyTarget(row, target.p50, target.p99);
    if (total) row.note = total;
    bench.rows.push(row);
  }
}
