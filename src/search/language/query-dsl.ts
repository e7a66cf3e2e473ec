// The search engine's query DSL (the Elasticsearch query DSL the reference implementation sends to Elasticsearch),
// validated into a DslQuery for search/sql/ to compile. Supported: match, match_phrase, term(s), prefix,
// wildcard, range, exists, ids, match_all, match_none, constant_score, bool, query_string (query-string.ts),
// multi_match (multi-match.ts) and simple_query_string (simple-query-string.ts);
// docs/search.md describes the mapping onto the index and the scores. A bad clause is a 400 naming its path; the
// checks run in the order of the clauses, so the first bad one is the one named.
import { analyze } from '../index/analysis.js';
import { lexemeFits, tokenLexeme } from '../index/lexemes.js';
import { MAX_CLAUSES, MAX_DEPTH, MAX_FUZZY_TERMS } from './limits.js';
import { type LuceneQuery, LuceneSyntaxError, parseLucene } from './lucene.js';
import { multiMatch } from './multi-match.js';
import type { DslField, DslQuery, RangeOp, Scalar, TextOptions } from './query-dsl-types.js';
import {
  analysisOptions,
  boolQuery,
  boostOf,
  dateValue,
  describe,
  fail,
  fieldClause,
  fieldOf,
  fuzzinessOf,
  isObject,
  type Json,
  MATCH_OPTIONS,
  minimumShouldMatch,
  nonNegativeInt,
  onlyKeys,
  rangeBound,
  scalar,
  stringValue,
} from './query-dsl-validation.js';
import { type QueryBuilder, translateQueryString } from './query-string.js';
import { simpleQueryString } from './simple-query-string.js';

/** Validates the client's query DSL object. Throws a 400 (bad-content) naming the path of the first bad clause. */
export function parseQueryDsl(query: unknown): DslQuery {
  return new QueryDslParser().query(query, 'query');
}

const NONE: DslQuery = { k: 'none' };

class QueryDslParser implements QueryBuilder {
  private clauses = 0;
  private fuzzyTerms = 0;

  /** Counts clauses towards MAX_CLAUSES; it bounds the size of the SQL a query compiles to. */
  countClauses(n: number, path: string): void {
    this.clauses += n;
    if (this.clauses > MAX_CLAUSES)
      fail(
        path,
        `a query has at most ${MAX_CLAUSES} clauses (query objects, match terms, terms and ids values, query_string clauses)`,
      );
  }

  query(q: unknown, path: string, depth = 0): DslQuery {
    if (depth > MAX_DEPTH) fail(path, `queries nest at most ${MAX_DEPTH} levels deep`);
    this.countClauses(1, path);
    if (!isObject(q)) fail(path, `must be a query object, not ${describe(q)}`);
    const kinds = Object.keys(q as Json);
    if (kinds.length !== 1)
      fail(path, `must have exactly one query kind, not ${kinds.length === 0 ? 'none' : kinds.join(', ')}`);
    const kind = kinds[0]!;
    const body = (q as Json)[kind];
    const at = `${path}.${kind}`;
    switch (kind) {
      case 'match':
        return this.match(body, at);
      case 'match_phrase':
        return this.matchPhrase(body, at);
      case 'term':
        return this.term(body, at);
      case 'terms':
        return this.terms(body, at);
      case 'prefix':
        return this.pattern(body, at, 'prefix');
      case 'wildcard':
        return this.pattern(body, at, 'wildcard');
      case 'range':
        return this.range(body, at);
      case 'exists':
        return this.exists(body, at);
      case 'ids':
        return this.ids(body, at);
      case 'match_all':
      case 'match_none': {
        if (!isObject(body)) fail(at, `must be an object, not ${describe(body)}`);
        onlyKeys(body as Json, at, ['boost', '_name']);
        const boost = boostOf(body as Json, at);
        return kind === 'match_all' ? { k: 'all', boost } : NONE;
      }
      case 'constant_score': {
        if (!isObject(body)) fail(at, `must be an object, not ${describe(body)}`);
        onlyKeys(body as Json, at, ['filter', 'boost', '_name']);
        const filter = this.query((body as Json).filter, `${at}.filter`, depth + 1);
        return { k: 'constantScore', filter, boost: boostOf(body as Json, at) };
      }
      case 'bool':
        return this.bool(body, at, depth);
      case 'query_string':
        return this.queryString(body, at, depth);
      case 'multi_match':
        return multiMatch(this, body, at);
      case 'simple_query_string':
        return simpleQueryString(this, body, at);
      default:
        return fail(path, `unknown or unsupported query kind '${kind}'`);
    }
  }

