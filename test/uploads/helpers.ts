// Helpers of the resumable-upload tests: requests in the draft's shape, a look at what is stored, and a raw
// HTTP/1.1 client for what fetch hides (interim responses, bodies cut off half-way, stalled bodies).
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { parseDictionary } from 'structured-headers';
import { uploadBytes } from '../helpers/blobs.js';
import type { Harness, TestResponse } from '../helpers/harness.js';

const bytes = (b: Buffer) => new Uint8Array(b);

/** POST (or PUT) /<id>/file with `Upload-Complete: ?0`; returns the response and the upload path. */
export async function startUpload(
  h: Harness,
  token: string,
  elementId: string,
  options: { body?: Buffer; headers?: Record<string, string>; method?: 'POST' | 'PUT' } = {},
): Promise<{ res: TestResponse; path: string; id: string }> {
  const res = await h.request(options.method ?? 'POST', `/${elementId}/file`, {
    token,
    raw: options.body ? bytes(options.body) : undefined,
    headers: { 'upload-complete': '?0', ...(options.headers ?? {}) },
  });
  const path = res.headers.get('location') ?? '';
  return { res, path, id: path.replace('/upload/', '') };
}

/** PATCH of an upload in the spec's shape. */
export function append(
  h: Harness,
  token: string,
  path: string,
  offset: number,
  body: Buffer,
  complete: boolean,
  headers: Record<string, string> = {},
): Promise<TestResponse> {
  return h.request('PATCH', path, {
    token,
    raw: bytes(body),
    headers: {
      'content-type': 'application/partial-upload',
      'upload-offset': String(offset),
      'upload-complete': complete ? '?1' : '?0',
      ...headers,
    },
  });
}

export const head = (h: Harness, token: string, path: string) => h.request('HEAD', path, { token });

export function limitsOf(res: TestResponse): Record<string, number> {
  const value = res.headers.get('upload-limit');
  if (value === null) throw new Error('no Upload-Limit');
  return Object.fromEntries([...parseDictionary(value)].map(([k, [v]]) => [k, v as number]));
}

export async function uploadRow(h: Harness, id: string) {
  const { rows } = await h.db.query<{
    offset: number;
    length: number | null;
    chunks: number;
    expires: Date;
    element_id: string | null;
    lease_token: string | null;
  }>('SELECT "offset", length, chunks, expires, element_id, lease_token FROM uploads WHERE id = $1', [id]);
  return rows[0] ?? null;
}

export const blobPath = (h: Harness, key: string) => join(h.dataDir, 'files', key.slice(0, 2), key);
/** The bytes stored for upload `key` (through the blob store, whichever it is), or null. */
export const blobOf = (h: Harness, key: string): Promise<Buffer | null> => uploadBytes(h, key);

export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Opens a request and writes `sent` of its body, declared `declared` bytes long, then waits for the server to
 * store some of it. The caller ends it: `destroy()` (client gone) or leaves it hanging.
 */
export async function partialRequest(
  h: Harness,
  method: string,
  path: string,
  headers: Record<string, string>,
  declared: number,
  sent: Buffer,
  stored: () => boolean,
): Promise<{ req: http.ClientRequest; closed: Promise<void>; response: Promise<number | null> }> {
  const req = http.request(`${h.url}${path}`, { method, headers: { ...headers, 'content-length': String(declared) } });
  const response = new Promise<number | null>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.on('error', () => resolve(null));
  });
  const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
  req.write(sent);
  await waitFor('the server to store part of the body', stored);
  return { req, closed, response };
}

/** Sends raw bytes over a fresh TCP connection and returns everything the server wrote until it closed. */
export function rawExchange(h: Harness, request: Buffer | string): Promise<string> {
  const { port } = new URL(h.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    const parts: Buffer[] = [];
    socket.on('data', (d) => parts.push(d));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
    socket.write(request);
  });
}
