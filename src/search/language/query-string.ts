// query_string: a parsed Lucene query (lucene.ts) as the DSL queries it stands for. Lucene's occurrences are ES's
// must, should and must_not; a term is a match (a phrase a match_phrase), a wildcard term a wildcard query.
import { fold } from '../index/analysis.js';
import { MAX_DEPTH } from './limits.js';
import type { LuceneNode, LuceneQuery } from './lucene.js';
import type { DslField, DslQuery, RangeOp, Scalar, TextOptions } from './query-dsl-types.js';
import { boolQuery, checkBoost, fail, fieldOf, rangeBound } from './query-dsl-validation.js';

export interface QueryStringOptions {
  defaultField: string;
  operator: string;
  /** Where the query string is, for errors. */
  path: string;
  depth: number;
  /** phrase_slop: the slop of a phrase without `~N`. */
  phraseSlop: number;
}

/**
 * What a query string's clauses become, built by the DSL parser (query-dsl.ts), which hands itself in: so this
 * module, which the parser calls, does not import the parser back.
 */
export interface QueryBuilder {
  /** Counts clauses towards the query's limit (limits.ts MAX_CLAUSES). */
  countClauses(n: number, path: string): void;
  text(target: DslField, query: Scalar, o: TextOptions): DslQuery;
  patternOn(
    target: DslField,
    syntax: 'prefix' | 'wildcard',
    pattern: string,
    boost: number,
    caseInsensitive: boolean,
    at: string,
  ): DslQuery;
  rangeOn(target: DslField, bounds: ReadonlyArray<readonly [RangeOp, unknown]>, at: string, boost: number): DslQuery;
}

export function translateQueryString(parser: QueryBuilder, q: LuceneQuery, options: QueryStringOptions): DslQuery {
  return new Translator(parser, options).query(q, null, options.depth);
}

class Translator {
  constructor(
    private readonly parser: QueryBuilder,
    private readonly o: QueryStringOptions,
  ) {}

  /** A query (or a group) as a bool. */
  query(q: LuceneQuery, field: string | null, depth: number): DslQuery {
    if (depth > MAX_DEPTH) fail(this.o.path, `groups nest at most ${MAX_DEPTH} levels deep`);
    if (q.clauses.length === 1 && q.clauses[0]!.occur !== 'must_not')
      return this.node(q.clauses[0]!.node, field, depth);
    const of = (occur: string) =>
      q.clauses.filter((c) => c.occur === occur).map((c) => this.node(c.node, field, depth));
    // A purely negative group matches everything else (ES adds a match_all), scoring 0.
    return boolQuery(of('must'), [], of('should'), of('must_not'), undefined, 1, this.o.path);
  }

  private node(n: LuceneNode, inherited: string | null, depth: number): DslQuery {
    const path = this.o.path;
    this.parser.countClauses(1, path);
    const field = n.field ?? inherited;
    const boost = checkBoost(n.boost ?? 1, `${path} (a ^ boost)`);
    const name = field ?? this.o.defaultField;
    const target = fieldOf(name);
    switch (n.k) {
      case 'group': {
        const query = this.query(n.query, field, depth + 1);
        return boost === 1 ? query : { k: 'boosted', factor: boost, query };
      }
      case 'range': {
        const bounds: Array<readonly ['gte' | 'gt' | 'lte' | 'lt', unknown]> = [];
        if (n.min !== null) bounds.push([n.minInclusive ? 'gte' : 'gt', rangeBound(n.min)]);
        if (n.max !== null) bounds.push([n.maxInclusive ? 'lte' : 'lt', rangeBound(n.max)]);
        return this.parser.rangeOn(target, bounds, path, boost);
      }
      case 'compare':
        return this.parser.rangeOn(target, [[n.op, rangeBound(n.value)]], path, boost);
      case 'term':
        break;
    }
    if (name === '_exists_') return { k: 'exists', field: fieldOf(n.text), boost };
    if (!n.quoted && n.raw === '*') return { k: 'exists', field: target, boost };
    if (!n.quoted && /[*?]/.test(n.raw.replace(/\\./g, ''))) {
      // Wildcard terms are term-level, lower-cased like the tokens (ES normalises them for text fields).
      const pattern = target.kind === 'keyword' ? n.raw : fold(n.raw);
      return this.parser.patternOn(target, 'wildcard', pattern, boost, false, path);
    }
    const fuzzy = n.fuzzy ?? 0;
    return this.parser.text(target, n.text, {
      operator: n.quoted ? 'and' : this.o.operator,
      fuzziness: () => fuzzy,
      transpositions: true,
      prefixLength: 0,
      maxExpansions: 50,
      boost,
      zeroTerms: 'none',
      msm: undefined,
      at: path,
      ...(n.quoted ? { phraseSlop: n.slop ?? this.o.phraseSlop } : {}),
    });
  }
}
