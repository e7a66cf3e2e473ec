// The tokens of a Cypher query, with their offsets for the errors.
import { cypherError } from './cypher-ast.js';

export type Token =
  | { type: 'ident'; offset: number; text: string; quoted: boolean }
  | { type: 'number'; offset: number; text: string; value: number; integer: boolean }
  | { type: 'string'; offset: number; value: string }
  | { type: 'param'; offset: number; name: string }
  | { type: 'punct'; offset: number; text: string }
  | { type: 'eof'; offset: number };

// Longest first. `-`, `<` and `>` stay single characters: the parser composes arrows (`<-`, `->`, `--`) from them,
// which keeps `a.x<-1` (a comparison) and `(a)<-[r]-(b)` (a pattern) both readable.
const PUNCTUATION = [
  '..',
  '<>',
  '<=',
  '>=',
  '!=',
  '=~',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  '.',
  '*',
  '|',
  '=',
  '<',
  '>',
  '-',
  '+',
  '/',
  '%',
  '^',
  ';',
  '!',
  '&',
  '?',
  '~',
];
const IDENT_START = /[A-Za-z_\u00C0-\uFFFF]/;
const IDENT_PART = /[A-Za-z0-9_\u00C0-\uFFFF]/;

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (source.startsWith('//', i)) {
      const end = source.indexOf('\n', i);
      i = end === -1 ? source.length : end + 1;
      continue;
    }
    if (source.startsWith('/*', i)) {
      const end = source.indexOf('*/', i + 2);
      if (end === -1) throw cypherError(i, 'unterminated comment');
      i = end + 2;
      continue;
    }
    const start = i;
    if (IDENT_START.test(c)) {
      while (i < source.length && IDENT_PART.test(source[i]!)) i++;
      tokens.push({ type: 'ident', offset: start, text: source.slice(start, i), quoted: false });
    } else if (c === '`') {
      const [text, next] = readQuotedName(source, i);
      tokens.push({ type: 'ident', offset: start, text, quoted: true });
      i = next;
    } else if (/[0-9]/.test(c)) {
      while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      let integer = true;
      // `1..3` is 1, `..`, 3: a dot only starts a fraction when a digit follows it.
      if (source[i] === '.' && /[0-9]/.test(source[i + 1] ?? '')) {
        integer = false;
        i++;
        while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      }
      if (
        /[eE]/.test(source[i] ?? '') &&
        /[0-9]/.test(source[i + 1] === '-' || source[i + 1] === '+' ? (source[i + 2] ?? '') : (source[i + 1] ?? ''))
      ) {
        integer = false;
        i += source[i + 1] === '-' || source[i + 1] === '+' ? 2 : 1;
        while (i < source.length && /[0-9]/.test(source[i]!)) i++;
      }
      if (i < source.length && IDENT_PART.test(source[i]!))
        throw cypherError(start, `malformed number '${source.slice(start, i + 1)}'`);
      const text = source.slice(start, i);
      const value = Number(text);
      if (integer && !Number.isSafeInteger(value)) throw cypherError(start, `integer ${text} is too large`);
      tokens.push({ type: 'number', offset: start, text, value, integer });
    } else if (c === "'" || c === '"') {
      const [value, next] = readString(source, i);
      tokens.push({ type: 'string', offset: start, value });
      i = next;
    } else if (c === '$') {
      i++;
      let name: string;
      if (source[i] === '`') {
        [name, i] = readQuotedName(source, i);
      } else {
        const from = i;
        while (i < source.length && IDENT_PART.test(source[i]!)) i++;
        name = source.slice(from, i);
      }
      if (name === '') throw cypherError(start, "'$' must be followed by a parameter name");
      tokens.push({ type: 'param', offset: start, name });
    } else {
      const text = PUNCTUATION.find((p) => source.startsWith(p, i));
      if (text === undefined) throw cypherError(start, `unexpected character '${c}'`);
      tokens.push({ type: 'punct', offset: start, text });
      i += text.length;
    }
  }
  tokens.push({ type: 'eof', offset: source.length });
  return tokens;
}

function readQuotedName(source: string, open: number): [string, number] {
  let text = '';
  let i = open + 1;
  for (;;) {
    if (i >= source.length) throw cypherError(open, 'unterminated `quoted name`');
    if (source[i] === '`') {
      if (source[i + 1] === '`') {
        text += '`';
        i += 2;
        continue;
      }
      break;
    }
    text += source[i++];
  }
  if (text === '') throw cypherError(open, 'empty `quoted name`');
  return [text, i + 1];
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '\\': '\\', "'": "'", '"': '"' };

function readString(source: string, open: number): [string, number] {
  const quote = source[open];
  let value = '';
  let i = open + 1;
  for (;;) {
    if (i >= source.length) throw cypherError(open, 'unterminated string literal');
    const c = source[i]!;
    if (c === quote) return [value, i + 1];
    if (c === '\\') {
      const e = source[i + 1] ?? '';
      if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(source.slice(i + 2, i + 6))) {
        value += String.fromCharCode(parseInt(source.slice(i + 2, i + 6), 16));
        i += 6;
        continue;
      }
      if (!(e in ESCAPES)) throw cypherError(i, `unknown escape sequence '\\${e}'`);
      value += ESCAPES[e];
      i += 2;
      continue;
    }
    value += c;
    i++;
  }
}
