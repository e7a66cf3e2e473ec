// How elements look on the wire, and their ETags. The ETag is a hash of exactly what the response shows, so it
// changes whenever that changes (data, timestamps, file metadata, collection membership).
import { hash } from 'node:crypto';
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
  // One-shot hash(): half the cost of createHash().update().digest() for a body of a few hundred bytes.
  return `"${hash('sha256', body, 'base64url').slice(0, 27)}"`;
}

/**
 * JSON.stringify(toElementJson(row)), written out: the same bytes (test/domain/representation.test.ts compares
 * them) without building the intermediate objects. Copying `data` to append created/updated and serialising it
 * again was the largest part of this process' own work for a GET /<id> (toElementJson, renderElement and isoTime
 * 7% of the samples of a CPU profile under load). `data` never holds created, updated, hasFile or file
 * (001-elements.ts), so the appended keys cannot repeat one of its keys.
 */
export function elementBody(row: ElementRow): string {
  const data = JSON.stringify(row.data);
  const file = row.file ? JSON.stringify(row.file) : null;
  let body = `{"type":${JSON.stringify(row.type)},"id":${JSON.stringify(row.id)}`;
  if (row.start_id !== null) body += `,"start":${JSON.stringify(row.start_id)},"end":${JSON.stringify(row.end_id)}`;
  body += `,"data":${data.length === 2 ? '{' : `${data.slice(0, -1)},`}"created":"${isoTime(row.created)}","updated":"${isoTime(row.updated)}"`;
  if (file !== null) body += `,"hasFile":true,"file":${file}},"file":${file}}`;
  else body += '}}';
  return body;
}

/** The body and ETag of an element, serialised once. */
export function renderElement(row: ElementRow): { body: string; etag: string } {
  const body = elementBody(row);
  return { body, etag: etagOf(body) };
}
