// How elements look on the wire, and their ETags. The ETag is a hash of exactly what the response shows, so it
// changes whenever that changes (data, timestamps, file metadata, collection membership).
import { createHash } from 'node:crypto';
import type { ElementRow } from '../storage/queries/elements.js';
import { isoTime } from './values.js';

export interface ElementJson {
  type: string;
  id: string;
  start?: string;
  end?: string;
  data: Record<string, unknown>;
  file?: unknown;
}

export function toElementJson(row: ElementRow): ElementJson {
  const data: Record<string, unknown> = { ...row.data, created: isoTime(row.created), updated: isoTime(row.updated) };
  if (row.file) {
    data.hasFile = true;
    data.file = row.file;
  }
  const json: ElementJson =
    row.start_id === null
      ? { type: row.type, id: row.id, data }
      : { type: row.type, id: row.id, start: row.start_id, end: row.end_id!, data };
  if (row.file) json.file = row.file;
  return json;
}

/** A strong ETag of a serialised response body. */
export function etagOf(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** The body and ETag of an element, serialised once. */
export function renderElement(row: ElementRow): { body: string; etag: string } {
  const body = JSON.stringify(toElementJson(row));
  return { body, etag: etagOf(body) };
}
