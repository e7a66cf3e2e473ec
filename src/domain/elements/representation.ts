// How elements look on the wire, and their ETags. The ETag is a hash of exactly what the response shows, so it
// changes whenever that changes (data, timestamps, file metadata, collection membership).
import { hash } from 'node:crypto';

export interface ElementJson {
  type: string;
  id: string;
  start?: string;
  end?: string;
  data: Record<string, unknown>;
  file?: unknown;
}

/** A strong ETag of a serialised response body. */
export function etagOf(body: string): string {
  // One-shot hash(): half the cost of createHash().update().digest() for a body of a few hundred bytes.
  return `"${hash('sha256', body, 'base64url').slice(0, 27)}"`;
}

/** The body and ETag of an element rendered by the database (storage/queries/element-json.ts). */
export function renderElement(body: string): { body: string; etag: string } {
  return { body, etag: etagOf(body) };
}
