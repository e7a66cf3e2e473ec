// multi_match: one match (or match_phrase) per field of `fields`, combined as Elasticsearch's types do:
// best_fields (the default) scores a row by its best field, most_fields by the sum over the fields, phrase is
// best_fields of match_phrase. Each field's query is the match of query-dsl.ts (the same analysis, operator,
// fuzziness and compilation); every field times every word counts toward the clause limit (limits.ts).
import type { DslField, DslQuery, Scalar } from './query-dsl-types.js';
import {
  analysisOptions,
  boostOf,
  checkBoost,
  describe,
  fail,
  fieldOf,
  fuzzinessOf,
  isObject,
  type Json,
  MATCH_OPTIONS,
  nonNegativeInt,
  onlyKeys,
  scalar,
} from './query-dsl-validation.js';
import type { QueryBuilder } from './query-string.js';

const TYPES = ['best_fields', 'most_fields', 'phrase'] as const;

/** The most fields one multi_match or simple_query_string may name. */
const MAX_FIELDS = 64;

/**
 * `fields` of multi_match and simple_query_string: names with an optional `^boost`, `*` for every property.
 * Absent: every property. Patterns other than `*` alone would need the list of property names, which the index
 * does not keep.
 */
export function fieldsOf(value: unknown, path: string): Array<{ target: DslField; boost: number }> {
  if (value === undefined || value === null) return [{ target: fieldOf('*'), boost: 1 }];
  if (!Array.isArray(value) || value.length === 0)
    fail(path, `must be a non-empty list of field names, not ${describe(value)}`);
  const list = value as unknown[];
  if (list.length > MAX_FIELDS) fail(path, `names at most ${MAX_FIELDS} fields`);
  return list.map((item, i) => {
    const at = `${path}[${i}]`;
    if (typeof item !== 'string' || item.length === 0) return fail(at, `must be a field name, not ${describe(item)}`);
    const m = /^(.*?)(?:\^([^^]*))?$/.exec(item)!;
    const name = m[1]!;
    if (name.includes('*') && name !== '*') fail(at, "field name patterns are not supported: use '*' or a name");
    const raw = m[2];
    if (raw !== undefined && (raw.trim() === '' || !Number.isFinite(Number(raw))))
      fail(at, `its ^boost must be a number, not '${raw}'`);
    const boost = raw === undefined ? 1 : checkBoost(Number(raw), `${at} (its ^boost)`);
    return { target: fieldOf(name), boost };
  });
}

export function multiMatch(builder: QueryBuilder, body: unknown, path: string): DslQuery {
  if (!isObject(body)) fail(path, `must be an object, not ${describe(body)}`);
  const o = body as Json;
  onlyKeys(o, path, ['query', 'fields', 'type', ...MATCH_OPTIONS, 'slop', 'boost', '_name']);
  if (o.query === undefined) fail(`${path}.query`, 'is required');
  const query: Scalar = scalar(o.query, `${path}.query`);
  const type = o.type ?? 'best_fields';
  if (!(TYPES as readonly unknown[]).includes(type))
    fail(`${path}.type`, `must be one of ${TYPES.join(', ')}, not ${describe(type)}`);
  const fields = fieldsOf(o.fields, `${path}.fields`);
  const operator = String(o.operator ?? 'or').toLowerCase();
  if (operator !== 'or' && operator !== 'and')
    fail(`${path}.operator`, `must be 'or' or 'and', not ${describe(o.operator)}`);
  const zeroTerms = analysisOptions(o, path);
  for (const flag of ['fuzzy_transpositions', 'lenient'])
    if (o[flag] !== undefined && typeof o[flag] !== 'boolean')
      fail(`${path}.${flag}`, `must be a boolean, not ${describe(o[flag])}`);
  const phrase = type === 'phrase';
  if (phrase && o.fuzziness !== undefined) fail(`${path}.fuzziness`, "does not apply to type 'phrase'");
  if (!phrase && o.slop !== undefined) fail(`${path}.slop`, "applies to type 'phrase' only");
  const fuzziness = fuzzinessOf(o.fuzziness, `${path}.fuzziness`);
  const prefixLength = nonNegativeInt(o.prefix_length ?? 0, `${path}.prefix_length`);
  const maxExpansions = nonNegativeInt(o.max_expansions ?? 50, `${path}.max_expansions`, 1);
  const slop = nonNegativeInt(o.slop ?? 0, `${path}.slop`);
  const boost = boostOf(o, path);
  const perField = fields.map(({ target, boost: fieldBoost }, i) => {
    // The field's own clause; its words beyond the first are counted by `text`.
    if (i > 0) builder.countClauses(1, `${path}.fields`);
    return builder.text(target, query, {
      operator: phrase ? 'and' : operator,
      fuzziness: phrase ? () => 0 : fuzziness,
      transpositions: o.fuzzy_transpositions !== false,
      prefixLength,
      maxExpansions,
      boost: fieldBoost,
      zeroTerms,
      msm: phrase ? undefined : o.minimum_should_match,
      at: path,
      ...(phrase ? { phraseSlop: slop } : {}),
    });
  });
  if (perField.length === 1) return boost === 1 ? perField[0]! : { k: 'boosted', factor: boost, query: perField[0]! };
  if (type === 'most_fields')
    return { k: 'bool', must: [], filter: [], should: perField, mustNot: [], required: 1, boost };
  return { k: 'max', queries: perField, boost };
}
