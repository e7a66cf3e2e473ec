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
