// Fuzzy matching on any field, and on words longer than 255 characters.
//
// trellis_search_any(p, prefix): the any-of tsquery of 006, whose lexemes can also be prefixes. A fuzzy match on
// every field (query-dsl.ts fuzzyTerm with no field) expands into tokens, each looked up as t<token><S>:*, the
// lexeme prefix an exact match on every field uses.
//
// trellis_search_distance: fuzzystrmatch's levenshtein_less_equal refuses strings over 255 characters with an error,
// which made a fuzzy match fail (a 500) as soon as such a word was among the candidates; PGlite's PL/pgSQL version
// has no limit. Above 255 characters the PL/pgSQL version of 006 now serves on PostgreSQL too (same result).
export default /* sql */ `
CREATE FUNCTION trellis_search_any(p text[], prefix boolean) RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT coalesce(string_agg('''' || replace(replace(l, '\\', '\\\\'), '''', '''''') || '''' || CASE WHEN prefix THEN ':*' ELSE '' END, ' | '), '''x''')::tsquery
  FROM unnest(p) l
$fn$;

DO $do$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'fuzzystrmatch') THEN
    CREATE OR REPLACE FUNCTION trellis_search_distance(a text, b text, p_max integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
    'SELECT CASE WHEN greatest(char_length(a), char_length(b)) <= 255 THEN levenshtein_less_equal(a, b, p_max) ELSE trellis_search_levenshtein(a, b, p_max) END';
  END IF;
END
$do$;
`;
