// The search index: every element's client `data` turned into a tsvector by the database itself (a STORED generated
// column), GIN-indexed. Every write path (POST, PATCH's `data || $patch`, PUT, backup loads, the benchmark's bulk
// insert, a psql UPDATE) maintains it in the same statement, so a search right after a write sees it, and no code
// path can forget it.
//
// It emulates Elasticsearch's default dynamic mapping of `data` (the reference implementation indexes that): a
// string is a `text` field (standard analyzer, approximated below) with a `.keyword` sub-field (exact value,
// ignore_above 256); numbers and booleans are exact values; nested objects flatten to dotted names
// (`images.description`, and a key "a.b" is the same field as {"a": {"b"}} as in ES); arrays are transparent. The
// `internal` column (the "_" properties) is never read, and a top-level "_" key in `data` is skipped as well.
//
// Why a tsvector of lexemes we build ourselves, rather than one GIN (jsonb_path_ops) index on `data` plus trigram
// indexes: tsvector + GIN is in both backends, the lexemes can carry exactly the ES semantics we need (analysed
// tokens, exact keywords, typed values, field existence, field length) in ONE index, and tsquery gives exact, OR,
// AND, NOT and prefix (`'lexeme':*`) lookups with GIN (a jsonb_path_ops index answers exact values only, not tokens
// or prefixes). Lexemes (S = U+001F, which escaping keeps out of values and field names, so every lexeme holds at
// most one S):
//
//   t<token>S<field>    an analysed token of a string at <field>              (match, term on a text field)
//   k<value>S<field>    a whole string of at most 256 characters (.keyword)   (term/prefix/wildcard on f.keyword)
//   v<value>S<field>    a number (canonical decimal) or a boolean             (term/match on numbers, booleans)
//   e<field>            <field> or a field below it holds a value             (exists; narrowing for range, fuzzy)
//   n<b><field>         a string at <field> has a length in bucket b (1..5)   (scoring: short fields rank higher)
//
// The value comes first and the field last so that "this token in any field" (query_string without a field) is a
// GIN prefix lookup `'t<token>S':*`; a lookup within one field is an exact lexeme. <value> and <field> are escaped
// (U+001E -> U+001E '1', U+001F -> U+001E '2', U+001D -> U+001E '3').
//
// Cost: about twice the time of a bare single-row write, taken on purpose so that the index is never behind
// (docs/decisions/006-search-index-in-the-write.md). The GIN index keeps fastupdate on: its pending list keeps the
// index insert cheap.
//
// Limits, so that no element write can ever fail because of the index: a tsvector lexeme has at most 2047 bytes
// (longer ones are left out: a 5,000-character string keeps its text tokens but has no keyword, like ES's
// ignore_above, and a single 5,000-character token is dropped) and a tsvector at most 1 MB of lexemes: lexemes are kept smallest source value first until 1,000,000
// bytes, so one huge property cannot push the element's other fields out of the index. Only the first 100,000
// characters of a string are analysed (bounds the work per write; the 1 MB budget would be used up by then anyway).
//
// The analyzer (ES's standard analyzer, approximated): lowercase, then split on anything that is not a letter or a
// digit. Both steps are locale-independent on purpose (the same tokens on PGlite, whose ctype is C.UTF-8, and on a
// server whose database may be "C", where lower() only knows ASCII and [[:alnum:]] no letters beyond it): ASCII is
// lowercased with lower(... COLLATE "C"), Latin, Greek, Cyrillic, Armenian, Georgian and full-width letters with
// translate() tables, and the separators are explicit code point ranges. The query side (src/domain/search/
// query-dsl.ts) analyses query text with the same tables, exported from here.

