// The analyzer the search index and the query side share (Elasticsearch's standard analyzer, approximated):
// lowercase, then split on anything that is not a letter or a digit. Both steps are locale-independent on purpose,
// so that PGlite (ctype C.UTF-8) and a PostgreSQL database whose locale is "C" produce the same tokens: ASCII is
// lowercased with lower(... COLLATE "C"), other scripts with the translate() tables below, and the separators are
// explicit code point ranges.

/** Code point ranges that separate tokens: ASCII and Latin-1 punctuation/symbols/controls, general punctuation, CJK punctuation, symbols, emoji. */
export const SEPARATOR_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x01, 0x2f],
  [0x3a, 0x40],
  [0x5b, 0x60],
  [0x7b, 0xa9],
  [0xab, 0xb4],
  [0xb6, 0xb9],
  [0xbb, 0xbf],
  [0xd7, 0xd7],
  [0xf7, 0xf7],
  [0x2000, 0x2bff],
  [0x2e00, 0x2e7f],
  [0x3000, 0x303f],
  [0xfe10, 0xfe1f],
  [0xfe30, 0xfe6f],
  [0xfeff, 0xfeff],
  [0xff00, 0xff0f],
  [0xff1a, 0xff20],
  [0xff3b, 0xff40],
  [0xff5b, 0xff65],
  [0xfff0, 0xffff],
  [0x1f000, 0x1faff],
];

/** Blocks of upper-case letters mapped to lower case by translate() (each applied only when the text has a letter of the block). */
const CASE_BLOCKS: ReadonlyArray<ReadonlyArray<readonly [number, number]>> = [
  [[0xc0, 0x24f]],
  [[0x370, 0x52f]],
  [
    [0x531, 0x556],
    [0x10a0, 0x10c5],
    [0x1e00, 0x1fff],
    [0x2c00, 0x2c2f],
    [0xff21, 0xff3a],
  ],
];

/** Per block: the range check and the from/to strings of translate(). */
export const CASE_TABLES: ReadonlyArray<{
  ranges: ReadonlyArray<readonly [number, number]>;
  from: string;
  to: string;
}> = CASE_BLOCKS.map((ranges) => {
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

const hex = (c: number) =>
  c > 0xffff ? `\\U${c.toString(16).padStart(8, '0')}` : `\\u${c.toString(16).padStart(4, '0')}`;

/** A PostgreSQL regular expression bracket class of the code point ranges. */
export const pgClass = (ranges: ReadonlyArray<readonly [number, number]>) =>
  `[${ranges.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('')}]`;

/** One separator, as a regular expression class. */
export const SEP = pgClass(SEPARATOR_RANGES);
