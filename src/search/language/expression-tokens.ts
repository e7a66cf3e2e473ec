// The tokens of the `{{ … }}` expressions (expression-syntax.ts parses them): numbers, strings with their escapes
// decoded, names and punctuation, each with its offset in the source for errors.

/** A failure at an offset of the expression source; turned into a `bad-content` problem at the API boundary. */
export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Index just past the closing quote of the literal opening at `start`, or -1 when it is not closed. */
export function endOfQuoted(s: string, start: number): number {
  const quote = s[start];
  for (let i = start + 1; i < s.length; i++) {
    if (s[i] === '\\' && quote !== '`') i++;
    else if (s[i] === quote) return i;
  }
  return -1;
}

type TokenKind = 'number' | 'string' | 'name' | 'punct' | 'eof';

export interface Token {
  kind: TokenKind;
  /** The source text (for strings: the decoded value). */
  text: string;
  number?: number;
  pos: number;
}

// Longest first, so that `**` wins over `*` and `?.` over `?`.
const PUNCTUATION = [
  '**',
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '??',
  '?.',
  '..',
  '+',
  '-',
  '*',
  '/',
  '%',
  '^',
  '<',
  '>',
  '!',
  '?',
  ':',
  ',',
  '.',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
  '#',
];
const NUMBER =
  /0[xX][0-9a-fA-F](?:_?[0-9a-fA-F])*|0[oO][0-7](?:_?[0-7])*|0[bB][01](?:_?[01])*|(?:\d(?:_?\d)*(?:\.\d(?:_?\d)*)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?/y;
const NAME = /[\p{L}_$][\p{L}\p{N}_$]*/uy;
const NAME_CHAR = /[\p{L}\p{N}_$]/u;
const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  b: '\b',
  f: '\f',
  v: '\v',
  a: '\x07',
  '0': '\0',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '`': '`',
  '/': '/',
};

export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    NUMBER.lastIndex = i;
    const number = /[\d.]/.test(c) ? NUMBER.exec(source) : null;
    if (number) {
      const text = number[0];
      if (NAME_CHAR.test(source[i + text.length] ?? ''))
        throw new ExpressionError(`invalid number literal '${text}${source[i + text.length]}'`, i);
      const value = Number(text.replaceAll('_', ''));
      if (!Number.isFinite(value)) throw new ExpressionError(`number literal '${text}' is too large`, i);
      tokens.push({ kind: 'number', text, number: value, pos: i });
      i += text.length;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      const end = endOfQuoted(source, i);
      if (end < 0) throw new ExpressionError('unterminated string literal', i);
      const raw = source.slice(i + 1, end);
      tokens.push({ kind: 'string', text: c === '`' ? raw : unescapeString(raw, i + 1), pos: i });
      i = end + 1;
      continue;
    }
    NAME.lastIndex = i;
    const name = NAME.exec(source);
    if (name) {
      tokens.push({ kind: 'name', text: name[0], pos: i });
      i += name[0].length;
      continue;
    }
    // `a ?.5 : 1` is a conditional with the number .5, not optional chaining.
    const punct = PUNCTUATION.find((p) => source.startsWith(p, i) && !(p === '?.' && /\d/.test(source[i + 2] ?? '')));
    if (!punct) throw new ExpressionError(`unexpected character '${c}'${c === '=' ? " (comparison is '==')" : ''}`, i);
    tokens.push({ kind: 'punct', text: punct, pos: i });
    i += punct.length;
  }
  tokens.push({ kind: 'eof', text: 'end of expression', pos: source.length });
  return tokens;
}

function unescapeString(raw: string, offset: number): string {
  if (!raw.includes('\\')) return raw;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== '\\') {
      out += raw[i];
      continue;
    }
    const e = raw[++i] ?? '';
    const hexLength = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
    if (hexLength > 0) {
      const hex = raw.slice(i + 1, i + 1 + hexLength);
      const code = /^[0-9a-fA-F]+$/.test(hex) && hex.length === hexLength ? parseInt(hex, 16) : NaN;
      if (!(code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff))
        throw new ExpressionError(`invalid escape sequence '\\${e}${hex}'`, offset + i - 1);
      out += String.fromCodePoint(code);
      i += hexLength;
    } else if (Object.hasOwn(ESCAPES, e)) out += ESCAPES[e];
    else throw new ExpressionError(`unknown escape sequence '\\${e}'`, offset + i - 1);
  }
  return out;
}