  private match(body: unknown, path: string): DslQuery {
    const { field, value, opts, at } = fieldClause(body, path, 'query', MATCH_OPTIONS);
    const query = scalar(value, isObject((body as Json)[field]) ? `${at}.query` : at);
    const operator = String(opts.operator ?? 'or').toLowerCase();
    if (operator !== 'or' && operator !== 'and')
      fail(`${at}.operator`, `must be 'or' or 'and', not ${describe(opts.operator)}`);
    const zeroTerms = analysisOptions(opts, at);
    for (const flag of ['fuzzy_transpositions', 'lenient'])
      if (opts[flag] !== undefined && typeof opts[flag] !== 'boolean')
        fail(`${at}.${flag}`, `must be a boolean, not ${describe(opts[flag])}`);
    const fuzziness = fuzzinessOf(opts.fuzziness, `${at}.fuzziness`);
    const prefixLength = nonNegativeInt(opts.prefix_length ?? 0, `${at}.prefix_length`);
    const maxExpansions = nonNegativeInt(opts.max_expansions ?? 50, `${at}.max_expansions`, 1);
    const boost = boostOf(opts, at);
    const msm = opts.minimum_should_match;
    const transpositions = opts.fuzzy_transpositions !== false;
    return this.text(fieldOf(field), query, {
      operator,
      fuzziness,
      transpositions,
      prefixLength,
      maxExpansions,
      boost,
      zeroTerms,
      msm,
      at,
    });
  }

  private matchPhrase(body: unknown, path: string): DslQuery {
    const { field, value, opts, at } = fieldClause(body, path, 'query', ['slop', 'analyzer', 'zero_terms_query']);
    const query = scalar(value, isObject((body as Json)[field]) ? `${at}.query` : at);
    const zeroTerms = analysisOptions(opts, at);
    const phraseSlop = nonNegativeInt(opts.slop ?? 0, `${at}.slop`);
    return this.text(fieldOf(field), query, {
      operator: 'and',
      fuzziness: () => 0,
      transpositions: true,
      prefixLength: 0,
      maxExpansions: 50,
      boost: boostOf(opts, at),
      zeroTerms,
      msm: undefined,
      at,
      phraseSlop,
    });
  }

  /** Analysed text on one field (match, match_phrase, the terms of query_string). */
  text(target: DslField, query: Scalar, o: TextOptions): DslQuery {
    switch (target.kind) {
      case 'none':
        return NONE;
      case 'id':
      case 'date':
      case 'file':
        return this.termOn(target, query, o.boost, o.at, false);
      case 'keyword':
        // The whole query is one exact value.
        return { k: 'term', field: target, value: query, caseInsensitive: false, boost: o.boost };
      default:
        break;
    }
    const tokens = analyze(String(query));
    const distinct = [...new Set(tokens)];
    this.countClauses(Math.max(0, distinct.length - 1), o.at);
    const field = target.kind === 'data' ? target.name : null;
    const base = {
      k: 'text' as const,
      field,
      query,
      tokens,
      transpositions: o.transpositions,
      prefixLength: o.prefixLength,
      maxExpansions: o.maxExpansions,
      boost: o.boost,
      zeroTerms: o.zeroTerms,
    };
    if (distinct.length === 0) return { ...base, terms: [], mode: { k: 'and' } };
    const terms = distinct.map((term) => {
      const distance = o.fuzziness(term);
      // A term no indexed lexeme can equal matches nothing and is not expanded.
      if (distance > 0 && lexemeFits(tokenLexeme(term, field)) && ++this.fuzzyTerms > MAX_FUZZY_TERMS)
        fail('query', `a query has at most ${MAX_FUZZY_TERMS} fuzzy terms`);
      return { term, distance };
    });
    if (o.phraseSlop !== undefined) return { ...base, terms, mode: { k: 'phrase', slop: o.phraseSlop } };
    if (o.operator === 'and') return { ...base, terms, mode: { k: 'and' } };
    return {
      ...base,
      terms,
      mode: { k: 'atLeast', required: minimumShouldMatch(o.msm, terms.length, `${o.at}.minimum_should_match`) },
    };
  }

