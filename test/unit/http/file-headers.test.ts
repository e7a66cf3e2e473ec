// The header fields of files other than Upload-* (src/http/file-headers.ts): the digests a write may carry, the
// extension a Content-Disposition gives, the Range of a download, and the Repr-Digest of an answer.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Problem } from '../../../src/errors.js';
import {
  extensionFromDisposition,
  parseRange,
  parseSha256Digest,
  reprDigestOf,
} from '../../../src/http/file-headers.js';

const sha = createHash('sha256').update('hello').digest();
const field = `sha-256=:${sha.toString('base64')}:`;

function badContent(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(Problem);
    expect((error as Problem).slug).toBe('bad-content');
    return (error as Problem).detail;
  }
  throw new Error('no problem was thrown');
}

describe('digests', () => {
  it('take sha-256 from Repr-Digest, else from Content-Digest; other algorithms beside it are ignored', () => {
    expect(parseSha256Digest(undefined, undefined)).toBeUndefined();
    expect(parseSha256Digest(field, undefined)?.equals(sha)).toBe(true);
    expect(parseSha256Digest(undefined, `md5=:AAAA:, ${field}`)?.equals(sha)).toBe(true);
    const other = `sha-256=:${Buffer.alloc(32).toString('base64')}:`;
    expect(parseSha256Digest(field, other)?.equals(sha)).toBe(true);
  });

  it('refuse a field that is no dictionary, has no sha-256, or whose sha-256 is no 32-byte sequence', () => {
    expect(badContent(() => parseSha256Digest('sha-256=:not base64', undefined))).toMatch(
      /'Repr-Digest' is not a valid structured field/,
    );
    expect(badContent(() => parseSha256Digest(undefined, 'md5=:AAAA:'))).toMatch(/'Content-Digest' has no sha-256/);
    expect(badContent(() => parseSha256Digest('sha-256=:AAAA:', undefined))).toMatch(/32 bytes/);
    expect(badContent(() => parseSha256Digest('sha-256="text"', undefined))).toMatch(/32 bytes/);
  });

  it('Repr-Digest of stored bytes reads back as the same digest', () => {
    const hex = sha.toString('hex');
    expect(reprDigestOf(hex)).toBe(field);
    expect(parseSha256Digest(reprDigestOf(hex), undefined)?.toString('hex')).toBe(hex);
  });
});

describe('the extension from Content-Disposition', () => {
  it.each([
    [undefined, 'bin'],
    ['attachment; filename="report.PDF"', 'pdf'],
    ['attachment; filename="a.txt"; filename*=UTF-8\'\'b%C3%A4.tar.gz', 'gz'],
    ['attachment; filename="C:\\\\dir\\\\photo.jpeg"', 'jpeg'],
    ['attachment; filename=".profile"', 'bin'],
    ['attachment; filename="noext"', 'bin'],
    ['attachment; filename="x.h√©"', 'bin'],
    [`attachment; filename="x.${'a'.repeat(33)}"`, 'bin'],
    // What the strict parser refuses is still read where it can be.
    ['attachment; filename=my report.pdf', 'pdf'],
    ['filename="notes.md";', 'md'],
    ['attachment; filename="unterminated.csv', 'csv'],
    ["attachment; filename*=UTF-8''%E2%82%AC.odt", 'odt'],
    ['attachment; filename*=UTF-8\'\'%ZZ.doc; filename="fallback.rtf"', 'rtf'],
    ['attachment', 'bin'],
  ])('%s gives %s', (value, extension) => {
    expect(extensionFromDisposition(value)).toBe(extension);
  });
});

describe('Range', () => {
  it('reads one range: from a start (to an end), or a suffix', () => {
    expect(parseRange(undefined)).toBeNull();
    expect(parseRange('bytes=0-99')).toEqual({ first: 0, last: 99 });
    expect(parseRange(' BYTES=5- ')).toEqual({ first: 5, last: null });
    expect(parseRange('bytes=-20')).toEqual({ suffix: 20 });
    expect(parseRange('bytes=-0')).toEqual({ suffix: 0 });
    expect(parseRange('bytes=7-7')).toEqual({ first: 7, last: 7 });
  });

  it('hands over, rather than throws, the problem of a range it cannot serve', () => {
    const problems = ['bytes=0-1,4-5', 'bytes=-', 'items=0-1', 'bytes=a-b', 'bytes=5-3'].map(parseRange);
    for (const problem of problems) {
      expect(problem).toBeInstanceOf(Problem);
      expect((problem as Problem).status).toBe(400);
    }
    expect((problems[0] as Problem).detail).toMatch(/Only one range/);
    expect((problems[4] as Problem).detail).toMatch(/ends before it starts/);
  });
});