/** Code point ranges that separate tokens: ASCII and Latin-1 punctuation/symbols/controls, general punctuation, CJK punctuation, symbols, emoji. */
export const SEPARATOR_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x01, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0xa9], [0xab, 0xb4], [0xb6, 0xb9], [0xbb, 0xbf], [0xd7, 0xd7], [0xf7, 0xf7],
  [0x2000, 0x2bff], [0x2e00, 0x2e7f], [0x3000, 0x303f], [0xfe10, 0xfe1f], [0xfe30, 0xfe6f], [0xfeff, 0xfeff],
  [0xff00, 0xff0f], [0xff1a, 0xff20], [0xff3b, 0xff40], [0xff5b, 0xff65], [0xfff0, 0xffff], [0x1f000, 0x1faff],
];

/** Blocks of upper-case letters mapped to lower case by translate() (each applied only when the text has a letter of the block). */
const CASE_BLOCKS: ReadonlyArray<ReadonlyArray<readonly [number, number]>> = [
  [[0xc0, 0x24f]],
  [[0x370, 0x52f]],
  [[0x531, 0x556], [0x10a0, 0x10c5], [0x1e00, 0x1fff], [0x2c00, 0x2c2f], [0xff21, 0xff3a]],
];

/** Per block: the range check and the from/to strings of translate(). */
export const CASE_TABLES: ReadonlyArray<{ ranges: ReadonlyArray<readonly [number, number]>; from: string; to: string }> = CASE_BLOCKS.map((ranges) => {
  let from = '';
  let to = '';
  for (const [a, b] of ranges)
    for (let c = a; c <= b; c++) {
      const upper = String.fromCodePoint(c);
      // U+0130 (I with dot above) lower-cases to two code points; an ES user expects "i".
      const lower = c === 0x130 ? 'i' : upper.toLowerCase();
      if (lower !== upper && [...lower].length === 1) {
        from += upper;
        to += lower;
      }
    }
  return { ranges, from, to };
});

export const SEARCH_LIMITS = {
  /** Strings longer than this (characters) have no keyword lexeme (ES: ignore_above 256). */
  keywordIgnoreAbove: 256,
  /** Tokens longer than this (characters) are dropped (ES's standard tokenizer splits at 255). */
  maxTokenChars: 255,
  /** Longest tsvector lexeme (bytes). */
  maxLexemeBytes: 2047,
  /** Lexeme bytes kept per element (a tsvector holds at most 1 MB). */
  budgetBytes: 1_000_000,
  /** Characters of one string that are analysed into tokens. */
  analysedChars: 100_000,
} as const;

/**
 * Upper bounds (inclusive, in bytes of the string) of the field-length buckets 1..4 of the `n` lexemes; longer strings
 * are bucket 5. Bytes rather than tokens: octet_length is free, counting tokens cost a quarter of the document's
 * build time. Each string (also each member of an array) has its own bucket; a query takes the shortest.
 */
export const LENGTH_BUCKETS = [16, 40, 100, 250] as const;

const hex = (c: number) => (c > 0xffff ? `\\U${c.toString(16).padStart(8, '0')}` : `\\u${c.toString(16).padStart(4, '0')}`);
const pgClass = (ranges: ReadonlyArray<readonly [number, number]>) => `[${ranges.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('')}]`;
export const SEP = pgClass(SEPARATOR_RANGES);

const foldSteps = CASE_TABLES.map((t) => `  IF x ~ '${pgClass(t.ranges)}' THEN x := translate(x, '${t.from}', '${t.to}'); END IF;`).join('\n');

// The scalar values of `p_data` (a jsonb object) with their escaped dotted field names: top-level scalars directly,
// nested ones through trellis_search_nested (only called for objects and arrays). OFFSET 0 keeps the subquery from
// being flattened into LEAF_LEXEMES, which would evaluate `words` (a regular expression) once per reference.
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

// The lexemes of one value (a row of LEAVES) as one string, U+001D between them: string functions over the whole
// value instead of a row per token (regexp_replace turns every run of separators into "end of this lexeme, start of
// the next one"), which is cheaper than a set-returning tokenizer or one UNION branch per lexeme kind.
// `fieldInReplacement` is how the field name enters
// regexp_replace's replacement text, where a backslash is an escape: 006 wrote `f` as it is, so a field name holding
// `\\`, `\&` or `\1`-`\9` came out mangled in every token lexeme but the last (migration 009 fixes it).
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
export const LEAF_LEXEMES = leafLexemes('f');

