// POST /search over HTTP: the pipeline (steps in order, stepResults, implicit hydration, debug), its validation and
// its access filtering, on both backends. The step kinds themselves are tested in their own suites.
import { beforeAll, describe, expect, it } from 'vitest';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;

const search = (h: Harness, token: string | undefined, body: unknown) => h.request('POST', '/search', { token, body });
const ids = (res: { json: any }) => res.json.results.map((e: any) => e.id);

async function expectBadContent(h: Harness, token: string, body: unknown, detail?: RegExp) {
  const res = await search(h, token, body);
  expect(res.status, res.text).toBe(400);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
  if (detail) expect(res.json.detail).toMatch(detail);
}

describeBackends(
  'search pipeline',
  (h) => {
    let alice: User;
    let bob: User;
    let lily: string;
    let flame: string;
    let tulip: string;
    let liliales: string;
    let secret: string;
    let memberOf: string;

    beforeAll(async () => {
      alice = await userWithToken(h(), 'alice@search.dev');
      bob = await userWithToken(h(), 'bob@search.dev');
      liliales = await createElement(h(), alice.token, {
        type: 'Taxon',
        data: { name: 'Liliales', description: 'an order of lilies' },
      });
      lily = await createElement(h(), alice.token, {
        type: 'Plant',
        data: { name: 'Lily', description: 'the white lily, a true lily' },
      });
      flame = await createElement(h(), alice.token, {
        type: 'Plant',
        data: { name: 'Flame Lily', description: 'a climbing lily' },
      });
      tulip = await createElement(h(), alice.token, {
        type: 'Plant',
        data: { name: 'Tulip', description: 'spring flower' },
      });
      secret = await createElement(h(), bob.token, {
        type: 'Plant',
        data: { name: 'Secret lily', description: 'bob keeps this lily' },
      });
      const rel = await h().request('POST', '/', {
        token: alice.token,
        body: { type: 'IS_MEMBER_OF', start: lily, end: liliales },
      });
      expect(rel.status).toBe(201);
      memberOf = rel.headers.get('location')!.slice(1);
    });

    describe('element hydration', () => {
      it('keeps the requested order and silently omits what the caller cannot read', async () => {
        const res = await search(h(), alice.token, {
          steps: [{ type: 'element-hydration', query: { elementIds: [tulip, secret, lily] } }],
        });
        expect(res.status, res.text).toBe(200);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        expect(res.json.type).toBe('_SearchResultResponse');
        expect(ids(res)).toEqual([tulip, lily]);
        expect(res.json.results[1]).toMatchObject({ type: 'Plant', id: lily, data: { name: 'Lily' } });
        expect(res.json.results[1].data.created).toMatch(/^\d{4}-\d\d-\d\dT/);
        expect(res.json).not.toHaveProperty('debug');
        // bob sees his own element only
        const bobs = await search(h(), bob.token, {
          steps: [{ type: 'element-hydration', query: { elementIds: [tulip, secret, lily] } }],
        });
        expect(ids(bobs)).toEqual([secret]);
      });

      it('refuses a debug output beyond 64 MiB characters (each step repeats the results before it) with 400', async () => {
        const big = await createElement(h(), alice.token, {
          type: 'Blob',
          data: { text: 'x'.repeat(4 * 1024 * 1024) },
        });
        const steps = Array.from({ length: 12 }, () => ({ type: 'element-hydration', query: { elementIds: [big] } }));
        const res = await search(h(), alice.token, { debug: true, steps });
        expect(res.status).toBe(400);
        expect(res.json.type).toMatch(/\/error\/400\/bad-content$/);
        expect(res.json.detail).toMatch(/debug output would exceed/);
        const plain = await search(h(), alice.token, { steps });
        expect(plain.status).toBe(200);
        expect(ids(plain)).toEqual([big]);
      });

      it('hydrates relations and drops duplicates, reporting them in debug', async () => {
        const res = await search(h(), alice.token, {
          debug: true,
          steps: [{ type: 'element-hydration', query: { elementIds: [memberOf, lily, memberOf, lily.toUpperCase()] } }],
        });
        expect(res.status, res.text).toBe(200);
        expect(ids(res)).toEqual([memberOf, lily]);
        expect(res.json.results[0]).toMatchObject({ type: 'IS_MEMBER_OF', start: lily, end: liliales });
        const [entry] = res.json.debug;
        expect(entry).toMatchObject({
          input: {
            type: 'element-hydration',
            query: { elementIds: [memberOf, lily, memberOf, lily.toUpperCase()] },
            parameters: { stepResults: [] },
          },
          'step-handler': 'element-hydration',
          accessibleElementIds: [memberOf, lily],
          redundantElementIds: { count: 2, elementIds: [memberOf, lily] },
        });
        expect(entry.end).toBeGreaterThanOrEqual(entry.start);
        expect(entry.duration).toBeGreaterThanOrEqual(0);
        expect(Math.abs(entry.start - Date.now() / 1000)).toBeLessThan(60);
      });

      it('takes its ids from an expression over the parameters, in the order the expression produces', async () => {
        const res = await search(h(), alice.token, {
          steps: [
            {
              type: 'element-hydration',
              query: { elementIds: '{{map(sortBy(filter(elements, #.score > 1.0), .score, "desc"), #.id)}}' },
              parameters: {
                elements: [
                  { id: tulip, score: 0.9 },
                  { id: lily, score: 4.0 },
                  { id: flame, score: 1.4 },
                  { id: liliales, score: 3.2 },
                ],
              },
            },
          ],
        });
        expect(res.status, res.text).toBe(200);
        expect(ids(res)).toEqual([lily, liliales, flame]);
      });

      it("gives later steps a hydration's elements as values (their data included)", async () => {
        const res = await search(h(), alice.token, {
          debug: true,
          steps: [
            { type: 'element-hydration', query: { elementIds: [tulip, lily, flame] } },
            {
              type: 'element-hydration',
              query: {
                elementIds: '{{map(sortBy(filter(stepResults[0], #.data.name != "Tulip"), .data.name, "desc"), #.id)}}',
              },
            },
          ],
        });
        expect(res.status, res.text).toBe(200);
        expect(ids(res)).toEqual([lily, flame]);
        const seen = res.json.debug[1].input.parameters.stepResults[0];
        expect(seen.map((e: any) => e.id)).toEqual([tulip, lily, flame]);
        expect(seen[1]).toEqual(res.json.results[0]);
        expect(seen[1]).toMatchObject({
          type: 'Plant',
          id: lily,
          data: { name: 'Lily', description: 'the white lily, a true lily' },
        });
      });

      it('merges global parameters under the step parameters', async () => {
        const res = await search(h(), alice.token, {
          parameters: { pick: [tulip], other: [lily] },
          steps: [{ type: 'element-hydration', query: { elementIds: '{{pick}}' }, parameters: { pick: [flame] } }],
        });
        expect(ids(res)).toEqual([flame]);
        const global = await search(h(), alice.token, {
          parameters: { pick: [tulip] },
          steps: [{ type: 'element-hydration', query: { elementIds: '{{pick}}' } }],
        });
        expect(ids(global)).toEqual([tulip]);
      });
    });

    describe('search engine step', () => {
      it('returns only searchable hits by score and hydrates them implicitly', async () => {
        const res = await search(h(), alice.token, {
          steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { description: 'lily' } } }],
        });
        expect(res.status, res.text).toBe(200);
        expect(new Set(ids(res))).toEqual(new Set([lily, flame]));
        expect(ids(res)).not.toContain(secret);
        // bob's own lily is found by bob
        const bobs = await search(h(), bob.token, {
          steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { description: 'lily' } } }],
        });
        expect(ids(bobs)).toEqual([secret]);
      });

      it('reports each step in debug, with the combined query and the step results', async () => {
        const res = await search(h(), alice.token, {
          debug: true,
          steps: [
            {
              type: 'searchengine-query-dsl-mixin',
              query: { terms: { _id: '{{someIds}}' } },
              parameters: { someIds: [tulip, secret] },
            },
          ],
        });
        expect(res.status, res.text).toBe(200);
        expect(ids(res)).toEqual([tulip]);
        expect(res.json.debug).toHaveLength(2);
        const [engine, hydration] = res.json.debug;
        expect(engine).toMatchObject({
          input: {
            type: 'searchengine-query-dsl-mixin',
            query: { terms: { _id: '{{someIds}}' } },
            parameters: { someIds: [tulip, secret], stepResults: [] },
          },
          'step-handler': 'searchengine-query-dsl-mixin',
          indices: '*',
        });
        expect(engine.combinedQuery).toBeTruthy();
        expect(JSON.stringify(engine.combinedQuery)).toContain(tulip);
        expect(hydration.input.parameters.stepResults).toEqual([
          {
            elements: [{ id: tulip, type: 'Plant', metadata: { score: expect.any(Number) } }],
            totalHits: 1,
            totalHitsRelation: 'eq',
            maxScore: expect.any(Number),
          },
        ]);
        expect(hydration).toMatchObject({ accessibleElementIds: [tulip] });
        expect(hydration['step-handler']).toMatch(/^element-hydration/);
      });

      it("accepts the reference implementation's step name and pages with pageSize and page", async () => {
        const step = (page: number) => ({
          type: 'elasticsearch-query-dsl-mixin',
          query: { match: { description: 'lily' } },
          parameters: { pageSize: 1, page },
        });
        const first = await search(h(), alice.token, { debug: true, steps: [step(1)] });
        const second = await search(h(), alice.token, { steps: [step(2)] });
        const third = await search(h(), alice.token, { steps: [step(3)] });
        expect(first.status, first.text).toBe(200);
        expect(first.json.results).toHaveLength(1);
        expect(second.json.results).toHaveLength(1);
        expect(new Set([...ids(first), ...ids(second)])).toEqual(new Set([lily, flame]));
        expect(third.json.results).toEqual([]);
        expect(first.json.debug[1].input.parameters.stepResults[0].totalHits).toBe(2);
      });

      it('finds a phrase in order, after a PATCH changes the order of its words', async () => {
        const id = await createElement(h(), alice.token, {
          type: 'Plant',
          data: { name: 'Calla', description: 'a lily of the Nile' },
        });
        const step = (query: unknown) => ({ steps: [{ type: 'searchengine-query-dsl-mixin', query }] });
        const phrase = () => search(h(), alice.token, step({ match_phrase: { description: 'lily of the nile' } }));
        const quoted = () =>
          search(h(), alice.token, step({ query_string: { query: 'description:"lily of the nile"' } }));
        expect(ids(await phrase())).toEqual([id]);
        expect(ids(await quoted())).toEqual([id]);
        expect(
          (
            await h().request('PATCH', `/${id}`, {
              token: alice.token,
              body: { description: 'the Nile has a lily of its own' },
            })
          ).status,
        ).toBe(204);
        expect(ids(await phrase())).toEqual([]);
        expect(ids(await quoted())).toEqual([]);
        // All the words are still there: as a match with operator and, it is found.
        expect(
          ids(
            await search(
              h(),
              alice.token,
              step({ match: { description: { query: 'lily of the nile', operator: 'and' } } }),
            ),
          ),
        ).toEqual([id]);
        expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
      });

      it('sees a write made just before (the index is written in the same transaction)', async () => {
        const id = await createElement(h(), alice.token, { type: 'Plant', data: { name: 'Orchid' } });
        const find = () =>
          search(h(), alice.token, {
            steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { description: 'epiphyte' } } }],
          });
        expect(ids(await find())).toEqual([]);
        expect(
          (await h().request('PATCH', `/${id}`, { token: alice.token, body: { description: 'an epiphyte' } })).status,
        ).toBe(204);
        expect(ids(await find())).toEqual([id]);
        expect((await h().request('DELETE', `/${id}`, { token: alice.token })).status).toBe(204);
        expect(ids(await find())).toEqual([]);
      });
    });

    describe('cypher step', () => {
      it('returns whole paths, hydrated node, relation, node', async () => {
        const res = await search(h(), alice.token, {
          steps: [
            {
              type: 'cypher-path-subset',
              query: 'MATCH path=((:Plant)-[:IS_MEMBER_OF*..]->(t:Taxon)) WHERE t.name IN $names RETURN path',
              parameters: { names: ['Liliales'] },
            },
          ],
        });
        expect(res.status, res.text).toBe(200);
        expect(ids(res)).toEqual([lily, memberOf, liliales]);
      });

      it('chains search engine, cypher over its results, and hydration', async () => {
        const res = await search(h(), alice.token, {
          debug: true,
          steps: [
            { type: 'searchengine-query-dsl-mixin', query: { match: { description: 'lily' } } },
            {
              type: 'cypher-path-subset',
              query:
                'UNWIND $stepResults[0].elements AS element MATCH path=((plant:Plant)-[:IS_MEMBER_OF*..]->(:Taxon)) WHERE plant.id = element.id RETURN path',
            },
            { type: 'element-hydration' },
          ],
        });
        expect(res.status, res.text).toBe(200);
        expect(ids(res)).toEqual([lily, memberOf, liliales]);
        expect(res.json.debug).toHaveLength(3);
        expect(res.json.debug[2].input.parameters.stepResults[1]).toEqual({
          paths: [{ nodeIds: [lily, liliales], relationIds: [memberOf] }],
        });
      });

      it('drops paths through elements the caller cannot read', async () => {
        const res = await search(h(), bob.token, {
          steps: [{ type: 'cypher-path-subset', query: 'MATCH path=((:Plant)-[:IS_MEMBER_OF]->(:Taxon)) RETURN path' }],
        });
        expect(res.status, res.text).toBe(200);
        expect(res.json.results).toEqual([]);
      });
    });

    describe('refusals', () => {
      it('answers 401 for a bad token before looking at the body, and 405 for other methods', async () => {
        const res = await h().request('POST', '/search', {
          headers: { authorization: 'Bearer secret-token:nope' },
          body: { steps: 'x' },
        });
        expect(res.status).toBe(401);
        const none = await search(h(), undefined, {
          steps: [{ type: 'element-hydration', query: { elementIds: [lily] } }],
        });
        expect(none.status).toBe(401);
        const get = await h().request('GET', '/search', { token: alice.token });
        expect(get.status).toBe(405);
        expect(get.headers.get('allow')).toContain('POST');
      });

      it('answers an empty pipeline with 200 and no results (with debug: no entries)', async () => {
        for (const body of [{ steps: [] }, { steps: [], debug: false }, { steps: [], parameters: { a: 1 } }]) {
          const res = await search(h(), alice.token, body);
          expect(res.status, res.text).toBe(200);
          expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
          expect(res.json).toEqual({ type: '_SearchResultResponse', results: [] });
        }
        const debug = await search(h(), alice.token, { steps: [], debug: true });
        expect(debug.status).toBe(200);
        expect(debug.json).toEqual({ type: '_SearchResultResponse', results: [], debug: [] });
        // Credentials still come first.
        expect(
          (await h().request('POST', '/search', { headers: { authorization: 'Bearer garbage' }, body: { steps: [] } }))
            .status,
        ).toBe(401);
      });

      it('answers 400 bad-content for malformed pipelines', async () => {
        const t = alice.token;
        await expectBadContent(h(), t, [], /JSON object/);
        await expectBadContent(h(), t, {}, /steps/);
        await expectBadContent(h(), t, { steps: null }, /steps/);
        await expectBadContent(h(), t, { steps: { type: 'element-hydration' } }, /steps/);
        await expectBadContent(h(), t, { steps: [{ type: 'sql', query: 'SELECT 1' }] }, /not a step type/);
        await expectBadContent(
          h(),
          t,
          { steps: [{ type: 'element-hydration', query: { elementIds: [lily] }, extra: 1 }] },
          /extra/,
        );
        await expectBadContent(h(), t, { steps: [{ type: 'element-hydration' }] }, /no previous step/);
        await expectBadContent(
          h(),
          t,
          { steps: [{ type: 'element-hydration', query: { elementIds: ['not-an-id'] } }] },
          /elementIds\[0\]/,
        );
        await expectBadContent(h(), t, {
          steps: [{ type: 'element-hydration', query: { elementIds: '{{missingFn(1)}}' } }],
        });
        await expectBadContent(h(), t, { steps: [{ type: 'element-hydration', query: { ids: [lily] } }] }, /ids/);
        await expectBadContent(
          h(),
          t,
          { debug: 'yes', steps: [{ type: 'element-hydration', query: { elementIds: [lily] } }] },
          /debug/,
        );
        await expectBadContent(
          h(),
          t,
          { steps: [{ type: 'element-hydration', query: { elementIds: [lily] }, parameters: { stepResults: [] } }] },
          /stepResults/,
        );
        await expectBadContent(
          h(),
          t,
          { steps: Array.from({ length: 21 }, () => ({ type: 'element-hydration', query: { elementIds: [] } })) },
          /at most 20/,
        );
        await expectBadContent(h(), t, { steps: [{ type: 'searchengine-query-dsl-mixin' }] }, /needs a query/);
        await expectBadContent(
          h(),
          t,
          { steps: [{ type: 'searchengine-query-dsl-mixin', query: 'plain' }] },
          /query DSL object/,
        );
        await expectBadContent(
          h(),
          t,
          { steps: [{ type: 'searchengine-query-dsl-mixin', query: { match_all: {} }, parameters: { pageSize: 0 } }] },
          /pageSize/,
        );
        await expectBadContent(
          h(),
          t,
          { steps: [{ type: 'searchengine-query-dsl-mixin', query: { match_all: {} }, parameters: { page: 1.5 } }] },
          /page/,
        );
        await expectBadContent(
          h(),
          t,
          {
            steps: [
              { type: 'searchengine-query-dsl-mixin', query: { match_all: {} }, parameters: { minScore: 'high' } },
            ],
          },
          /minScore/,
        );
        await expectBadContent(h(), t, {
          steps: [{ type: 'searchengine-query-dsl-mixin', query: { no_such_kind: {} } }],
        });
        await expectBadContent(h(), t, { steps: [{ type: 'cypher-path-subset', query: 'MATCH (n) DETACH DELETE n' }] });
        await expectBadContent(
          h(),
          t,
          { steps: [{ type: 'cypher-path-subset', query: { not: 'a string' } }] },
          /Cypher query string/,
        );
        // nothing was deleted by the refused Cypher write
        expect((await h().request('GET', `/${lily}`, { token: t })).status).toBe(200);
      });
    });
  },
  // Huge elements (more than the default element limits allow, as a backup or raised limits may bring) are part of
  // what the search must handle.
  { settings: { element: { maxDataSizeInBytes: 8 * 1024 * 1024, maxValues: 100_000 } } },
);
