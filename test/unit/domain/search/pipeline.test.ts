// The search pipeline (src/domain/search/pipeline.ts) over the real SearchEngine adapter on an in-memory PGlite: steps
// in order with stepResults, implicit hydration, element ids parsed at the edge, the debug entries and the refusals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSettings } from '../../../../src/config/load.js';
import { SearchAdmission } from '../../../../src/domain/search/admission.js';
import { Search, searchAdmissionLimits, searchBudgetSeconds } from '../../../../src/domain/search/pipeline.js';
import { Problem } from '../../../../src/errors.js';
import type { Db } from '../../../../src/storage/db.js';
import { sqlSearchEngine } from '../../../../src/storage/search/search-engine.js';
import { sqlTransactions } from '../../../../src/storage/transactions.js';
import { migratedDb } from '../../helpers/database.js';
import { seed, seedUser } from '../../helpers/search.js';

describe('search pipeline', () => {
  let db: Db;
  let search: Search;
  let user: string;
  let other: string;
  let ann: string, bob: string, knows: string, secret: string;

  beforeAll(async () => {
    db = await migratedDb();
    const settings = validateSettings({});
    search = new Search(
      sqlTransactions(db),
      sqlSearchEngine(),
      settings,
      new SearchAdmission(searchAdmissionLimits(settings, 1)),
    );
    user = await seedUser(db);
    other = await seedUser(db);
    [ann, bob] = await seed(
      db,
      [
        { type: 'Person', data: { name: 'ann lee' } },
        { type: 'Person', data: { name: 'bob lee' } },
      ],
      user,
    );
    [secret] = await seed(db, [{ type: 'Person', data: { name: 'secret lee' } }], other);
    [knows] = await seed(db, [{ type: 'KNOWS', start: ann, end: bob }]);
  });
  afterAll(async () => {
    await db?.close();
  });

  const run = async (body: unknown) => JSON.parse(await search.run(user, body));
  const idsOf = (response: { results: Array<{ id: string }> }) => response.results.map((e) => e.id);
  const refusal = async (body: unknown): Promise<string> => {
    try {
      await search.run(user, body);
    } catch (error) {
      expect(error).toBeInstanceOf(Problem);
      expect((error as Problem).status).toBe(400);
      return (error as Problem).detail ?? '';
    }
    throw new Error('no refusal');
  };

  it('hydrates the hits of a search-engine step, only those the caller may search', async () => {
    const response = await run({
      steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: 'lee' } } }],
    });
    expect(response.type).toBe('_SearchResultResponse');
    expect(new Set(idsOf(response))).toEqual(new Set([ann, bob]));
    expect(response.results[0].data.name).toMatch(/lee$/);
    expect(idsOf(response)).not.toContain(secret);
  });

  it('hydrates a Cypher step in path order: node, relation, node', async () => {
    const response = await run({
      steps: [{ type: 'cypher-path-subset', query: 'MATCH p = (a)-[:KNOWS]->(b) WHERE a.id = $id RETURN p' }],
      parameters: { id: ann },
    });
    expect(idsOf(response)).toEqual([ann, knows, bob]);
  });

  it('parses hydration ids at the edge: any case, duplicates once, unreadable ones left out', async () => {
    const response = await run({
      steps: [{ type: 'element-hydration', query: { elementIds: [bob.toUpperCase(), ann, bob, secret] } }],
      debug: true,
    });
    expect(idsOf(response)).toEqual([bob, ann]);
    expect(response.debug[0].accessibleElementIds).toEqual([bob, ann]);
    expect(response.debug[0].redundantElementIds).toEqual({
      note: 'duplicate element ids were removed before hydration',
      count: 1,
      elementIds: [bob],
    });
    expect(await refusal({ steps: [{ type: 'element-hydration', query: { elementIds: [ann, 'nope'] } }] })).toBe(
      'steps[0].query.elementIds[1] is not an element id.',
    );
  });

  it('gives later steps the earlier results, through expressions', async () => {
    const response = await run({
      steps: [
        { type: 'searchengine-query-dsl-mixin', query: { term: { _id: ann } } },
        { type: 'element-hydration', query: { elementIds: '{{ map(stepResults[0].elements, .id) }}' } },
      ],
      debug: true,
    });
    expect(idsOf(response)).toEqual([ann]);
    expect(response.debug.map((d: { 'step-handler': string }) => d['step-handler'])).toEqual([
      'searchengine-query-dsl-mixin',
      'element-hydration',
    ]);
    expect(response.debug[0].combinedQuery.query.bool.must[1]).toEqual({ term: { _searchableBy: user } });
  });

  it('refuses malformed pipelines with 400 before asking the database', async () => {
    expect(await refusal([])).toBe('The request body must be a JSON object with `steps`.');
    expect(await refusal({ steps: [{ type: 'nope', query: {} }] })).toMatch("steps[0].type 'nope' is not a step type");
    expect(await refusal({ steps: [{ type: 'cypher-path-subset', query: ' ' }] })).toBe(
      'steps[0].query must be a Cypher query string.',
    );
    expect(
      await refusal({ steps: [{ type: 'searchengine-query-dsl-mixin', query: {}, parameters: { pageSize: 0 } }] }),
    ).toBe('steps[0].parameters.pageSize must be an integer from 1 to 1000.');
    expect(await refusal({ steps: [{ type: 'element-hydration' }] })).toBe(
      'steps[0] (element-hydration) has no query and no previous step to hydrate.',
    );
  });

  it('takes its statement budget from the settings, by backend', () => {
    expect(searchBudgetSeconds(validateSettings({}), 'pglite')).toBe(3);
    expect(searchBudgetSeconds(validateSettings({ search: { statementTimeoutInSeconds: 7 } }), 'postgres')).toBe(7);
  });
});
