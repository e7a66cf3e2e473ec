// The HTTP handler the S3 store reads object bodies with (GetObject only; every other request goes through the SDK's
// own handler). Node's HTTP client hands each piece of a body over in memory of its own: a new buffer per socket read,
// and one more per piece from its parser, all garbage once written on. A download through the instance then costs it
// twice the bytes it serves in memory it allocates, faults in and frees, and that, not the copying, is what made a
// download through the instance run at half the speed of reading the object alone (docs/decisions/023).
//
// Here the SDK still builds and signs the request; this handler sends it on a connection of its own that reads into
// one buffer, parses the answer's head and framing (length, chunked, or until close) and keeps the connection for the
// next GET when the answer allows it. A body piped into an HTTP answer (a download) lends it a few buffers, each back
// once the socket has taken its bytes; every other reader gets copies of its own, as from any stream.
import { ServerResponse } from 'node:http';
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { Readable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';

/** Bytes per socket read, and per buffer a body lends. */
const READ_BYTES = 128 * 1024;
/** Buffers a body lends at once: reading pauses until one comes back. */
const LENT = 4;
/** Longest response head accepted (S3 heads are a few hundred bytes). */
const HEAD_LIMIT = 64 * 1024;
/** How long an unused connection waits for the next GET, and how many wait per store. */
const IDLE_MS = 4000;
const IDLE_PER_ORIGIN = 16;

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
interface AbortSignalLike {
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

function requestHead(r: SignedRequest): string {
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

interface Head {
  statusCode: number;
  reason: string;
  headers: Record<string, string>;
  keepAlive: boolean;
}

function parseHead(text: string): Head {
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

type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };

function framingOf(head: Head): Framing {
  if (head.statusCode === 204 || head.statusCode === 304) return { kind: 'none' };
  const coding = head.headers['transfer-encoding'];
  if (coding !== undefined) return /(^|,)\s*chunked\s*$/i.test(coding) ? { kind: 'chunked' } : { kind: 'close' };
  const length = head.headers['content-length'];
  if (length === undefined) return { kind: 'close' };
  if (!/^\d+$/.test(length)) throw protocolError(`an answer with Content-Length ${JSON.stringify(length)}`);
  const left = Number(length);
  return left === 0 ? { kind: 'none' } : { kind: 'length', left };
}

function protocolError(what: string): Error {
  return Object.assign(new Error(`the object store sent ${what}`), { name: 'ProtocolError' });
}

/** A kept connection that the store closed meanwhile: the GET goes again on a new one. */
class StaleConnection extends Error {}

const closed = (error: Error) => ['ECONNRESET', 'EPIPE'].includes((error as { code?: string }).code ?? '');

/** One connection to the store: one GET at a time, its answer read into `buffer`. */
class Connection {
  readonly socket: Socket;
  private readonly buffer = Buffer.allocUnsafeSlow(READ_BYTES);
  /** The answer in progress; null between GETs. */
  private exchange: Exchange | null = null;
  idle = false;
  /** GETs answered on it so far: a failure before the first byte of a later answer means the store closed it. */
  private answered = 0;

  constructor(
    private readonly reader: ObjectReader,
    readonly origin: string,
    request: SignedRequest,
    private readonly timeoutMs: number,
  ) {
    const options = {
      host: request.hostname,
      port: request.port ?? (request.protocol === 'https:' ? 443 : 80),
      onread: { buffer: this.buffer, callback: (n: number) => this.read(n) },
    };
    this.socket =
      request.protocol === 'https:'
        ? tlsConnect({ ...options, ...(isIP(request.hostname) ? {} : { servername: request.hostname }) })
        : tcpConnect(options);
    this.socket.setNoDelay(true);
    // Waiting for the connection, and later for the store, never longer than this without a byte.
    this.socket.setTimeout(timeoutMs);
    this.socket.on('timeout', () => {
      if (this.idle) this.socket.destroy();
      else
        this.fail(
          Object.assign(new Error(`the object store sent nothing for ${this.timeoutMs} ms`), {
            name: 'TimeoutError',
            code: 'ETIMEDOUT',
          }),
        );
    });
    this.socket.on('error', (error) => this.fail(error));
    this.socket.on('end', () => this.exchange?.eof());
    this.socket.on('close', () => {
      this.reader.forget(this);
      this.fail(Object.assign(new Error('the object store closed the connection'), { code: 'ECONNRESET' }));
    });
  }

  send(head: string, signal: AbortSignalLike | undefined): Promise<ObjectResponse> {
    this.idle = false;
    this.socket.ref();
    this.socket.setTimeout(this.timeoutMs);
    return new Promise((resolve, reject) => {
      const exchange = new Exchange(this, resolve, (error) =>
        reject(this.answered > 0 && !exchange.heard && closed(error) ? new StaleConnection(error.message) : error),
      );
      this.exchange = exchange;
      if (signal?.aborted) return this.fail(abortError());
      signal?.addEventListener?.('abort', () => this.fail(abortError()), { once: true });
      this.socket.write(head);
      this.resume();
    });
  }

  private read(n: number): boolean {
    const exchange = this.exchange;
    if (!exchange) {
      this.socket.destroy(); // bytes nobody asked for
      return false;
    }
    const more = exchange.data(this.buffer.subarray(0, n));
    // Kept for the next GET: it reads on, to let go of the connection (and its descriptor) as soon as the store
    // closes it.
    if (this.idle) return true;
    // Paused by whoever reads the body, not by the store: its silence does not count then.
    if (!more) this.socket.setTimeout(0);
    return more;
  }

  resume(): void {
    if (this.socket.destroyed || this.idle) return;
    this.socket.setTimeout(this.timeoutMs);
    this.socket.resume();
  }

  fail(error: Error): void {
    const exchange = this.exchange;
    this.exchange = null;
    this.socket.destroy();
    exchange?.fail(error);
  }

  /** The answer is complete: the connection waits for the next GET, or closes. */
  done(reusable: boolean): void {
    this.exchange = null;
    this.answered++;
    if (!reusable || this.socket.destroyed) {
      this.socket.destroy();
      return;
    }
    this.idle = true;
    this.socket.unref();
    this.socket.setTimeout(IDLE_MS);
    this.reader.keep(this);
  }
}

/** One GET's answer on a connection: its head, then its body by the framing the head announced. */
class Exchange {
  private head: Buffer = Buffer.alloc(0);
  private framing: Framing | null = null;
  private keepAlive = false;
  private body: ObjectBody | null = null;
  /** Extra bytes after the body (the store broke the framing): the connection is not used again. */
  private surplus = false;
  /** Chunked framing: 'size' line, 'data' of `chunkLeft` bytes, the 'crlf' after it, or 'trailer' lines. */
  private chunkState: 'size' | 'data' | 'crlf' | 'trailer' = 'size';
  private chunkLeft = 0;
  private line = '';
  /** Whether any byte of the answer arrived. */
  heard = false;
  private finished = false;

  constructor(
    private readonly connection: Connection,
    private readonly resolve: (response: ObjectResponse) => void,
    private readonly reject: (error: Error) => void,
  ) {}

  /** The bytes of one read (only valid during the call); false pauses the connection. */
  data(bytes: Buffer): boolean {
    this.heard = true;
    try {
      return this.framing === null ? this.readHead(bytes) : this.readBody(bytes);
    } catch (error) {
      this.connection.fail(error as Error);
      return false;
    }
  }

  private readHead(bytes: Buffer): boolean {
    this.head = Buffer.concat([this.head, bytes]);
    const end = this.head.indexOf('\r\n\r\n');
    if (end < 0) {
      if (this.head.length > HEAD_LIMIT) throw protocolError('an answer head that does not end');
      return true;
    }
    const head = parseHead(this.head.toString('latin1', 0, end));
    const rest = this.head.subarray(end + 4);
    this.head = Buffer.alloc(0);
    // Interim answers (100 Continue and the like) precede the real one.
    if (head.statusCode < 200) return rest.length > 0 ? this.readHead(rest) : true;
    this.framing = framingOf(head);
    this.keepAlive = head.keepAlive && this.framing.kind !== 'close';
    this.body = new ObjectBody(this);
    this.resolve({ statusCode: head.statusCode, reason: head.reason, headers: head.headers, body: this.body });
    if (this.framing.kind === 'none') {
      this.surplus = rest.length > 0;
      this.complete();
      return false;
    }
    return rest.length > 0 ? this.readBody(rest) : this.body.wanted();
  }

  private readBody(bytes: Buffer): boolean {
    const framing = this.framing!;
    const body = this.body!;
    if (framing.kind === 'close') return body.accept(bytes);
    if (framing.kind === 'length') {
      const n = Math.min(bytes.length, framing.left);
      framing.left -= n;
      this.surplus = bytes.length > n;
      const more = body.accept(bytes.subarray(0, n));
      if (framing.left === 0) this.complete();
      return more && !this.finished;
    }
    let more = true;
    let i = 0;
    while (i < bytes.length && !this.finished) {
      if (this.chunkState === 'data') {
        const n = Math.min(this.chunkLeft, bytes.length - i);
        more = body.accept(bytes.subarray(i, i + n)) && more;
        i += n;
        this.chunkLeft -= n;
        if (this.chunkLeft === 0) this.chunkState = 'crlf';
        continue;
      }
      const newline = bytes.indexOf(10, i);
      const end = newline < 0 ? bytes.length : newline + 1;
      this.line += bytes.toString('latin1', i, end);
      i = end;
      if (newline < 0) {
        if (this.line.length > 4096) throw protocolError('a chunk line that does not end');
        continue;
      }
      const line = this.line.replace(/\r?\n$/, '');
      this.line = '';
      if (this.chunkState === 'crlf') {
        if (line !== '') throw protocolError('a chunk longer than its size');
        this.chunkState = 'size';
      } else if (this.chunkState === 'size') {
        const size = /^([0-9a-fA-F]{1,12})\s*(;.*)?$/.exec(line);
        if (!size) throw protocolError(`a chunk size ${JSON.stringify(line.slice(0, 20))}`);
        this.chunkLeft = Number.parseInt(size[1]!, 16);
        this.chunkState = this.chunkLeft === 0 ? 'trailer' : 'data';
      } else if (line === '') this.complete();
    }
    this.surplus = i < bytes.length;
    return more && !this.finished;
  }

  /** The connection ended: the end of a body framed by it, an error otherwise. */
  eof(): void {
    if (this.framing?.kind === 'close' && !this.finished) this.complete();
  }

  private complete(): void {
    this.finished = true;
    this.body!.finish();
    this.connection.done(this.keepAlive && !this.surplus);
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    if (this.body) this.body.destroy(error);
    else this.reject(error);
  }

  /** Whoever reads the body wants more. */
  resume(): void {
    if (!this.finished) this.connection.resume();
  }

  /** The body's reader went away before its end: the connection, mid-answer, cannot be used again. */
  abandon(): void {
    if (!this.finished) this.connection.fail(new Error('the body was not read to its end'));
  }
}

/**
 * An object's body. Read as a stream, each piece is a copy of its own. Piped into an HTTP answer, the pieces are
 * written from a few buffers the body lends the answer, each used again once the socket has taken its bytes (the
 * write's callback): the answer is a socket's writer, which keeps no piece after that.
 */
class ObjectBody extends Readable {
  private mode: 'waiting' | 'read' | 'lent' = 'waiting';
  /** What arrived before anyone read (at most one socket read: the connection pauses until then). */
  private pending: Buffer[] = [];
  private arrived = false;
  private target: ServerResponse | null = null;
  private endTarget = true;
  private readonly free: Buffer[] = [];
  private out = 0;
  private blocked = false;

  constructor(private readonly exchange: Exchange) {
    super({ highWaterMark: READ_BYTES });
  }

  /** Whether the connection may read on before anyone reads the body. */
  wanted(): boolean {
    return this.mode !== 'waiting';
  }

  /** Body bytes of the current read (valid during the call only); false pauses the connection. */
  accept(bytes: Buffer): boolean {
    if (this.destroyed || bytes.length === 0) return !this.destroyed;
    if (this.mode === 'read') return this.push(Buffer.from(bytes));
    if (this.mode === 'lent') return this.lend(bytes);
    this.pending.push(Buffer.from(bytes));
    return false;
  }

  /** Every byte of the body arrived. */
  finish(): void {
    this.arrived = true;
    if (this.mode === 'read') this.push(null);
    else if (this.mode === 'lent') this.endLent();
  }

  override _read(): void {
    if (this.mode === 'waiting') {
      this.mode = 'read';
      for (const piece of this.pending.splice(0)) this.push(piece);
      if (this.arrived) this.push(null);
    }
    if (!this.arrived) this.exchange.resume();
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    if (this.mode !== 'waiting' || !(destination instanceof ServerResponse)) return super.pipe(destination, options);
    this.mode = 'lent';
    this.target = destination;
    this.endTarget = options?.end !== false;
    destination.on('drain', () => {
      this.blocked = false;
      this.flowAgain();
    });
    // A client that went away before the end: nobody reads the rest.
    destination.on('close', () => {
      if (!this.arrived) this.destroy();
    });
    for (const piece of this.pending.splice(0)) if (!destination.write(piece)) this.blocked = true;
    if (this.arrived) this.endLent();
    else this.flowAgain();
    return destination;
  }

  private lend(bytes: Buffer): boolean {
    const target = this.target!;
    if (target.destroyed || target.writableEnded) return false;
    const buffer = this.free.pop() ?? Buffer.allocUnsafeSlow(READ_BYTES);
    bytes.copy(buffer);
    this.out++;
    // The callback comes once the socket holds no reference to the piece any more (written, or failed).
    if (!target.write(buffer.subarray(0, bytes.length), () => this.giveBack(buffer))) this.blocked = true;
    return !this.blocked && this.out < LENT;
  }

  private giveBack(buffer: Buffer): void {
    this.out--;
    this.free.push(buffer);
    this.flowAgain();
  }

  private flowAgain(): void {
    if (this.mode === 'lent' && !this.blocked && this.out < LENT && !this.arrived && !this.destroyed)
      this.exchange.resume();
  }

  private endLent(): void {
    if (this.endTarget) this.target!.end();
    // Nothing was pushed: 'end' follows at once, for whoever waits for the source to end.
    this.push(null);
    this.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.pending = [];
    this.exchange.abandon();
    // As Node's own response bodies: the error is emitted only to whoever listens for it, so that a body nobody
    // reads yet (the answer is still being decided) does not bring the process down when the store fails.
    callback(this.listenerCount('error') > 0 ? error : null);
  }
}

function abortError(): Error {
  return Object.assign(new Error('Request aborted'), { name: 'AbortError' });
}

/** The SDK's request handler for GetObject (S3Client's `requestHandler`). */
export class ObjectReader {
  private readonly idle = new Map<string, Connection[]>();

  /** `timeoutMs`: longest wait for a connection, and longest silence of the store while an answer is read. */
  constructor(private readonly timeoutMs: number) {}

  async handle(
    request: SignedRequest,
    options: { abortSignal?: AbortSignalLike } = {},
  ): Promise<{ response: ObjectResponse }> {
    if (request.method !== 'GET' || (request.body !== undefined && request.body !== null))
      throw new Error(`ObjectReader sends GETs without a body, not ${request.method}`);
    const head = requestHead(request);
    const origin = `${request.protocol}//${request.hostname}:${request.port ?? ''}`;
    for (;;) {
      const connection = this.take(origin) ?? new Connection(this, origin, request, this.timeoutMs);
      try {
        return { response: await connection.send(head, options.abortSignal) };
      } catch (error) {
        if (!(error instanceof StaleConnection)) throw error;
      }
    }
  }

  private take(origin: string): Connection | undefined {
    const list = this.idle.get(origin);
    let connection = list?.pop();
    while (connection?.socket.destroyed) connection = list?.pop();
    return connection;
  }

  keep(connection: Connection): void {
    const list = this.idle.get(connection.origin) ?? [];
    this.idle.set(connection.origin, list);
    if (list.length >= IDLE_PER_ORIGIN) list.shift()?.socket.destroy();
    list.push(connection);
  }

  forget(connection: Connection): void {
    const list = this.idle.get(connection.origin);
    const at = list?.indexOf(connection) ?? -1;
    if (at >= 0) list!.splice(at, 1);
  }

  /** Closes the connections kept for later GETs (S3Client.destroy). */
  destroy(): void {
    for (const list of this.idle.values()) for (const c of list) c.socket.destroy();
    this.idle.clear();
  }
}
