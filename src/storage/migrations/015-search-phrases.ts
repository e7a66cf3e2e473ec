// Phrases: `"new york"` in a query_string and the match_phrase query find the words next to each other and in
// that order, as in Elasticsearch, not just all of them somewhere in the field.
//
// The search index (006) keeps no positions: its lexemes are built with array_to_tsvector, which stores none, and a
// tsvector with positions would cost every write more and could not be made with the same string functions. So a
// phrase is looked up in the index as all of its words (the GIN index narrows to elements having every word in the
// field), and then each candidate's own value is checked here: the strings at the field are tokenized exactly as
// the index tokenizes them (same fold, same separators, same 100,000-character limit as 006/007) and the phrase's
// tokens are looked for in them. The check runs only on rows the index has already found, so its cost is per
// candidate, not per element: a two-word phrase costs little more than a match of both words with operator and.
// Per candidate, the check costs about what building that value's search document cost its write, so a phrase over
// many very long values that all hold its words is slow, as a fuzzy match is.
//
// Slop, as Lucene's sloppy phrase: the words may be out of place by at most `slop` positions in total, measured as
// the spread of (position in the value - position in the phrase) over the phrase's words; slop 0 is the exact
// phrase, and two words swap places at slop 2. Computed as the narrowest window over the (position - offset)
// values that holds every word of the phrase. One approximation: a word that occurs twice in a sloppy phrase may be
// matched by the same occurrence in the value twice (Lucene requires two occurrences); for slop 0 the occurrences
// are always distinct.
import { SEARCH_LIMITS, SEP } from './006-search-index.js';

export default /* sql */ `
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

-- Whether a string at the field (escaped dotted name as in the index's lexemes; NULL: any field) holds the phrase.
-- The strings are listed here rather than through 006's LEAVES, which tokenizes every string of the element before
-- any filter can apply (its OFFSET 0): here only the strings at the field are folded and split.
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
