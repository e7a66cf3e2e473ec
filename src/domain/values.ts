// Small value helpers shared by the domain modules.
import { randomUUID } from 'node:crypto';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
export const newId = (): string => randomUUID();

/** ISO 8601 with a numeric offset, as the reference implementation writes it: 2024-05-06T12:00:00+00:00. */
export function isoTime(date: Date): string {
  // toISOString() is always YYYY-MM-DDTHH:mm:ss.sssZ for the years we store.
  return `${date.toISOString().slice(0, 19)}+00:00`;
}

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
