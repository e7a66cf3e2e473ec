// Field names holding a backslash, indexed right.
//
// The search document splits a string into token lexemes with one regexp_replace, whose replacement text carries
// the field name (006 leafLexemes). In replacement text a backslash is an escape (`\\` is one backslash, `\&` the
// match, `\1`-`\9` a group), and 006 and 007 put the field name in as it is: under a field named `a\1b` or `c\\d`
// every token lexeme of a string but the last came out with a mangled field name, so a `match` on that field found
// only the string's last word. Here the field name's backslashes are doubled in the replacement (E'' strings, so
// that the function reads the same whatever standard_conforming_strings says), and the stored vectors that differ
// are recomputed: only rows with a backslash somewhere in `data` can differ, and `SET data = data` makes
// PostgreSQL compute the generated column again. Every other document keeps its vector, which
// test/search/search-document.test.ts checks against 006's function.
import { leafLexemes } from './006-search-index.js';
import { searchDocumentFunction } from './007-search-document.js';

const FIELD_IN_REPLACEMENT = `replace(f, E'\\\\', E'\\\\\\\\')`;

export default /* sql */ `
${searchDocumentFunction(leafLexemes(FIELD_IN_REPLACEMENT))}

UPDATE elements SET data = data
WHERE strpos(data::text, E'\\\\') > 0 AND search IS DISTINCT FROM trellis_search_document(data);
`;
