// The search index: every element's client `data` turned into a tsvector of lexemes by the database itself (a STORED
// generated column, so every write path keeps it current in the same statement), GIN-indexed together with the
// element's access keys; and the functions the query side calls (fuzzy distances, phrases). Lexemes (S = U+001F,
// which escaping keeps out of values and field names):
//
//   t<token>S<field>    an analysed token of a string at <field>              (match, term on a text field)
//   k<value>S<field>    a whole string of at most 256 characters (.keyword)   (term/prefix/wildcard on f.keyword)
//   v<value>S<field>    a number (canonical decimal) or a boolean             (term/match on numbers, booleans)
//   e<field>            <field> or a field below it holds a value             (exists; narrowing for range, fuzzy)
//   n<b><field>         a string at <field> has a length in bucket b (1..5)   (scoring: short fields rank higher)
//
// The value comes first and the field last so that "this token in any field" is a GIN prefix lookup `'t<token>S':*`.

import { CASE_TABLES, LENGTH_BUCKETS, pgClass, SEARCH_LIMITS, SEP } from '../../search/index/analysis-tables.js';
import { BASELINE_SEARCH_KEYS } from './access-keys.js';

const foldSteps = CASE_TABLES.map(
  (t) => `  IF x ~ '${pgClass(t.ranges)}' THEN x := translate(x, '${t.from}', '${t.to}'); END IF;`,
).join('\n');

/**
 * The scalar values of `p_data` (a jsonb object) with their escaped dotted field names: top-level scalars directly,
 * nested ones through trellis_search_nested. OFFSET 0 keeps the subquery from being flattened into the lexeme
 * expression, which would evaluate `words` (a regular expression) once per reference.
 */
export const LEAVES = `
  SELECT f, kind, v, s, CASE WHEN kind = 'string' THEN
           regexp_replace(trellis_search_fold(left(s, ${SEARCH_LIMITS.analysedChars})) COLLATE "C", '^${SEP}+|${SEP}+$', '', 'g') END AS words
  FROM (
    SELECT trellis_search_escape(x.key) AS f, jsonb_typeof(x.value) AS kind, x.value AS v, x.value #>> '{}' AS s
    FROM jsonb_each(p_data) x WHERE left(x.key, 1) <> '_' AND jsonb_typeof(x.value) IN ('string', 'number', 'boolean')
    UNION ALL
    SELECT n.field, jsonb_typeof(n.v), n.v, n.v #>> '{}'
    FROM jsonb_each(p_data) x, LATERAL trellis_search_nested(trellis_search_escape(x.key), x.value) n
    WHERE left(x.key, 1) <> '_' AND jsonb_typeof(x.value) IN ('object', 'array')
  ) l
  OFFSET 0`;

/**
 * The lexemes of one value (a row of LEAVES) as one string, U+001D between them: string functions over the whole
 * value instead of a row per token (regexp_replace turns every run of separators into "end of this lexeme, start of
 * the next one"), cheaper than a set-returning tokenizer. `fieldInReplacement` is how the field name enters
 * regexp_replace's replacement text, where a backslash is an escape: FIELD_IN_REPLACEMENT doubles them.
 */
export const leafLexemes = (fieldInReplacement: string) => `
  CASE kind
    WHEN 'string' THEN
      CASE WHEN words = '' THEN '' ELSE 't' || regexp_replace(words, '${SEP}+', E'\\x1f' || ${fieldInReplacement} || E'\\x1dt', 'g') || E'\\x1f' || f || E'\\x1d' END
      || CASE WHEN char_length(s) <= ${SEARCH_LIMITS.keywordIgnoreAbove} THEN 'k' || trellis_search_escape(s) || E'\\x1f' || f || E'\\x1d' ELSE '' END
      || 'n' || CASE ${LENGTH_BUCKETS.map((max, i) => `WHEN octet_length(s) <= ${max} THEN '${i + 1}'`).join(' ')} ELSE '${LENGTH_BUCKETS.length + 1}' END || f
    WHEN 'number' THEN 'v' || trim_scale(v::numeric)::text || E'\\x1f' || f
    ELSE 'v' || s || E'\\x1f' || f
  END
  || E'\\x1d' || CASE WHEN strpos(f, '.') = 0 THEN 'e' || f
                     ELSE 'e' || array_to_string(ARRAY(SELECT p FROM trellis_search_field_prefixes(f) p), E'\\x1de') END`;

