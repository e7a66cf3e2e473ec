// Elements: the fixed-JSON floor (B0), GET /<id> against one primary-key SELECT (B1), POST / against the three
// rows of a create in one INSERT (B2x3), PATCH /<id> against one INSERT (B2), and the worst element the default
// limits allow, written while a cheap read runs beside it.
import type { Bench } from '../lib/context.js';
import {
  auth,
  check,
  failedRow,
  jsonHeaders,
  latencyTarget,
  measure,
  noteBody,
  paired,
  requestRow,
  type Servers,
} from '../lib/measure.js';
import type { Row } from '../lib/report.js';

/** B0 (on the first backend only) and GET /<id>: 4 OWNS hops + 2 group hops from the caller. */
export async function elementReads(bench: Bench, s: Servers) {
  const { ds, backend } = s;
  const b = s.baselines.baseUrl;
  const url = s.trellis.baseUrl;
  const t0 = ds.targets[0]!;
  if (backend === bench.settings.backends[0] && bench.wanted('B0 fixed JSON')) {
    bench.rows.push(
      requestRow('B0 fixed JSON', backend, await measure(bench, 'B0 fixed JSON', b, [{ method: 'GET', path: '/b0' }])),
    );
  }
  const b1 = {
    name: 'B1 PK SELECT',
    requests: ds.targets.map((t) => ({ method: 'GET', path: `/b1/${t.id}` })),
    check: () => check(`${b}/b1/${t0.id}`, {}, 200),
  };
  if (bench.wanted('GET /<id>', 'B1 PK SELECT'))
    await paired(bench, s, 'GET /<id>', b1, {
      requests: ds.targets.map((t) => ({ method: 'GET', path: `/${t.id}`, headers: auth(t.token) })),
      check: () =>
        check(`${url}/${t0.id}`, { headers: auth(t0.token) }, 200, (body) =>
          JSON.parse(body).id === t0.id ? null : `unexpected body ${body.slice(0, 200)}`,
        ),
      minRatio: backend === 'postgres' ? 0.9 : 0.8,
    });
}

/** POST / and PATCH /<id>. */
export async function elementWrites(bench: Bench, s: Servers) {
  const { ds } = s;
  const b = s.baselines.baseUrl;
  const url = s.trellis.baseUrl;
  const t0 = ds.targets[0]!;
  // A create writes three rows (the node, its OWNS and its CREATED): its floor is those rows in one INSERT.
  const b2x3 = {
    name: 'B2x3 INSERT of 3 rows',
    requests: Array.from({ length: 500 }, (_, k) => ({
      method: 'POST',
      path: '/b2x3',
      headers: jsonHeaders(),
      body: noteBody(k),
    })),
    check: () => check(`${b}/b2x3`, { method: 'POST', headers: jsonHeaders(), body: noteBody(0) }, 201),
  };
  if (bench.wanted('POST / node', 'B2x3 INSERT of 3 rows'))
    await paired(bench, s, 'POST / node', b2x3, {
      requests: Array.from({ length: 500 }, (_, k) => ({
        method: 'POST',
        path: '/',
        headers: jsonHeaders(ds.users[k % ds.users.length]!.token),
        body: noteBody(k),
      })),
      check: () => check(`${url}/`, { method: 'POST', headers: jsonHeaders(t0.token), body: noteBody(0) }, 201),
      minRatio: 0.6,
    });
  const b2 = {
    name: 'B2 INSERT',
    requests: Array.from({ length: 500 }, (_, k) => ({
      method: 'POST',
      path: '/b2',
      headers: jsonHeaders(),
      body: noteBody(k),
    })),
    check: () => check(`${b}/b2`, { method: 'POST', headers: jsonHeaders(), body: noteBody(0) }, 201),
  };
  if (bench.wanted('PATCH /<id>'))
    await paired(bench, s, 'PATCH /<id>', b2, {
      requests: ds.targets.map((t, k) => ({
        method: 'PATCH',
        path: `/${t.id}`,
        headers: jsonHeaders(t.token),
        body: JSON.stringify({ counter: k, touched: 'bench' }),
      })),
      check: () =>
        check(`${url}/${t0.id}`, { method: 'PATCH', headers: jsonHeaders(t0.token), body: '{"counter":0}' }, 204),
      minRatio: 0.4,
    });
}

/**
 * The worst element the default limits allow (element.*, SECURITY.md): 999 strings in one array, 8 distinct words
 * each, just under 64 KiB, so that the search document gets the most lexemes a write can bring. One client writes
 * it again and again while another reads an element every 20 ms: the row is the write's latency, its note the
 * cheap read's, which shows how long the write holds up everyone else (the embedded database runs one statement at
 * a time).
 */
export const WORST_ELEMENT = 'POST / worst-case element';

/** The names that make --only run the element scenarios (the baselines that only serve them are not among them). */
export const ELEMENT_SCENARIOS = [
  'B0 fixed JSON',
  'B1 PK SELECT',
  'B2 INSERT',
  'GET /<id>',
  'POST / node',
  'PATCH /<id>',
  WORST_ELEMENT,
];

const word = (i: number) => `w${i.toString(36).padStart(5, '0')}`;
const pct = (list: number[], q: number) =>
  [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(q * list.length))]!;

export async function worstElementScenario(bench: Bench, s: Servers) {
  const { ds, backend } = s;
  const url = s.trellis.baseUrl;
  const t0 = ds.targets[0]!;
  const data = {
    words: Array.from({ length: 999 }, (_, i) => Array.from({ length: 8 }, (_, k) => word(i * 8 + k)).join(' ')),
  };
  const body = JSON.stringify({ type: 'Document', data });
  const problem = await check(`${url}/`, { method: 'POST', headers: jsonHeaders(t0.token), body }, 201);
  if (problem) return bench.rows.push(failedRow(bench, WORST_ELEMENT, backend, problem, 'p50 <= 100 ms'));
  const writes: number[] = [];
  const probes: number[] = [];
  const until = Date.now() + Math.min(bench.settings.seconds, 10) * 1000;
  const probe = (async () => {
    while (Date.now() < until) {
      const started = performance.now();
      await fetch(`${url}/${t0.id}`, { headers: auth(t0.token) }).then((r) => r.arrayBuffer());
      probes.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  while (Date.now() < until) {
    const started = performance.now();
    const r = await fetch(`${url}/`, { method: 'POST', headers: jsonHeaders(t0.token), body });
    await r.arrayBuffer();
    if (r.status !== 201)
      return bench.rows.push(failedRow(bench, WORST_ELEMENT, backend, `answered ${r.status}`, 'p50 <= 100 ms'));
    writes.push(performance.now() - started);
  }
  await probe;
  const row: Row = {
    scenario: WORST_ELEMENT,
    backend,
    status: 'measured',
    p50: pct(writes, 0.5),
    p99: pct(writes, 0.99),
    requests: writes.length,
    met: null,
  };
  latencyTarget(row, 100, null);
  row.note = `${Buffer.byteLength(body)} bytes, 999 items, 7,992 words; meanwhile GET /<id> p50 ${pct(probes, 0.5).toFixed(1)} ms, p99 ${pct(probes, 0.99).toFixed(1)} ms`;
  bench.log(`${WORST_ELEMENT} on ${backend}: p50 ${row.p50!.toFixed(1)} ms; ${row.note}`);
  bench.rows.push(row);
}