/**
 * The end of trellis_search_document (PL/pgSQL): the tsvector of `doc`, the document's lexemes joined by \x1d, and
 * the over-budget path built again from p_data (with `lexemes`, leafLexemes of some version). Shared with
 * migrations 007 and 009, which changed how `doc` is built and how a field name enters the token lexemes.
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
export const DOCUMENT_OF_TEXT = documentOfText(LEAF_LEXEMES);

export default /* sql */ `
-- Field names and keyword values inside lexemes: U+001F ends a value, U+001D separates lexemes while the document is
-- built, so neither may appear in them.
CREATE FUNCTION trellis_search_escape(p text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
  SELECT replace(replace(replace(p, E'\\x1e', E'\\x1e1'), E'\\x1f', E'\\x1e2'), E'\\x1d', E'\\x1e3')
$fn$;

-- Lower case, locale-independent (see the top of this file). ASCII-only text (the common case) skips the tables.
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

-- The search document of an element's data (see the top of this file). PL/pgSQL so that its statements are planned
-- once per session, not on every write. Usually one statement; a document of more than 2047 bytes drops its
-- over-long lexemes (array_to_tsvector does not check them: it silently truncates the length field), and only a
-- document over the budget is built again, deduplicated and cut by priority (OFFSET 0: without it the priority was
-- computed inside the aggregate from the whole value, which the spilling hash aggregate then wrote to disk once per
-- lexeme: 10 GB and 15 s for a 1.4 MB element; now 0.3 s). jit off: the planner's row estimates for the
-- set-returning functions crossed jit_above_cost, and compiling took 20 ms per write (measured on PostgreSQL 15,
-- against 0.04 ms for the work itself).
CREATE FUNCTION trellis_search_document(p_data jsonb) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET jit = off AS $fn$
DECLARE
  doc text;
BEGIN
  IF p_data IS NULL OR jsonb_typeof(p_data) <> 'object' OR p_data = '{}'::jsonb THEN
    RETURN ''::tsvector;
  END IF;
  SELECT string_agg(${LEAF_LEXEMES}, E'\\x1d') INTO doc FROM (${LEAVES}) leaf;
${DOCUMENT_OF_TEXT}END
$fn$;

-- Query side. A tsquery that matches any of the lexemes (none: the lexeme 'x', which no document has), built with the
-- quoting of the tsquery syntax so that any lexeme is taken literally. Used for the terms a fuzzy match expands to.
CREATE FUNCTION trellis_search_any(p text[]) RETURNS tsquery LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
  SELECT coalesce(string_agg('''' || replace(replace(l, '\\', '\\\\'), '''', '''''') || '''', ' | '), '''x''')::tsquery
  FROM unnest(p) l
$fn$;

-- Levenshtein distance, or any value above p_max once it is certainly above p_max (the band of the dynamic programme
-- stops early). PL/pgSQL, for PGlite, which is opened without the fuzzystrmatch extension; where fuzzystrmatch can be
-- created, trellis_search_distance uses its levenshtein_less_equal (C) instead. Both agree on the result up to p_max.
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

DO $do$
BEGIN
  BEGIN
    CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;
  EXCEPTION WHEN OTHERS THEN
    NULL; -- not installed (PGlite without the extension bundle) or not allowed: the PL/pgSQL version serves
  END;
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'fuzzystrmatch') THEN
    CREATE FUNCTION trellis_search_distance(a text, b text, p_max integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT levenshtein_less_equal(a, b, p_max)';
  ELSE
    CREATE FUNCTION trellis_search_distance(a text, b text, p_max integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT trellis_search_levenshtein(a, b, p_max)';
  END IF;
END
$do$;

ALTER TABLE elements ADD COLUMN search tsvector GENERATED ALWAYS AS (trellis_search_document(data)) STORED;

CREATE INDEX elements_search ON elements USING gin (search);
`;