  private term(body: unknown, path: string): DslQuery {
    const { field, value, opts, at } = fieldClause(body, path, 'value', ['case_insensitive']);
    const v = scalar(value, isObject((body as Json)[field]) ? `${at}.value` : at);
    const ci = opts.case_insensitive ?? false;
    if (typeof ci !== 'boolean') fail(`${at}.case_insensitive`, 'must be a boolean');
    return this.termOn(fieldOf(field), v, boostOf(opts, at), at, ci as boolean);
  }

  private termOn(target: DslField, value: Scalar, boost: number, at: string, caseInsensitive: boolean): DslQuery {
    return {
      k: 'term',
      field: target,
      value: target.kind === 'date' ? dateValue(value, at) : value,
      caseInsensitive,
      boost,
    };
  }

  private terms(body: unknown, path: string): DslQuery {
    if (!isObject(body)) fail(path, `must be an object {field: [values]}, not ${describe(body)}`);
    const fields = Object.keys(body as Json).filter((k) => k !== 'boost' && k !== '_name');
    if (fields.length !== 1) fail(path, `must name exactly one field, not ${fields.length}`);
    const field = fields[0]!;
    const list = (body as Json)[field];
    if (!Array.isArray(list))
      fail(`${path}.${field}`, `must be a list of values (terms lookups are not supported), not ${describe(list)}`);
    // Every value beyond the first counts as a clause, as a match query's terms do: the work per row grows with them.
    this.countClauses(Math.max(0, (list as unknown[]).length - 1), `${path}.${field}`);
    const boost = boostOf(body as Json, path);
    const target = fieldOf(field);
    const values = [...new Set((list as unknown[]).map((v, i) => scalar(v, `${path}.${field}[${i}]`)))];
    return {
      k: 'terms',
      field: target,
      values: target.kind === 'date' ? values.map((v, i) => dateValue(v, `${path}.${field}[${i}]`)) : values,
      boost,
    };
  }

  private pattern(body: unknown, path: string, syntax: 'prefix' | 'wildcard'): DslQuery {
    const valueKey =
      syntax === 'prefix'
        ? 'value'
        : isObject(body) && Object.values(body).some((v) => isObject(v) && 'wildcard' in v)
          ? 'wildcard'
          : 'value';
    const { field, value, opts, at } = fieldClause(body, path, valueKey, ['case_insensitive', 'rewrite']);
    const v = stringValue(value, isObject((body as Json)[field]) ? `${at}.${valueKey}` : at);
    const ci = opts.case_insensitive ?? false;
    if (typeof ci !== 'boolean') fail(`${at}.case_insensitive`, 'must be a boolean');
    const boost = boostOf(opts, at);
    return this.patternOn(fieldOf(field), syntax, v, boost, ci as boolean, at);
  }

  /** A term-level pattern on the keyword or on the tokens of a field. */
  patternOn(
    target: DslField,
    syntax: 'prefix' | 'wildcard',
    pattern: string,
    boost: number,
    caseInsensitive: boolean,
    at: string,
  ): DslQuery {
    switch (target.kind) {
      case 'none':
        return NONE;
      case 'id':
      case 'date':
        return fail(at, 'prefix and wildcard queries apply to properties, not to _id, created or updated');
      default:
        return { k: 'pattern', field: target, syntax, pattern, caseInsensitive, boost };
    }
  }

  private range(body: unknown, path: string): DslQuery {
    if (!isObject(body)) fail(path, `must be an object {field: {gte, lt, …}}, not ${describe(body)}`);
    const fields = Object.keys(body as Json).filter((k) => k !== '_name');
    if (fields.length !== 1) fail(path, `must name exactly one field, not ${fields.length}`);
    const field = fields[0]!;
    const at = `${path}.${field}`;
    const bounds = (body as Json)[field];
    if (!isObject(bounds)) fail(at, `must be an object with gte, gt, lte or lt, not ${describe(bounds)}`);
    onlyKeys(bounds as Json, at, ['gte', 'gt', 'lte', 'lt', 'boost', '_name']);
    const ops = (['gte', 'gt', 'lte', 'lt'] as const).filter(
      (op) => (bounds as Json)[op] !== undefined && (bounds as Json)[op] !== null,
    );
    const boost = boostOf(bounds as Json, at);
    return this.rangeOn(
      fieldOf(field),
      ops.map((op) => [op, (bounds as Json)[op]] as const),
      at,
      boost,
    );
  }

