// Header fields of files other than the Upload-* fields (upload-headers.ts): digests and Content-Disposition of
// writes, parsed with maintained parsers (every malformed value is a 400 bad-content before any byte of the body is
// read), the Range of downloads, and the Repr-Digest of answers.
import { parse as parseDisposition } from 'content-disposition';
import { parseDictionary, serializeDictionary } from 'structured-headers';
import type { RangeRequest } from '../domain/files/byte-ranges.js';
import { Problem } from '../errors.js';

/**
 * The expected SHA-256 from `Repr-Digest`, or from `Content-Digest` when there is no `Repr-Digest` (for a whole,
 * unencoded body the two are the same). Undefined when neither is sent. Other algorithms next to `sha-256` are
 * ignored; a field without `sha-256` names only algorithms we do not support: 400.
 */
export function parseSha256Digest(
  reprDigest: string | undefined,
  contentDigest: string | undefined,
): Buffer | undefined {
  const name = reprDigest !== undefined ? 'Repr-Digest' : 'Content-Digest';
  const value = reprDigest ?? contentDigest;
  if (value === undefined) return undefined;
  const dictionary = parseStructured(() => parseDictionary(value), name);
  const member = dictionary.get('sha-256');
  if (member === undefined)
    throw new Problem(
      'bad-content',
      `The header '${name}' has no sha-256 member; sha-256 is the only supported digest algorithm.`,
    );
  const digest = member[0];
  if (!(digest instanceof ArrayBuffer) || digest.byteLength !== 32)
    throw new Problem(
      'bad-content',
      `The sha-256 member of '${name}' must be a byte sequence of 32 bytes (sha-256=:<base64>:).`,
    );
  return Buffer.from(digest);
}

/** `Repr-Digest` of stored bytes, from their hex SHA-256. */
export function reprDigestOf(sha256Hex: string): string {
  return serializeDictionary(new Map([['sha-256', [Buffer.from(sha256Hex, 'hex'), new Map()]]]));
}

const EXTENSION = /^[a-z0-9][a-z0-9_+-]{0,31}$/;

/**
 * The file extension from the filename in `Content-Disposition` (`filename*` wins over `filename`, as RFC 6266
 * says): the part after the last dot of the last path segment, lowercased; `bin` when there is none, when it has
 * characters other than letters, digits, `_`, `+` and `-`, or when the header cannot be parsed (the spec's "bin
 * if none can be determined": a broken header only costs the extension, not the upload).
 */
export function extensionFromDisposition(value: string | undefined): string {
  if (value === undefined) return 'bin';
  let filename: unknown;
  try {
    filename = parseDisposition(value).parameters.filename;
  } catch {
    filename = lenientFilename(value);
  }
  if (typeof filename !== 'string') return 'bin';
  const base = filename.split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  if (dot <= 0) return 'bin'; // no dot, or only a leading one (".profile" has no extension)
  const extension = base.slice(dot + 1).toLowerCase();
  return EXTENSION.test(extension) ? extension : 'bin';
}

/**
 * The filename of a Content-Disposition the strict parser refuses, where it can still be read: clients send
 * `filename=my report.pdf` unquoted, a trailing `;`, no disposition type, or an unterminated quote. `filename*`
 * (RFC 8187: charset'language'percent-encoded) wins as in the strict parse. Undefined when there is none.
 */
function lenientFilename(value: string): string | undefined {
  const parameter = (name: string) => new RegExp(`(?:^|;)\\s*${name}\\s*=\\s*(?:"([^"]*)"?|([^;]*))`, 'i').exec(value);
  const extended = parameter('filename\\*');
  if (extended) {
    const encoded = (extended[1] ?? extended[2] ?? '').trim().replace(/^[^']*'[^']*'/, '');
    try {
      return decodeURIComponent(encoded);
    } catch {
      // not percent-encoding after all: fall back to the plain parameter
    }
  }
  const plain = parameter('filename');
  return plain ? (plain[1] ?? plain[2] ?? '').trim() : undefined;
}

function parseStructured<T>(parse: () => T, name: string): T {
  try {
    return parse();
  } catch {
    throw new Problem('bad-content', `The header '${name}' is not a valid structured field.`);
  }
}

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/i;

/**
 * The `Range` of a download: null without one; the problem (400 bad-content) for an unparsable form, another unit,
 * a multi-range or a range that ends before it starts. The problem is the domain's to answer: only when If-Range
 * lets the range apply, after the checks of the element and its preconditions.
 */
export function parseRange(header: string | undefined): RangeRequest | Problem | null {
  if (header === undefined) return null;
  const value = header.trim();
  if (value.includes(',')) return new Problem('bad-content', 'Only one range per request is supported.');
  const match = SINGLE_RANGE.exec(value);
  if (!match || (match[1] === '' && match[2] === ''))
    return new Problem(
      'bad-content',
      'The Range header must have the form bytes=<start>-<end>, bytes=<start>- or bytes=-<suffix length>.',
    );
  const [, first, last] = match as unknown as [string, string, string];
  if (first === '') return { suffix: Number(last) };
  if (last !== '' && Number(last) < Number(first))
    return new Problem('bad-content', 'The range ends before it starts.');
  return { first: Number(first), last: last === '' ? null : Number(last) };
}
