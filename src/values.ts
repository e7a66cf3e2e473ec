// Value checks shared by every layer: a leaf module that configuration, the domain, storage and HTTP may all import.
import { randomUUID } from 'node:crypto';

/** A UUID in its text form, any version, either case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
export const newId = (): ElementId => randomUUID() as ElementId;

declare const elementIdBrand: unique symbol;
/**
 * An element's id as the domain takes it: a UUID, lower-cased. Only parseElementId (at the edge: a path, a body, a
 * backup file) and the stores (ids read back from the database) make one, so the domain never checks an id again.
 */
export type ElementId = string & { readonly [elementIdBrand]: true };

/** `text` as an ElementId, or null when it is not a UUID. */
export const parseElementId = (text: unknown): ElementId | null =>
  isUuid(text) ? (text.toLowerCase() as ElementId) : null;

/** An id the database handed back (always lower-case, always a UUID): no check. For storage adapters only. */
export const storedElementId = (text: string): ElementId => text as ElementId;

/** ISO 8601 with a numeric offset, as the reference implementation writes it: YYYY-MM-DDTHH:MM:SS+00:00. */
export function isoTime(date: Date): string {
  // toISOString() is always YYYY-MM-DDTHH:mm:ss.sssZ for the years we store.
  return `${date.toISOString().slice(0, 19)}+00:00`;
}

/**
 * Properties the service sets on every element (spec "Properties inside data"): no client may set them, and no
 * setting may name one (register.uniqueIdentifier).
 */
export const BASE_RESERVED: readonly string[] = ['id', 'created', 'updated', 'file', 'hasFile'];

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// The instants PostgreSQL reads back from toISOString(): years 1 to 9999 (year 0 and the six-digit forms of
// Date are refused, a 500 the client never caused).
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * Epoch milliseconds as a timestamptz parameter for comparisons with stored times (which are of years 1 to 9999):
 * an instant before year 1 compares with them as -infinity does, one after year 9999 as infinity.
 */
export function timestamptzBound(ms: number): string {
  if (ms < FIRST_INSTANT) return '-infinity';
  if (ms > LAST_INSTANT) return 'infinity';
  return new Date(ms).toISOString();
}

// PostgreSQL stores no U+0000 in text or jsonb, and its jsonb input refuses an unpaired UTF-16 surrogate.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The path of the first key, string or number in `value` that PostgreSQL cannot store (U+0000, an unpaired
 * surrogate, a number beyond the double range), or null.
 */
export function unstorableAt(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? path || '(the body)' : null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : path || '(the body)';
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableAt(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, member] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (UNSTORABLE.test(key)) return `the key of ${JSON.stringify(at)}`;
    const found = unstorableAt(member, at);
    if (found !== null) return found;
  }
  return null;
}

const SUSPECT_JSON_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * Whether a bind parameter holds what PostgreSQL refuses: unstorableAt of the value, and for a jsonb parameter (JSON
 * text, or an array of them) also of the value its text stands for (`"\u0000"` is escaped in the text).
 */
export function unstorableParameter(value: unknown, cast: string): boolean {
  if (unstorableAt(value) !== null) return true;
  if (!cast.startsWith('jsonb')) return false;
  const texts = Array.isArray(value) ? value : [value];
  return texts.some(
    (t) => typeof t === 'string' && SUSPECT_JSON_ESCAPE.test(t) && unstorableAt(JSON.parse(t)) !== null,
  );
}