  /** Bounds on a field: instants on created/updated, numbers or strings on a property. */
  rangeOn(target: DslField, bounds: ReadonlyArray<readonly [RangeOp, unknown]>, at: string, boost: number): DslQuery {
    switch (target.kind) {
      case 'none':
        return { k: 'range', field: target, bounds: [], boost };
      case 'date':
        return {
          k: 'range',
          field: target,
          bounds: bounds.map(([op, v]) => ({ op, value: dateValue(v, `${at}.${op}`) })),
          boost,
        };
      case 'data':
      case 'file':
        break;
      default:
        return fail(at, 'range queries apply to properties and to created or updated');
    }
    const values = bounds.map(([op, v]) => {
      if (typeof v === 'number' && Number.isFinite(v)) return { op, value: v };
      if (typeof v === 'string') return { op, value: rangeBound(v) };
      return fail(`${at}.${op}`, `must be a number or a string, not ${describe(v)}`);
    });
    if (new Set(values.map((b) => typeof b.value)).size > 1)
      fail(at, 'the bounds must all be numbers or all be strings');
    return { k: 'range', field: target, bounds: values, boost };
  }

  private exists(body: unknown, path: string): DslQuery {
    if (!isObject(body)) fail(path, `must be an object {field: …}, not ${describe(body)}`);
    onlyKeys(body as Json, path, ['field', 'boost', '_name']);
    const field = stringValue((body as Json).field, `${path}.field`);
    const boost = boostOf(body as Json, path);
    return { k: 'exists', field: fieldOf(field), boost };
  }

  private ids(body: unknown, path: string): DslQuery {
    if (!isObject(body)) fail(path, `must be an object {values: [ids]}, not ${describe(body)}`);
    onlyKeys(body as Json, path, ['values', 'boost', '_name']);
    const values = (body as Json).values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'string'))
      fail(`${path}.values`, 'must be a list of element ids');
    return this.terms({ _id: values, boost: (body as Json).boost ?? 1 }, path);
  }

  private bool(body: unknown, path: string, depth: number): DslQuery {
    if (!isObject(body)) fail(path, `must be an object, not ${describe(body)}`);
    onlyKeys(body as Json, path, ['must', 'should', 'must_not', 'filter', 'minimum_should_match', 'boost', '_name']);
    const list = (key: string): DslQuery[] => {
      const v = (body as Json)[key];
      if (v === undefined || v === null) return [];
      const items = Array.isArray(v) ? v : [v];
      return items.map((item, i) =>
        this.query(item, Array.isArray(v) ? `${path}.${key}[${i}]` : `${path}.${key}`, depth + 1),
      );
    };
    const must = list('must');
    const filter = list('filter');
    const should = list('should');
    const mustNot = list('must_not');
    const boost = boostOf(body as Json, path);
    return boolQuery(
      must,
      filter,
      should,
      mustNot,
      (body as Json).minimum_should_match,
      boost,
      `${path}.minimum_should_match`,
    );
  }

  private queryString(body: unknown, path: string, depth: number): DslQuery {
    if (!isObject(body)) fail(path, `must be an object, not ${describe(body)}`);
    onlyKeys(body as Json, path, [
      'query',
      'default_field',
      'default_operator',
      'phrase_slop',
      'boost',
      'analyze_wildcard',
      'allow_leading_wildcard',
      'lenient',
      '_name',
    ]);
    const text = stringValue((body as Json).query, `${path}.query`);
    const defaultField = stringValue((body as Json).default_field ?? '*', `${path}.default_field`);
    const operator = String((body as Json).default_operator ?? 'OR').toLowerCase();
    if (operator !== 'or' && operator !== 'and') fail(`${path}.default_operator`, "must be 'OR' or 'AND'");
    const boost = boostOf(body as Json, path);
    const phraseSlop = nonNegativeInt((body as Json).phrase_slop ?? 0, `${path}.phrase_slop`);
    let parsed: LuceneQuery;
    try {
      parsed = parseLucene(text, operator as 'and' | 'or', MAX_DEPTH);
    } catch (error) {
      if (error instanceof LuceneSyntaxError)
        return fail(`${path}.query`, `is not a valid query string (${error.message})`);
      throw error;
    }
    const query = translateQueryString(this, parsed, {
      defaultField,
      operator,
      path: `${path}.query`,
      depth,
      phraseSlop,
    });
    return boost === 1 ? query : { k: 'boosted', factor: boost, query };
  }
}
