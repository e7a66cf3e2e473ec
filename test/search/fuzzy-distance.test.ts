// The edit distances of fuzzy matching (src/storage/schema/search.ts) against plain implementations: Levenshtein, and
// the optimal string alignment distance (Levenshtein plus adjacent transpositions) that ES's default
// fuzzy_transpositions counts. Both backends: PostgreSQL answers through fuzzystrmatch's C Levenshtein (with the
// PL/pgSQL functions behind it), PGlite through PL/pgSQL alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

function osa(a: string[], b: string[], transpositions: boolean): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (transpositions && i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

// A fixed pseudo-random sequence: the same pairs on every run.
function pairs(count: number): [string, string][] {
  let seed = 42;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const alphabet = ['a', 'b', 'c', 'ä', '日'];
  const word = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
  const out: [string, string][] = [];
  for (let k = 0; k < count; k++) {
    const a = word(Math.floor(next() * 7));
    // Often a near variant of a (swaps, edits), sometimes an unrelated word.
    let b = [...a];
    for (let e = Math.floor(next() * 3); e > 0; e--) {
      const at = Math.floor(next() * (b.length + 1));
      const r = next();
      if (r < 0.4 && at + 1 < b.length) [b[at], b[at + 1]] = [b[at + 1]!, b[at]!];
      else if (r < 0.6) b.splice(at, 0, alphabet[Math.floor(next() * alphabet.length)]!);
      else if (r < 0.8 && at < b.length) b.splice(at, 1);
      else if (at < b.length) b[at] = alphabet[Math.floor(next() * alphabet.length)]!;
    }
    if (next() < 0.2) b = [...word(Math.floor(next() * 7))];
    out.push([a, b.join('')]);
  }
  return out;
}

for (const backend of backendsUnderTest()) {
  describe(`fuzzy distances [${backend}]`, () => {
    let db: Db;
    let dispose: () => Promise<void>;
    beforeAll(async () => {
      ({ db, dispose } = await freshDatabase(backend));
    });
    afterAll(() => dispose());

    it('agree with plain Levenshtein and OSA up to the bound, and say "above it" beyond', async () => {
      const cases = pairs(400).flatMap(([a, b]) => [0, 1, 2].map((max) => ({ a, b, max })));
      const { rows } = await db.query<{ i: number; osa: number; lev: number }>(
        `SELECT c.i, trellis_search_fuzzy_distance(c.a, c.b, c.max, true) AS osa, trellis_search_fuzzy_distance(c.a, c.b, c.max, false) AS lev
         FROM jsonb_to_recordset($1::jsonb) AS c(i int, a text, b text, max int) ORDER BY c.i`,
        [JSON.stringify(cases.map((c, i) => ({ ...c, i })))],
      );
      const clamp = (d: number, max: number) => (d > max ? max + 1 : d);
      const wrong = rows.filter((r) => {
        const c = cases[r.i]!;
        const [a, b] = [[...c.a], [...c.b]];
        const expectOsa = clamp(osa(a, b, true), c.max);
        const expectLev = clamp(osa(a, b, false), c.max);
        return clamp(r.osa, c.max) !== expectOsa || clamp(r.lev, c.max) !== expectLev;
      });
      expect(wrong.map((r) => ({ ...cases[r.i], got: r }))).toEqual([]);
      // The examples the search tests rely on.
      const { rows: named } = await db.query<{ t: number; f: number }>(
        `SELECT trellis_search_fuzzy_distance('teh', 'the', 2, true) AS t, trellis_search_fuzzy_distance('teh', 'the', 2, false) AS f`,
      );
      expect(named[0]).toEqual({ t: 1, f: 2 });
    });
  });
}
