// The `Range` and `If-Range` request headers of file downloads (RFC 9110 section 14, narrowed by the spec and
// the design notes' "Ranges": one range per request).

import type { ByteRange } from '../../blob/blob-store.js';
import { Problem } from '../../errors.js';

const SINGLE = /^bytes=(\d*)-(\d*)$/i;

/**
 * The range to send of a file of `total` bytes, or null for the whole file. Unparsable forms, other units and
 * multi-ranges are 400 bad-content; a start at or beyond the end, `bytes=-0`, or any range of an empty file is
 * 416 with `requested-start`, `total-length` and `Content-Range: bytes *\/<total>`. An end beyond the file is
 * clamped, and a suffix longer than the file means the whole file (still a 206).
 */
export function parseRange(header: string | undefined, total: number): ByteRange | null {
  if (header === undefined) return null;
  const value = header.trim();
  if (value.includes(',')) throw new Problem('bad-content', 'Only one range per request is supported.');
  const match = SINGLE.exec(value);
  if (!match || (match[1] === '' && match[2] === ''))
    throw new Problem(
      'bad-content',
      'The Range header must have the form bytes=<start>-<end>, bytes=<start>- or bytes=-<suffix length>.',
    );
  const [, first, last] = match as unknown as [string, string, string];
  let start: number;
  let end: number;
  if (first === '') {
    const suffix = Number(last);
    start = Math.max(0, total - suffix);
    end = total - 1;
    if (suffix === 0) unsatisfiable(total, total);
  } else {
    start = Number(first);
    end = last === '' ? total - 1 : Math.min(Number(last), total - 1);
    if (last !== '' && Number(last) < start) throw new Problem('bad-content', 'The range ends before it starts.');
  }
  if (total === 0 || start >= total) unsatisfiable(start, total);
  return { start, end };
}

function unsatisfiable(start: number, total: number): never {
  throw new Problem(
    'range-not-satisfiable',
    `The range starting at byte ${start} cannot be served from a file of ${total} bytes.`,
    { 'requested-start': start, 'total-length': total },
    { 'content-range': `bytes */${total}`, 'accept-ranges': 'bytes' },
  );
}

/**
 * If-Range: the range applies only when the validator is the current strong ETag; otherwise the whole file is
 * sent. A date never matches: file responses carry no Last-Modified to compare it with.
 */
export function ifRangeAllows(ifRange: string | undefined, etag: string): boolean {
  if (ifRange === undefined) return true;
  const value = ifRange.trim();
  return !value.startsWith('W/') && value === etag;
}
