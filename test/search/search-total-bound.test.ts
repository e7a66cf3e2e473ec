// totalHits is exact up to 10,000 and a lower bound above it (Elasticsearch's default track_total_hits), said by
// `totalHitsRelation` in the step's output (stepResults) and in its debug entry; minScore still reduces the count.
// The 10,001 elements are written with one INSERT ... SELECT generate_series each (the API would take minutes), as
// nodes owned by the user (the OWNS relations give them the user's access key, as a create does), with the access
// index rebuilt once at the end as a bulk load does.
import { beforeAll, expect, it } from 'vitest';
import type { Queryable } from '../../src/storage/db.js';
import { deferAccessIndex, rebuildAccessIndex } from '../../src/storage/queries/access.js';
import { describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const BULK = 10_001;

/** For each [type, count, title]: `count` nodes of `type` with `data` (its `k` from 1), each owned by `owner`. */
async function insertOwned(h: Harness, owner: string, sets: [string, number, string][]) {
  await h.db.transaction(async (tx) => {
    await deferAccessIndex(tx);
    for (const [type, count, title] of sets) await insertNodes(tx, owner, type, count, title);
    await rebuildAccessIndex(tx);
  });
}

async function insertNodes(q: Queryable, owner: string, type: string, count: number, title: string) {
  await q.query(
    `INSERT INTO elements (id, type, data, created, updated)
     SELECT gen_random_uuid(), $1, jsonb_build_object('title', $2::text, 'k', i), now(), now()
     FROM generate_series(1, $3::int) i`,
    [type, title, count],
  );
  await q.query(
    `INSERT INTO elements (id, type, start_id, end_id, data, created, updated)
     SELECT gen_random_uuid(), 'OWNS', $1::uuid, e.id, '{}', now(), now()
     FROM elements e WHERE e.type = $2`,
    [owner, type],
  );
}

describeBackends('search totalHits bound', (h) => {
  let alice: User;
  let bob: User;

  beforeAll(async () => {
    alice = await userWithToken(h(), 'alice@bound.dev');
    bob = await userWithToken(h(), 'bob@bound.dev');
    await insertOwned(h(), alice.id, [
      ['Bulk', BULK, 'bulk'],
      ['Rare', 3, 'bulk extra'],
    ]);
  }, 240_000); // catches a hang only: the bulk load and its rebuild take most of it

  /** One search-engine step (and its implicit hydration) with debug: its step output and its debug entry. */
  const engineStep = async (query: unknown, parameters: Record<string, unknown> = {}, user = alice) => {
    const res = await h().request('POST', '/search', {
      token: user.token,
      body: { debug: true, steps: [{ type: 'searchengine-query-dsl-mixin', query, parameters }] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const [engine, hydration] = res.json.debug;
    return { res, engine, output: hydration.input.parameters.stepResults[0] };
  };

  it('reports 10,000 as a lower bound above 10,000 hits, in the step output and in debug', async () => {
    const { engine, output, res } = await engineStep({ match: { title: 'bulk extra' } });
    expect(output.totalHits).toBe(10_000);
    expect(output.totalHitsRelation).toBe('gte');
    expect(engine).toMatchObject({ totalHits: 10_000, totalHitsRelation: 'gte' });
    // The page and maxScore are still those of all hits: the three two-word matches first.
    expect(output.elements).toHaveLength(25);
    expect(output.elements.slice(0, 3).map((e: any) => e.type)).toEqual(['Rare', 'Rare', 'Rare']);
    expect(output.maxScore).toBe(output.elements[0].metadata.score);
    expect(res.json.results).toHaveLength(25);
  });

  it('is exact at 10,000 hits and below, with relation eq', async () => {
    const at = await engineStep(
      { bool: { must: [{ match: { title: 'bulk' } }], must_not: [{ term: { k: 1 } }] } },
      { nodeTypes: ['Bulk'] },
    );
    expect(at.output).toMatchObject({ totalHits: 10_000, totalHitsRelation: 'eq' });
    expect(at.engine).toMatchObject({ totalHits: 10_000, totalHitsRelation: 'eq' });
    const few = await engineStep({ match: { title: 'extra' } });
    expect(few.output).toMatchObject({ totalHits: 3, totalHitsRelation: 'eq' });
  });

  it('minScore still reduces the count, under the bound to the exact number', async () => {
    const { output, engine } = await engineStep({ match: { title: 'bulk extra' } }, { minScore: 2 });
    expect(output).toMatchObject({ totalHits: 3, totalHitsRelation: 'eq' });
    expect(engine).toMatchObject({ totalHits: 3, totalHitsRelation: 'eq' });
    expect(output.elements.map((e: any) => e.type)).toEqual(['Rare', 'Rare', 'Rare']);
  });

  it('counts only what the caller may search', async () => {
    const { output } = await engineStep({ match: { title: 'bulk' } }, {}, bob);
    expect(output).toMatchObject({ totalHits: 0, totalHitsRelation: 'eq', maxScore: null, elements: [] });
  });
});
