// Conditional requests (RFC 9110 section 13): If-Match uses strong comparison, If-None-Match weak comparison.
import { Problem } from '../../errors.js';

export interface Conditions {
  ifMatch?: string;
  ifNoneMatch?: string;
}

/** Whether the request makes any precondition (the element's ETag then has to be computed). */
export const hasConditions = (conditions: Conditions): boolean =>
  conditions.ifMatch !== undefined || conditions.ifNoneMatch !== undefined;

function tags(header: string): string[] | '*' {
  if (header.trim() === '*') return '*';
  return header.match(/(?:W\/)?"[^"]*"/g) ?? [];
}

const strong = (tag: string) => !tag.startsWith('W/');
const opaque = (tag: string) => tag.replace(/^W\//, '');

/** If-Match against the current ETag (null: the resource does not exist). Throws 412 when it fails. */
export function checkIfMatch(ifMatch: string | undefined, current: string | null): void {
  if (ifMatch === undefined) return;
  const list = tags(ifMatch);
  const ok = current !== null && (list === '*' || list.some((t) => strong(t) && t === current));
  if (!ok) throw new Problem('precondition-failed', 'If-Match does not match the current ETag.');
}

/** True when If-None-Match matches (GET/HEAD then answer 304; other methods 412). */
export function ifNoneMatchHits(ifNoneMatch: string | undefined, current: string | null): boolean {
  if (ifNoneMatch === undefined || current === null) return false;
  const list = tags(ifNoneMatch);
  return list === '*' || list.some((t) => opaque(t) === opaque(current));
}

/**
 * For GET and HEAD: If-Match first (412 when it fails), then whether If-None-Match makes the answer a 304.
 * `current`: the representation's ETag; NO_ETAG for one that exists but carries none (a large collection).
 */
export function checkReadPreconditions(conditions: Conditions, current: string | null): boolean {
  checkIfMatch(conditions.ifMatch, current);
  return current !== NO_ETAG && ifNoneMatchHits(conditions.ifNoneMatch, current);
}

/** The ETag of a representation that exists without one: If-Match `*` passes, any entity tag fails. */
export const NO_ETAG = '';

/** For state-changing methods: both preconditions, 412 on failure. */
export function checkWritePreconditions(conditions: Conditions, current: string | null): void {
  checkIfMatch(conditions.ifMatch, current);
  if (ifNoneMatchHits(conditions.ifNoneMatch, current))
    throw new Problem('precondition-failed', 'If-None-Match matches the current ETag.');
}
