// Collections: a children page (25 of a folder's children) against the same page as one bare SELECT (B1p, what the
// data volume alone costs).
import type { Bench } from '../lib/context.js';
import { TARGET_CHILDREN } from '../lib/dataset.js';
import { auth, check, paired, type Servers } from '../lib/measure.js';

export const COLLECTION_SCENARIOS = ['GET /<id>/children'];

export async function childrenPage(bench: Bench, s: Servers) {
  const { ds } = s;
  const b = s.baselines.baseUrl;
  const url = s.trellis.baseUrl;
  const t0 = ds.targets[0]!;
  const b1p = {
    name: 'B1p children page SELECT',
    requests: ds.targets.map((t) => ({ method: 'GET', path: `/b1p/${t.id}` })),
    check: () =>
      check(`${b}/b1p/${t0.id}`, {}, 200, (body) =>
        (JSON.parse(body) as { nodes: unknown[] }).nodes.length === 25 ? null : 'expected 25 nodes',
      ),
  };
  if (!bench.wanted('GET /<id>/children', 'B1p children page SELECT')) return;
  await paired(bench, s, 'GET /<id>/children', b1p, {
    requests: ds.targets.map((t) => ({ method: 'GET', path: `/${t.id}/children`, headers: auth(t.token) })),
    check: () =>
      check(`${url}/${t0.id}/children`, { headers: auth(t0.token) }, 200, (body) => {
        const page = JSON.parse(body) as { totalNodes: number; nodes: unknown[] };
        return page.nodes.length === 25 && page.totalNodes === TARGET_CHILDREN
          ? null
          : `expected 25 of ${TARGET_CHILDREN} children, got ${page.nodes.length} of ${page.totalNodes}`;
      }),
    minRatio: 0.9,
    note: `page of 25 (of ${TARGET_CHILDREN})`,
  });
}
