// Header fields of resumable uploads (draft-ietf-httpbis-resumable-upload): Upload-Complete, -Length, -Offset, -Limit,
// the PATCH media type, and the draft interop versions that clients announce with `Upload-Draft-Interop-Version`.
// The service speaks the spec; interop 3 to 6 differ only in the request fields mapped here (SUPPORTED_INTEROP_VERSIONS
// says how), and later versions get plain spec behaviour.
import { parseItem, serializeDictionary } from 'structured-headers';
import type { UploadLimits, UploadState } from '../domain/uploads/upload-state.js';
import { Problem } from '../errors.js';

/**
 * The draft interop versions clients in the field announce, and how they differ from the spec:
 * - 3 (draft-01, Apple's URLSession in iOS 17): `Upload-Incomplete: ?1` instead of `Upload-Complete: ?0`; an append
 *   without it completes the upload.
 * - 4, 5 (draft-02, -03; tus-js-client `protocol: 'ietf-draft-03'`): PATCH bodies carry no particular media type.
 * - 6 (draft-04, -05; tus-js-client `protocol: 'ietf-draft-05'`): the spec's fields.
 * Interop 7 and later are not announced as supported: no 104 for them.
 */
const SUPPORTED_INTEROP_VERSIONS: ReadonlySet<number> = new Set([3, 4, 5, 6]);
const PARTIAL_UPLOAD = 'application/partial-upload';

/** The announced interop version when it is one we speak; null for none, malformed or unknown ones. */
export function interopVersion(value: string | undefined): number | null {
  if (value === undefined) return null;
  const n = structuredInteger(value);
  return n !== null && SUPPORTED_INTEROP_VERSIONS.has(n) ? n : null;
}

/** Clients of interop 3 send `Upload-Incomplete`, the negation of `Upload-Complete`. */
export const usesUploadIncomplete = (interop: number | null) => interop === 3;

/**
 * The `Upload-Complete` value to act on, as a header value for `parseUploadComplete`. Old clients' `Upload-Incomplete`
 * is translated; `appending` says what its absence means there (draft-01: an append without it is the last).
 */
export function uploadCompleteValue(
  headers: { uploadComplete?: string; uploadIncomplete?: string },
  interop: number | null,
  appending: boolean,
): string | undefined {
  if (headers.uploadComplete !== undefined || !usesUploadIncomplete(interop)) return headers.uploadComplete;
  if (headers.uploadIncomplete === undefined) return appending ? '?1' : undefined;
  const incomplete = structuredBoolean(headers.uploadIncomplete);
  if (typeof incomplete !== 'boolean')
    throw new Problem('bad-content', "The header 'Upload-Incomplete' must be a structured boolean, ?0 or ?1.");
  return incomplete ? '?0' : '?1';
}

/** `Upload-Complete`: required, a structured boolean. `?1` is a direct upload, `?0` starts a resumable one. */
export function parseUploadComplete(value: string | undefined): boolean {
  if (value === undefined)
    throw new Problem(
      'bad-content',
      "The header 'Upload-Complete' is required (?1 for a direct upload, ?0 to start a resumable one).",
    );
  const complete = structuredBoolean(value);
  if (complete === undefined)
    throw new Problem('bad-content', "The header 'Upload-Complete' is not a valid structured field.");
  if (complete === null)
    throw new Problem('bad-content', "The header 'Upload-Complete' must be a structured boolean, ?0 or ?1.");
  return complete;
}

/** `Upload-Length` (optional): a non-negative sf-integer (a decimal such as `10.0` is refused, as for Upload-Offset). */
export function parseUploadLength(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = structuredInteger(value);
  if (n === null || n < 0)
    throw new Problem('bad-content', "The header 'Upload-Length' must be a non-negative integer.");
  return n;
}

/** `Upload-Offset` of an append: required, a non-negative structured integer. */
export function parseUploadOffset(value: string | undefined): number {
  const n = value === undefined ? null : structuredInteger(value);
  if (n === null || n < 0)
    throw new Problem(
      'bad-content',
      "The header 'Upload-Offset' is required: the current offset, a non-negative integer.",
    );
  return n;
}

/**
 * The media type of an append. The spec's `application/partial-upload`; clients of interop 3 to 5 may send none (their
 * drafts predate the media type). Anything else, e.g. tus 1.0's `application/offset+octet-stream`, is refused.
 */
export function checkAppendContentType(value: string | undefined, interop: number | null): void {
  if (value === undefined && interop !== null && interop <= 5) return;
  const type = value === undefined ? undefined : value.split(';')[0]!.trim().toLowerCase();
  if (type !== PARTIAL_UPLOAD)
    throw new Problem('bad-content', `An append (PATCH) must have 'Content-Type: ${PARTIAL_UPLOAD}'.`);
}

/**
 * The fields every response that leaves an upload in progress carries (real clients read `Upload-Offset` after
 * each append, also after a failed one).
 */
export function progressFields(state: UploadState): Record<string, string> {
  return {
    'upload-offset': String(state.offset),
    'upload-complete': '?0',
    'upload-limit': uploadLimitField(state.limits),
  };
}

/** `Upload-Limit: max-age=…, max-size=…, min-append-size=…, max-append-size=…` (a structured dictionary). */
export function uploadLimitField(limits: UploadLimits): string {
  const entry = (n: number): [number, Map<string, boolean>] => [n, new Map()];
  return serializeDictionary(
    new Map([
      ['max-age', entry(limits.maxAge)],
      ['max-size', entry(limits.maxSize)],
      ['min-append-size', entry(limits.minAppendSize)],
      ['max-append-size', entry(limits.maxAppendSize)],
    ]),
  );
}

/** An sf-boolean (parameters allowed and ignored); null for another kind of item, undefined for no item at all. */
function structuredBoolean(value: string): boolean | null | undefined {
  let item: unknown;
  try {
    item = parseItem(value)[0];
  } catch {
    return undefined;
  }
  return typeof item === 'boolean' ? item : null;
}

/** An sf-integer (parameters allowed and ignored); a decimal such as `1.0` is not one, though it parses to 1. */
function structuredInteger(value: string): number | null {
  if (!/^\s*-?\d{1,15}\s*(;|$)/.test(value)) return null;
  try {
    const item = parseItem(value)[0];
    return typeof item === 'number' && Number.isInteger(item) ? item : null;
  } catch {
    return null;
  }
}
