// The byte range a download sends (RFC 9110 section 14, narrowed by the spec and the design notes' "Ranges": one
// range per request). HTTP parses the `Range` header (http/file-headers.ts); what it asks for is decided here,
// against the file's length and its ETag.

import type { ByteRange } from '../../blob/blob-store.js';
import { Problem } from '../../errors.js';

/** A single range as a client asked for it: from `first` (to `last`, or to the end), or the last `suffix` bytes. */
export type RangeRequest = { first: number; last: number | null } | { suffix: number };

/**
 * The range to send of a file of `total` bytes. A start at or beyond the end, a suffix of 0, or any range of an
 * empty file is 416 with `requested-start`, `total-length` and `Content-Range: bytes *\/<total>`. An end beyond
 * the file is clamped, and a suffix longer than the file means the whole file (still a 206).
 */
export function satisfiableRange(request: RangeRequest, total: number): ByteRange {
  let start: number;
  let end: number;
  if ('suffix' in request) {
    start = Math.max(0, total - request.suffix);
    end = total - 1;
    if (request.suffix === 0) unsatisfiable(total, total);
  } else {
    start = request.first;
    end = request.last === null ? total - 1 : Math.min(request.last, total - 1);
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