/** The field name with its backslashes doubled (E'' strings: the same whatever standard_conforming_strings says). */
const FIELD_IN_REPLACEMENT = `replace(f, E'\\\\', E'\\\\\\\\')`;

/**
 * The end of trellis_search_document (PL/pgSQL): the tsvector of `doc`, the document's lexemes joined by \x1d. A
 * document of more than 2047 bytes drops its over-long lexemes (array_to_tsvector does not check them: it silently
 * truncates the length field); only a document over the budget is built again from p_data through LEAVES,
 * deduplicated and cut by priority, smallest source value first, so one huge property cannot push the element's
 * other fields out of the index.
 */
export const documentOfText = (lexemes: string) => `  IF doc IS NULL THEN
    RETURN ''::tsvector;
  ELSIF octet_length(doc) <= ${SEARCH_LIMITS.maxLexemeBytes} THEN
    RETURN array_to_tsvector(string_to_array(doc, E'\\x1d'));
  ELSIF octet_length(doc) <= ${SEARCH_LIMITS.budgetBytes} THEN
    RETURN array_to_tsvector(ARRAY(
      SELECT l FROM unnest(string_to_array(doc, E'\\x1d')) l WHERE octet_length(l) <= ${SEARCH_LIMITS.maxLexemeBytes}));
  END IF;
  RETURN (
    SELECT array_to_tsvector(array_agg(lexeme)) FROM (
      SELECT lexeme, sum(octet_length(lexeme)) OVER (ORDER BY priority, lexeme) AS running
      FROM (
        SELECT lexeme, min(priority) AS priority
        FROM (SELECT ${lexemes} AS lexemes, octet_length(s) AS priority FROM (${LEAVES}) leaf OFFSET 0) per_value,
          unnest(string_to_array(per_value.lexemes, E'\\x1d')) lexeme
        WHERE octet_length(lexeme) <= ${SEARCH_LIMITS.maxLexemeBytes}
        GROUP BY lexeme
      ) d
    ) kept
    WHERE running <= ${SEARCH_LIMITS.budgetBytes});
`;

// The common path reads the properties once: the top-level scalars, and whether any value nests (only then does a
// second query walk the nested ones). ASCII text, the common case, is lowered inline instead of entering PL/pgSQL
// for trellis_search_fold (for ASCII text that function returns exactly lower(... COLLATE "C")).
const FOLDED = `CASE WHEN octet_length(s) = char_length(s) THEN lower(left(s, ${SEARCH_LIMITS.analysedChars}) COLLATE "C")
                    ELSE trellis_search_fold(left(s, ${SEARCH_LIMITS.analysedChars})) END`;

// A row per value: f, kind, v, s and, for strings, `words` (folded, without separators at either end). OFFSET 0
// keeps `words` from being computed once per reference.
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

const LEXEMES = leafLexemes(FIELD_IN_REPLACEMENT);

