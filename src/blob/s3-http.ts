// The HTTP/1.1 of the S3 store's GetObject handler (s3-reader.ts): the request head it sends for a signed request,
// and the answer heads and framings it reads.
import type { Readable } from 'node:stream';

/** What the handler uses of the SDK's signed request (@smithy's HttpRequest). */
export interface SignedRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query?: Record<string, string | Array<string | null> | null>;
  headers: Record<string, string>;
  body?: unknown;
}

/** The SDK's abort signal: a DOM AbortSignal or its own older shape (Trellis passes none). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener?(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
}

/** What the SDK takes as a response (@smithy's HttpResponse). */
export interface ObjectResponse {
  statusCode: number;
  reason?: string;
  headers: Record<string, string>;
  body: Readable;
}

/** SigV4 signs the query as @smithy encodes it: the same encoding goes on the wire. */
const escapeUri = (s: string) =>
  encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export function requestHead(r: SignedRequest): string {
  const query = Object.keys(r.query ?? {})
    .sort()
    .flatMap((key) => {
      const value = r.query![key];
      if (Array.isArray(value)) return value.map((v) => `${escapeUri(key)}=${escapeUri(v ?? '')}`);
      return [value === null || value === undefined ? escapeUri(key) : `${escapeUri(key)}=${escapeUri(value)}`];
    })
    .join('&');
  const target = query ? `${r.path}?${query}` : r.path;
  const lines = [`GET ${target} HTTP/1.1`];
  if (!Object.keys(r.headers).some((name) => name.toLowerCase() === 'host'))
    lines.push(`host: ${r.hostname}${r.port ? `:${r.port}` : ''}`);
  for (const [name, value] of Object.entries(r.headers)) lines.push(`${name}: ${value}`);
  // The SDK escapes what it signs: a line break or anything but visible ASCII would change the request.
  if (lines.some((line) => /[^\x20-\x7e\t]/.test(line)) || /\s/.test(target))
    throw new Error('a request that cannot be sent as it is');
  return `${lines.join('\r\n')}\r\n\r\n`;
}

export interface Head {
  statusCode: number;
  reason: string;
  headers: Record<string, string>;
  keepAlive: boolean;
}

export function parseHead(text: string): Head {
  const [status, ...lines] = text.split('\r\n');
  const match = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(status ?? '');
  if (!match) throw protocolError(`an answer that is no HTTP/1.x: ${JSON.stringify(status?.slice(0, 40))}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw protocolError('an answer header without a name');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  const close = /(^|,)\s*close\s*(,|$)/i.test(headers.connection ?? '');
  return { statusCode: Number(match[2]), reason: match[3] ?? '', headers, keepAlive: match[1] === '1' && !close };
}

export type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

export function framingOf(head: Head): Framing {
  if (head.statusCode === 204 || head.statusCode === 304) return { kind: 'none' };
  const coding = head.headers['transfer-encoding'];
  if (coding !== undefined) return /(^|,)\s*chunked\s*$/i.test(coding) ? { kind: 'chunked' } : { kind: 'close' };
  const length = head.headers['content-length'];
  if (length === undefined) return { kind: 'close' };
  if (!/^\d+$/.test(length)) throw protocolError(`an answer with Content-Length ${JSON.stringify(length)}`);
  const left = Number(length);
  return left === 0 ? { kind: 'none' } : { kind: 'length', left };
}

export function protocolError(what: string): Error {
  return Object.assign(new Error(`the object store sent ${what}`), { name: 'ProtocolError' });
}

export function abortError(): Error {
  return Object.assign(new Error('Request aborted'), { name: 'AbortError' });
}
