// Helpers of the resumable-upload tests: requests in the draft's shape, a look at what is stored (on either blob
// store), and a raw HTTP/1.1 client for what fetch hides (interim responses, bodies cut off half-way, stalled bodies).
import http from 'node:http';
import net, { type Socket } from 'node:net';
import { parseDictionary } from 'structured-headers';
import { Uploads } from '../../src/domain/uploads/uploads.js';
import { sqlTransactions } from '../../src/storage/transactions.js';
import { sqlUploadStore } from '../../src/storage/upload-store.js';
import { currentNames, storedNames, temporaryBlobs, uploadBytes } from '../helpers/blobs.js';
import type { Harness, ServiceClient, TestResponse } from '../helpers/harness.js';

const bytes = (b: Buffer) => new Uint8Array(b);

/** POST (or PUT) /<id>/file with `Upload-Complete: ?0`; returns the response and the upload path. */
export async function startUpload(
  h: ServiceClient,
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
  h: ServiceClient,
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

export const head = (h: ServiceClient, token: string, path: string) => h.request('HEAD', path, { token });

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

/** The bytes stored for upload `key` (through the blob store, whichever it is), or null. */
export const blobOf = (h: Harness, key: string): Promise<Buffer | null> => uploadBytes(h, key);

/**
 * What the store holds that nothing should once upload `uploadId` completed or was removed: names kept for the
 * upload (its file, its chunk objects), names of element `elementId` other than its current file's, temporary
 * blobs and unfinished multipart uploads.
 */
export async function leftovers(h: Harness, uploadId: string, elementId?: string): Promise<string[]> {
  const file = elementId === undefined ? [] : await currentNames(h, elementId);
  const element = elementId === undefined ? [] : await storedNames(h, elementId);
  return [
    ...(await storedNames(h, uploadId)).map((name) => `upload: ${name}`),
    ...element.filter((name) => !file.includes(name)).map((name) => `element: ${name}`),
    ...(await temporaryBlobs(h)).map((name) => `temporary: ${name}`),
  ];
}

/**
 * The upload service of a second instance on the same database and blob store: none of this one's state in memory
 * (requests in flight).
 */
export function anotherInstance(h: Harness): Uploads {
  const { db, clock, blobs, elements, files } = h.services;
  return new Uploads(sqlTransactions(db), sqlUploadStore, h.config.settings, clock, blobs, elements, files);
}

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

/** The server's end of each connection to a harness, by the client's port; see watchConnections. */
const serverEnds = new WeakMap<object, Map<number, Socket>>();

/**
 * Watches the connections made to `h` from now on (once per harness), so that `arrived` can find the server's end
 * of a client's connection. Entries stay after a close: what a connection read is still known once the server cut it.
 */
export function watchConnections(h: Harness): Map<number, Socket> {
  let ends = serverEnds.get(h.app.server);
  if (!ends) {
    const found = new Map<number, Socket>();
    h.app.server.on('connection', (socket: Socket) => {
      if (socket.remotePort !== undefined) found.set(socket.remotePort, socket);
    });
    serverEnds.set(h.app.server, found);
    ends = found;
  }
  return ends;
}

/**
 * Whether the server has read every byte `req` wrote so far (its end of the connection read as many as the
 * client's end wrote; watchConnections must have run before the connection was made). The server reads a body only
 * as fast as the blob store takes it (Node stops reading a socket whose request buffer is full), so by then the
 * store has taken all of it but what fits in that buffer, whether it shows the bytes yet (a growing file) or not (an
 * object that is stored when its body ends).
 */
export function arrived(h: Harness, req: http.ClientRequest): boolean {
  const socket = req.socket;
  if (!socket || socket.connecting || socket.localPort === undefined || req.writableLength > 0) return false;
  const end = watchConnections(h).get(socket.localPort);
  return end !== undefined && end.bytesRead >= socket.bytesWritten;
}

/**
 * Opens a request (on a connection of its own) and writes `sent` of its body, declared `declared` bytes long, then
 * waits until the server has read all of it, and until `until` holds. The caller ends it: `destroy()` (client gone)
 * or leaves it hanging. `interim` is the first interim response (104) the server sends, if any.
 */
export async function partialRequest(
  h: Harness,
  method: string,
  path: string,
  headers: Record<string, string>,
  declared: number,
  sent: Buffer,
  until: () => boolean | Promise<boolean> = () => true,
): Promise<{
  req: http.ClientRequest;
  closed: Promise<void>;
  response: Promise<number | null>;
  interim: Promise<http.InformationEvent>;
}> {
  watchConnections(h);
  const req = http.request(`${h.url}${path}`, {
    method,
    agent: false,
    headers: { ...headers, 'content-length': String(declared) },
  });
  const response = new Promise<number | null>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? null);
    });
    req.on('error', () => resolve(null));
  });
  const interim = new Promise<http.InformationEvent>((resolve) => req.once('information', resolve));
  const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
  req.write(sent);
  await waitFor('the server to read what was sent', () => arrived(h, req));
  await waitFor('the request to get where the test wants it', until);
  return { req, closed, response, interim };
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