/** Functions of the search document and of the query side; created before `elements`, whose column calls one. */
export const SEARCH_FUNCTIONS = /* sql */ `
-- Field names and keyword values inside lexemes: U+001F ends a value, U+001D separates lexemes while the document is
-- built, so neither may appear in them.
CREATE FUNCTION trellis_search_escape(p text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
  SELECT replace(replace(replace(p, E'\\x1e', E'\\x1e1'), E'\\x1f', E'\\x1e2'), E'\\x1d', E'\\x1e3')
$fn$;

-- Lower case, locale-independent (search/index/analysis-tables.ts). ASCII-only text (the common case) skips the tables.
CREATE FUNCTION trellis_search_fold(p text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
  x text := lower(p COLLATE "C");
BEGIN
  IF octet_length(x) = char_length(x) THEN
    RETURN x;
  END IF;
${foldSteps}
  RETURN x;
END
$fn$;

-- "a.b.c" -> a, a.b, a.b.c
CREATE FUNCTION trellis_search_field_prefixes(p text) RETURNS SETOF text LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 5 AS $fn$
  SELECT array_to_string(parts[1:i], '.') FROM (SELECT string_to_array(p, '.') AS parts) s, generate_series(1, cardinality(parts)) i
$fn$;

-- The scalar values below a nested object or array, with their dotted field names (arrays add nothing to the name).
-- PL/pgSQL so that its plan is kept for the session (a LANGUAGE sql function with a recursive CTE is planned again
-- on every call).
CREATE FUNCTION trellis_search_nested(p_field text, p_value jsonb) RETURNS TABLE (field text, v jsonb)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE ROWS 10 AS $fn$
BEGIN
  RETURN QUERY
    WITH RECURSIVE walk(field, v) AS (
      SELECT p_field, p_value
      UNION ALL
      SELECT CASE WHEN c.key IS NULL THEN w.field ELSE w.field || '.' || trellis_search_escape(c.key) END, c.value
      FROM walk w, LATERAL (
        SELECT o.key, o.value FROM jsonb_each(CASE WHEN jsonb_typeof(w.v) = 'object' THEN w.v END) o
        UNION ALL
        SELECT NULL, a.value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.v) = 'array' THEN w.v END) a
      ) c
    )
    SELECT walk.field, walk.v FROM walk WHERE jsonb_typeof(walk.v) IN ('string', 'number', 'boolean');
END
$fn$;

-- The search document of an element's data. PL/pgSQL so that its statements are planned once per session, not on
-- every write. Only the first 100,000 characters of a string are analysed, and a tsvector holds at most 1 MB, so no
-- write can fail because of the index (docs/decisions/006-search-index-in-the-write.md). The over-budget path keeps
-- OFFSET 0: without it the priority was computed inside the aggregate, which a spilling hash aggregate wrote to
-- disk once per lexeme. jit off: the row estimates of the set-returning functions cross jit_above_cost, and
-- compiling costs far more than the work itself.
CREATE FUNCTION trellis_search_document(p_data jsonb) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET jit = off AS $fn$
DECLARE
  doc text;
  nests boolean;
  deeper text;
BEGIN
  IF p_data IS NULL OR jsonb_typeof(p_data) <> 'object' OR p_data = '{}'::jsonb THEN
    RETURN ''::tsvector;
  END IF;
  SELECT string_agg(${LEXEMES}, E'\\x1d') FILTER (WHERE ${SCALAR}), bool_or(kind IN ('object', 'array'))
    INTO doc, nests
    FROM (${withWords(TOP_LEVEL)}) leaf;
  IF nests THEN
    SELECT string_agg(${LEXEMES}, E'\\x1d') FILTER (WHERE ${SCALAR}) INTO deeper FROM (${withWords(NESTED)}) leaf;
    doc := CASE WHEN doc IS NULL THEN deeper WHEN deeper IS NULL THEN doc ELSE doc || E'\\x1d' || deeper END;
  END IF;
${documentOfText(LEXEMES)}END
$fn$;

-- Query side. A tsquery that matches any of the lexemes (none: the lexeme 'x', which no document has), built with the
-- quoting of the tsquery syntax so that any lexeme is taken literally. Used for the terms a fuzzy match expands to.
CREATE FUNCTION trellis_search_any(p text[]) RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT coalesce(string_agg('''' || replace(replace(l, '\\', '\\\\'), '''', '''''') || '''', ' | '), '''x''')::tsquery
  FROM unnest(p) l
$fn$;

-- The same, each lexeme optionally a prefix: a fuzzy match on every field looks its tokens up as t<token><S>:*.
CREATE FUNCTION trellis_search_any(p text[], prefix boolean) RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT coalesce(string_agg('''' || replace(replace(l, '\\', '\\\\'), '''', '''''') || '''' || CASE WHEN prefix THEN ':*' ELSE '' END, ' | '), '''x''')::tsquery
  FROM unnest(p) l
$fn$;

-- Levenshtein distance, or any value above p_max once it is certainly above p_max (the band of the dynamic programme
-- stops early). PL/pgSQL, for PGlite, which is opened without the fuzzystrmatch extension, and for strings over 255
-- characters, which fuzzystrmatch's levenshtein_less_equal refuses with an error.
CREATE FUNCTION trellis_search_levenshtein(a text, b text, p_max integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
  ac text[] := string_to_array(a, NULL);
  bc text[] := string_to_array(b, NULL);
  la integer := coalesce(cardinality(ac), 0);
  lb integer := coalesce(cardinality(bc), 0);
  prev integer[];
  cur integer[];
  best integer;
BEGIN
  IF abs(la - lb) > p_max THEN
    RETURN p_max + 1;
  ELSIF la = 0 OR lb = 0 THEN
    RETURN greatest(la, lb);
  END IF;
  prev := ARRAY(SELECT generate_series(0, lb));
  FOR i IN 1..la LOOP
    cur := ARRAY[i];
    best := i;
    FOR j IN 1..lb LOOP
      cur[j + 1] := least(prev[j + 1] + 1, cur[j] + 1, prev[j] + CASE WHEN ac[i] = bc[j] THEN 0 ELSE 1 END);
      best := least(best, cur[j + 1]);
    END LOOP;
    IF best > p_max THEN
      RETURN p_max + 1;
    END IF;
    prev := cur;
  END LOOP;
  RETURN prev[lb + 1];
END
$fn$;

-- The optimal string alignment distance (Levenshtein plus adjacent transpositions, no substring edited twice), as
-- Elasticsearch's default fuzzy_transpositions counts: "teh" is one edit from "the". The band stops early as above:
-- a row's minimum is at most one more than the row before's, so once a row is above p_max, so is everything a
-- transposition could reach from two rows up.
CREATE FUNCTION trellis_search_osa(a text, b text, p_max integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
DECLARE
  ac text[] := string_to_array(a, NULL);
  bc text[] := string_to_array(b, NULL);
  la integer := coalesce(cardinality(ac), 0);
  lb integer := coalesce(cardinality(bc), 0);
  prev2 integer[];
  prev integer[];
  cur integer[];
  best integer;
BEGIN
  IF abs(la - lb) > p_max THEN
    RETURN p_max + 1;
  ELSIF la = 0 OR lb = 0 THEN
    RETURN greatest(la, lb);
  END IF;
  prev := ARRAY(SELECT generate_series(0, lb));
  FOR i IN 1..la LOOP
    cur := ARRAY[i];
    best := i;
    FOR j IN 1..lb LOOP
      cur[j + 1] := least(prev[j + 1] + 1, cur[j] + 1, prev[j] + CASE WHEN ac[i] = bc[j] THEN 0 ELSE 1 END);
      IF i > 1 AND j > 1 AND ac[i] = bc[j - 1] AND ac[i - 1] = bc[j] AND ac[i] <> ac[i - 1] THEN
        cur[j + 1] := least(cur[j + 1], prev2[j - 1] + 1);
      END IF;
      best := least(best, cur[j + 1]);
    END LOOP;
    IF best > p_max THEN
      RETURN p_max + 1;
    END IF;
    prev2 := prev;
    prev := cur;
  END LOOP;
  RETURN prev[lb + 1];
END
$fn$;

-- The distances a fuzzy match uses. Where fuzzystrmatch can be created (PostgreSQL), its C levenshtein_less_equal
-- serves up to 255 characters, and rules out what is certainly too far before the PL/pgSQL OSA distance runs (the
-- OSA distance is at least half the Levenshtein one); elsewhere (PGlite) the PL/pgSQL functions serve for all. Both
-- agree on the result up to p_max.
DO $do$
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;
  EXCEPTION WHEN OTHERS THEN
    NULL; -- not installed (PGlite without the extension bundle) or not allowed: the PL/pgSQL version serves
  END;
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'fuzzystrmatch') THEN
    CREATE FUNCTION trellis_search_distance(a text, b text, p_max integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
    'SELECT CASE WHEN greatest(char_length(a), char_length(b)) <= 255 THEN levenshtein_less_equal(a, b, p_max) ELSE trellis_search_levenshtein(a, b, p_max) END';
    CREATE FUNCTION trellis_search_fuzzy_distance(a text, b text, p_max integer, transpositions boolean) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
    'SELECT CASE WHEN NOT transpositions THEN trellis_search_distance(a, b, p_max)
                 WHEN trellis_search_distance(a, b, 2 * p_max) > 2 * p_max THEN p_max + 1
                 ELSE trellis_search_osa(a, b, p_max) END';
  ELSE
    CREATE FUNCTION trellis_search_distance(a text, b text, p_max integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT trellis_search_levenshtein(a, b, p_max)';
    CREATE FUNCTION trellis_search_fuzzy_distance(a text, b text, p_max integer, transpositions boolean) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
    'SELECT CASE WHEN transpositions THEN trellis_search_osa(a, b, p_max) ELSE trellis_search_distance(a, b, p_max) END';
  END IF;
END
$do$;

-- Phrases ("new york", match_phrase): the index keeps no positions (array_to_tsvector stores none), so a phrase is
-- looked up as all of its words and each candidate's own value is checked here, tokenized exactly as the index
-- tokenizes it. Slop as Lucene's sloppy phrase: the narrowest window over the (position - offset in the phrase)
-- values that holds every word; slop 0 is the exact phrase, two swapped words need slop 2. One approximation: a word
-- that occurs twice in a sloppy phrase may be matched by the same occurrence twice (never for slop 0).
CREATE FUNCTION trellis_search_phrase_in(p_tokens text[], p_phrase text[], p_slop int) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
DECLARE
  d int[];
  q int[];
  counts int[];
  words int := cardinality(p_phrase);
  covered int := 0;
  lo int := 1;
BEGIN
  -- Every occurrence of a phrase word in the value, as (position - offset in the phrase, which word), by the first.
  SELECT array_agg(t.pos - w.i ORDER BY t.pos - w.i, w.i), array_agg(w.i ORDER BY t.pos - w.i, w.i) INTO d, q
    FROM unnest(p_tokens) WITH ORDINALITY t(token, pos)
    JOIN unnest(p_phrase) WITH ORDINALITY w(token, i) ON t.token = w.token;
  IF d IS NULL THEN
    RETURN false;
  END IF;
  counts := array_fill(0, ARRAY[words]);
  FOR hi IN 1 .. cardinality(d) LOOP
    counts[q[hi]] := counts[q[hi]] + 1;
    IF counts[q[hi]] = 1 THEN covered := covered + 1; END IF;
    WHILE d[hi] - d[lo] > p_slop LOOP
      counts[q[lo]] := counts[q[lo]] - 1;
      IF counts[q[lo]] = 0 THEN covered := covered - 1; END IF;
      lo := lo + 1;
    END LOOP;
    IF covered = words THEN
      RETURN true;
    END IF;
  END LOOP;
  RETURN false;
END
$fn$;

-- Whether a string at the field (escaped dotted name as in the lexemes; NULL: any field) holds the phrase. The
-- strings are listed here rather than through LEAVES, which tokenizes every string of the element before any filter
-- can apply: here only the strings at the field are folded and split.
CREATE FUNCTION trellis_search_phrase(p_data jsonb, p_field text, p_phrase text[], p_slop int) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT EXISTS (
    SELECT 1
    FROM (
      SELECT trellis_search_escape(x.key) AS f, x.value #>> '{}' AS s
      FROM jsonb_each(p_data) x WHERE left(x.key, 1) <> '_' AND jsonb_typeof(x.value) = 'string'
      UNION ALL
      SELECT n.field, n.v #>> '{}'
      FROM jsonb_each(p_data) x, LATERAL trellis_search_nested(trellis_search_escape(x.key), x.value) n
      WHERE left(x.key, 1) <> '_' AND jsonb_typeof(x.value) IN ('object', 'array') AND jsonb_typeof(n.v) = 'string'
    ) l
    WHERE (p_field IS NULL OR l.f = p_field)
      AND trellis_search_phrase_in(
            regexp_split_to_array(
              regexp_replace(trellis_search_fold(left(l.s, ${SEARCH_LIMITS.analysedChars})) COLLATE "C", '^${SEP}+|${SEP}+$', '', 'g'),
              '${SEP}+'),
            p_phrase, p_slop))
$fn$;
`;

/**
 * The GIN index of the search document and of the access keys (schema/access.ts), so that a search asks the index
 * for "matches and is filed under one of the caller's keys" (docs/decisions/012-access-keys-in-the-search-index.md).
 * A pending list of 256 kB instead of 4 MB: every search reads the whole list of entries not yet merged
 * (docs/decisions/006-search-index-in-the-write.md).
 */
export const SEARCH_INDEX = /* sql */ `
CREATE INDEX elements_search ON elements USING gin (search, ${BASELINE_SEARCH_KEYS}) WITH (gin_pending_list_limit = 256);
`;
