// The name a download offers: what of a client's own text may go into it.

/**
 * What changes how a name is displayed rather than what it says: control characters (Cc), format characters (Cf:
 * the bidi controls U+202A-U+202E, U+2066-U+2069, U+200E, U+200F and U+061C among them, with zero-width and tag
 * characters), line and paragraph separators (Zl, Zp), and unpaired surrogates (Cs), which no encoding can carry.
 * A right-to-left override would show `photo<U+202E>gpj.exe` as `photoexe.jpg`.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/gu;

/**
 * A part of a filename offered to a client (the element's name, the file's extension) without hidden characters
 * (see HIDDEN), with path separators as `_` and no surrounding white space; empty when nothing is left.
 */
export function fileNamePart(text: string): string {
  return text.replace(HIDDEN, '').replace(/[\\/]/g, '_').trim();
}
