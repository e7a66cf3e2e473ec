// Request headers of file writes other than the Upload-* fields (upload-fields.ts): digests and Content-Disposition,
// parsed with maintained parsers. Every malformed value is a 400 bad-content before any byte of the body is read.
import { parse as parseDisposition } from 'content-disposition';
import { parseDictionary, serializeDictionary } from 'structured-headers';
import { Problem } from '../../errors.js';

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
