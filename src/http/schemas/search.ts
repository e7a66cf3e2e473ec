// Schema of POST /search.
import { Type } from 'typebox';
import { STEP_TYPE_NAMES } from '../../domain/search/pipeline.js';
import { Element, FreeFormObject, json, requestBody } from './common.js';
import { problems } from './problems.js';

const Step = Type.Object(
  {
    type: Type.Union(
      STEP_TYPE_NAMES.map((name) => Type.Literal(name)),
      { description: 'The step kind.' },
    ),
    query: Type.Optional(
      Type.Unknown({
        description:
          'searchengine-query-dsl-mixin: a query DSL object (or an expression yielding one): match, match_phrase, multi_match (query, fields with * and field^boost, type best_fields|most_fields|phrase, operator, fuzziness, boost), simple_query_string (query, fields, default_operator; + | - "phrase" prefix* ( ) ~N; its syntax is never refused), query_string, bool, term, terms, prefix, wildcard, range, exists, ids, match_all, match_none, constant_score (docs/search.md); cypher-path-subset: a read-only Cypher path query; element-hydration: {elementIds} (ids or an expression), or none to hydrate the previous step.',
        examples: [
          { multi_match: { query: 'quarterly report', fields: ['name^2', '*'] } },
          { simple_query_string: { query: 'report + (draft | final) -archived', default_operator: 'and' } },
        ],
      }),
    ),
    parameters: Type.Optional(
      FreeFormObject(
        'page, pageSize, minScore, nodeTypes, relationTypes, sort (Elasticsearch syntax: [{"created": "desc"}, {"priority": {"order": "asc", "missing": "_last"}}, "_score"]), search_after (the searchAfter of the previous page), track_total_hits (true, false or how far to count), and values for expressions and $names.',
      ),
    ),
  },
  { additionalProperties: false },
);

const SearchResult = Type.Object(
  {
    type: Type.Literal('_SearchResultResponse'),
    results: Type.Array(Element, { description: 'The elements found that the caller may read.' }),
    totalHits: Type.Optional(
      Type.Integer({ description: "The last search-engine step's hits over all pages (exact up to 10,000)." }),
    ),
    totalHitsRelation: Type.Optional(
      Type.Union([Type.Literal('eq'), Type.Literal('gte')], {
        description: '`eq`: totalHits is exact; `gte`: there are more (a lower bound).',
      }),
    ),
    searchAfter: Type.Optional(
      Type.Array(Type.Unknown(), {
        description:
          "With a `sort` and a full page: the last hit's sort values; send them as `search_after` for the next page.",
      }),
    ),
    debug: Type.Optional(Type.Array(FreeFormObject('One entry per step run.'), { description: 'With debug: true.' })),
  },
  { additionalProperties: false },
);

export const searchSchema = {
  operationId: 'search',
  summary: 'Run a search pipeline',
  tags: ['Search'],
  body: requestBody(
    Type.Object(
      {
        steps: Type.Array(Step),
        debug: Type.Optional(Type.Boolean()),
        parameters: Type.Optional(FreeFormObject('Parameters every step sees (under its own).')),
      },
      { additionalProperties: false },
    ),
    {
      steps: [
        { type: 'searchengine-query-dsl-mixin', query: { match: { name: { query: 'report' } } } },
        { type: 'element-hydration' },
      ],
    },
  ),
  response: {
    200: json('The elements found.', SearchResult, undefined, { type: '_SearchResultResponse', results: [] }),
    // 429: the caller runs as many searches at once as it may; 503 also when the instance's searches are all taken.
    ...problems(400, 401, 429),
  },
};
