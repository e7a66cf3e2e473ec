// A validated query DSL object (query-dsl.ts parses it, search/sql/ compiles it to SQL). Every value has been
// checked and normalised; whatever is left to decide needs the index's layout.

export type Scalar = string | number | boolean;
export type RangeOp = 'gte' | 'gt' | 'lte' | 'lt';

/** What a field name of the DSL stands for. */
export type DslField =
  | { kind: 'id' }
  | { kind: 'date'; column: 'created' | 'updated' }
  /** `f.keyword`: the whole string. */
  | { kind: 'keyword'; name: string }
  /** A property of `data` (text, number, boolean). */
  | { kind: 'data'; name: string }
  /** "*": every property. */
  | { kind: 'any' }
  /** hasFile, file, file.<field>: shown in data, kept in the file column. */
  | { kind: 'file'; keys: string[] }
  /** Can never match ("_" properties are not in the index, a name too long to search for). */
  | { kind: 'none' };

/** The edit distance a fuzzy term may have, by the term. */
export type Fuzziness = (term: string) => number;

/** The options of an analysed text query (match, match_phrase, query_string's terms), as the parser reads them. */
export interface TextOptions {
  operator: string;
  fuzziness: Fuzziness;
  transpositions: boolean;
  prefixLength: number;
  maxExpansions: number;
  boost: number;
  zeroTerms: 'none' | 'all';
  msm: unknown;
  at: string;
  /** A phrase (query_string's "…", match_phrase) with this slop: its words in order. */
  phraseSlop?: number;
}

/** One distinct analysed term of a text query, with its edit distance (0: exact). */
export interface TextTerm {
  term: string;
  distance: number;
}

/** How the terms of a text query combine: all of them in order (a phrase), all of them, or at least `required`. */
export type TextMode = { k: 'phrase'; slop: number } | { k: 'and' } | { k: 'atLeast'; required: number };

export type DslQuery =
  /** match_all. */
  | { k: 'all'; boost: number }
  /** match_none, or a query on a field that can never match. */
  | { k: 'none' }
  | { k: 'constantScore'; filter: DslQuery; boost: number }
  /** `required`: how many of `should` must match (minimum_should_match resolved). */
  | {
      k: 'bool';
      must: DslQuery[];
      filter: DslQuery[];
      should: DslQuery[];
      mustNot: DslQuery[];
      required: number;
      boost: number;
    }
  /** Any of the queries matches; scored by the best of them (multi_match's best_fields and phrase). */
  | { k: 'max'; queries: DslQuery[]; boost: number }
  /** A query whose score is multiplied (query_string's boosts). */
  | { k: 'boosted'; factor: number; query: DslQuery }
  /**
   * Analysed text on a property (`field`) or on every property (null): match, match_phrase, query_string's terms.
   * `tokens` are all the tokens in order, `terms` the distinct ones.
   */
  | {
      k: 'text';
      field: string | null;
      query: Scalar;
      tokens: string[];
      terms: TextTerm[];
      mode: TextMode;
      /** An adjacent transposition is one edit (ES's default), else two. */
      transpositions: boolean;
      prefixLength: number;
      maxExpansions: number;
      boost: number;
      zeroTerms: 'none' | 'all';
    }
  /** An exact value; on a date field the instant as ISO text. */
  | { k: 'term'; field: DslField; value: Scalar; caseInsensitive: boolean; boost: number }
  /** Any of the values (distinct); on a date field the instants as ISO text. */
  | { k: 'terms'; field: DslField; values: Scalar[]; boost: number }
  /** prefix, or wildcard (`*`, `?`, `\` escapes), on a property, its keyword or a file property. */
  | {
      k: 'pattern';
      field: DslField;
      syntax: 'prefix' | 'wildcard';
      pattern: string;
      caseInsensitive: boolean;
      boost: number;
    }
  /** Bounds all numbers or all strings on a property; instants (ISO text) on a date field. None: the field exists. */
  | { k: 'range'; field: DslField; bounds: Array<{ op: RangeOp; value: string | number }>; boost: number }
  | { k: 'exists'; field: DslField; boost: number };
