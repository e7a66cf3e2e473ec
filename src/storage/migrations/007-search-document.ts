// The search document of migration 006, built with less work per element; the lexemes are exactly the same (so the
// stored `search` column stays valid, nothing is recomputed), which test/search/search-document.test.ts checks
// against 006's function on both backends.
//
// Where 006's function spent its time:
//   - its leaf query had two branches over jsonb_each (top-level scalars, then objects and arrays through
//     trellis_search_nested), each a scan of every property. Now one scan yields the top-level scalars and tells
//     whether any value nests; only then does the second query run.
//   - every string entered PL/pgSQL for trellis_search_fold; ASCII text, the common case, is lowered
//     inline (for ASCII text the function returns exactly lower(... COLLATE "C")).
// The tokenizer stays as it was: a regexp_split_to_array with array_remove instead of both expressions is slower.
// The over-budget path (documents of more than 1 MB of lexemes) is rare and keeps 006's query. CREATE OR REPLACE
// keeps the function's identity, which the generated column refers to.
import { documentOfText, LEAF_LEXEMES, SEARCH_LIMITS, SEP } from './006-search-index.js';

const FOLDED = `CASE WHEN octet_length(s) = char_length(s) THEN lower(left(s, ${SEARCH_LIMITS.analysedChars}) COLLATE "C")
                    ELSE trellis_search_fold(left(s, ${SEARCH_LIMITS.analysedChars})) END`;

// A row per value: f (escaped dotted field name), kind (jsonb_typeof), v, s (its text) and, for strings, `words`
// (folded, without separators at either end). OFFSET 0 keeps `words` from being computed once per reference.
const withWords = (source: string) => `
  SELECT f, kind, v, s, CASE WHEN kind = 'string' THEN
           regexp_replace(${FOLDED} COLLATE "C", '^${SEP}+|${SEP}+$', '', 'g') END AS words
  FROM (${source}) l
  OFFSET 0`;

const TOP_LEVEL = `
    SELECT trellis_search_escape(x.key) AS f, jsonb_typeof(x.value) AS kind, x.value AS v, x.value #>> '{}' AS s
    FROM jsonb_each(p_data) x WHERE left(x.key, 1) <> '_'`;

const NESTED = `
    SELECT n.field AS f, jsonb_typeof(n.v) AS kind, n.v AS v, n.v #>> '{}' AS s
    FROM jsonb_each(p_data) x, LATERAL trellis_search_nested(trellis_search_escape(x.key), x.value) n
    WHERE left(x.key, 1) <> '_' AND jsonb_typeof(x.value) IN ('object', 'array')`;

const SCALAR = `kind IN ('string', 'number', 'boolean')`;

/** The function of 007 over `lexemes` (leafLexemes of 006, or migration 009's fixed version). */
export const searchDocumentFunction = (lexemes: string) => /* sql */ `
CREATE OR REPLACE FUNCTION trellis_search_document(p_data jsonb) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET jit = off AS $fn$
DECLARE
  doc text;
  nests boolean;
  deeper text;
BEGIN
  IF p_data IS NULL OR jsonb_typeof(p_data) <> 'object' OR p_data = '{}'::jsonb THEN
    RETURN ''::tsvector;
  END IF;
  SELECT string_agg(${lexemes}, E'\\x1d') FILTER (WHERE ${SCALAR}), bool_or(kind IN ('object', 'array'))
    INTO doc, nests
    FROM (${withWords(TOP_LEVEL)}) leaf;
  IF nests THEN
    SELECT string_agg(${lexemes}, E'\\x1d') FILTER (WHERE ${SCALAR}) INTO deeper FROM (${withWords(NESTED)}) leaf;
    doc := CASE WHEN doc IS NULL THEN deeper WHEN deeper IS NULL THEN doc ELSE doc || E'\\x1d' || deeper END;
  END IF;
${documentOfText(lexemes)}END
$fn$;
`;

export default searchDocumentFunction(LEAF_LEXEMES);
