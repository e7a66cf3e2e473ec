// Fuzzy matching counts a transposition of two adjacent characters as one edit, as Elasticsearch does by default
// (`fuzzy_transpositions: true`): "teh" is one edit from "the", so fuzziness AUTO (one edit for 3-5 characters)
// finds it. Plain Levenshtein, used so far, counts two.
//
// trellis_search_osa: the optimal string alignment distance (Levenshtein plus adjacent transpositions, no
// substring edited twice: Lucene's LevenshteinAutomata with transpositions), or any value above p_max once it is
// certainly above it. The band stops early as in 006's Levenshtein: a row's minimum is at most one more than the
// row before's, so once a row is above p_max, so is everything a transposition could reach from two rows up.
//
// trellis_search_fuzzy_distance(a, b, p_max, transpositions): the distance a fuzzy match uses. Without
// transpositions it is trellis_search_distance (Levenshtein). With them, on PostgreSQL with fuzzystrmatch, C
// Levenshtein first rules out what is certainly too far (the OSA distance is at least half the Levenshtein one), so
// the PL/pgSQL distance runs only for near candidates; on PGlite the PL/pgSQL distance serves for all, as before.
export default /* sql */ `
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

DO $do$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'fuzzystrmatch') THEN
    CREATE FUNCTION trellis_search_fuzzy_distance(a text, b text, p_max integer, transpositions boolean) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
    'SELECT CASE WHEN NOT transpositions THEN trellis_search_distance(a, b, p_max)
                 WHEN trellis_search_distance(a, b, 2 * p_max) > 2 * p_max THEN p_max + 1
                 ELSE trellis_search_osa(a, b, p_max) END';
  ELSE
    CREATE FUNCTION trellis_search_fuzzy_distance(a text, b text, p_max integer, transpositions boolean) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
    'SELECT CASE WHEN transpositions THEN trellis_search_osa(a, b, p_max) ELSE trellis_search_distance(a, b, p_max) END';
  END IF;
END
$do$;
`;
