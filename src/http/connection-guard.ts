// What keeps clients from holding the instance's connections. At `server.maxConnections`, a new connection closes
// the oldest one that has no request in progress (a keep-alive connection between requests, one that is still
// sending its headers or sent nothing at all), and is itself closed only when every connection is busy; without
// that, one client that opens that many connections and stays silent would shut every other client out. A
// connection that sends nothing for `server.bodyIdleTimeoutInSeconds` after it opened is closed.
//
// Slow clients, both ways: a request body that sends nothing for `server.bodyIdleTimeoutInSeconds`, or less than
// `server.bodyMinBytesPerSecond` over `server.bodyRateWindowInSeconds`, is cut off (408 while nothing of the answer
// was written, then the connection closes). A connection whose client reads what the server sends (a download, a
// large page) that slowly is closed, so that slow readers cannot hold every connection, descriptor and buffered
// answer of the instance. Only time spent waiting for the client counts: while the request's buffer is full, or
// while nothing is queued for sending, the server is the slow one. Node's own `requestTimeout` stays off, as it
// would cut a large upload that moves steadily.
//
// An answer given while the request body is still arriving (a file over the limit, bad credentials, a missing
// element, the 408 of a slow body) closes the connection with a lingering close (lingering-close.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Settings } from '../config/schema.js';
import { COMMON_HEADERS } from './headers.js';
import { LINGER_MAX_BYTES, type LingeringClose } from './lingering-close.js';
import { PROBLEM_CONTENT_TYPE } from './problems.js';
import type { App } from './types.js';

interface Limits {
  idleMs: number;
  windowMs: number;
  /** Bytes per second; 0: no minimum. */
  minRate: number;
  tickMs: number;
}

/** One direction of one client's bytes, judged at every tick against the limits. */
class Flow {
  /** Time without a byte while the server waited, in ms. */
  private idle = 0;
  /** Total time the server waited for this client, in ms. */
  private waited = 0;
  /** (waited, bytes) at each of the last ticks, oldest first: the rate window. */
  private readonly samples: Array<{ waited: number; bytes: number }> = [];

  constructor(private bytes: number) {}

  /** Records a tick (`bytes` moved so far, whether the server waited on the client): 'idle', 'slow' or null. */
  step(bytes: number, waiting: boolean, limits: Limits): 'idle' | 'slow' | null {
    const moved = bytes - this.bytes;
    this.bytes = bytes;
    if (!waiting) {
      this.idle = 0;
      return null;
    }
    this.waited += limits.tickMs;
    this.idle = moved > 0 ? 0 : this.idle + limits.tickMs;
    if (this.idle >= limits.idleMs) return 'idle';
    if (limits.minRate <= 0) return null;
    this.samples.push({ waited: this.waited, bytes });
    if (this.samples.length <= Math.ceil(limits.windowMs / limits.tickMs)) return null;
    const oldest = this.samples.shift()!;
    const waited = this.waited - oldest.waited;
    // Judged only when the server spent at least half the window waiting for this client.
    return waited >= limits.windowMs / 2 && bytes - oldest.bytes < (limits.minRate * waited) / 1000 ? 'slow' : null;
  }
}

interface WatchedBody {
  request: IncomingMessage;
  response: ServerResponse;
  log: FastifyBaseLogger;
  /** Counted on the socket's bytesRead, so a body counts whoever reads it. */
  flow: Flow;
}

/** Bytes of a connection's answers handed to the kernel (bytesWritten also counts what is still queued). */
const sent = (socket: Socket) => socket.bytesWritten - socket.writableLength;

interface Connection {
  /** What the server sends on it, watched while part of an answer is queued (per connection: no cost per request). */
  sending: Flow;
  opened: number;
  /** The answer of the request in progress; none, or finished, means the connection is idle. */
  response: ServerResponse | null;
}

const isIdle = (c: Connection) => c.response === null || c.response.writableFinished || c.response.destroyed;

export class ConnectionGuard {
  private readonly bodies = new Set<WatchedBody>();
  /** Every open connection, oldest first. */
  private readonly connections = new Map<Socket, Connection>();
  private timer: NodeJS.Timeout | null = null;
  private readonly limits: Limits;

  private warned = 0;

  constructor(
    private readonly settings: Settings['server'],
    private readonly log: FastifyBaseLogger,
    private readonly lingering: LingeringClose,
  ) {
    const idleMs = settings.bodyIdleTimeoutInSeconds * 1000;
    const windowMs = settings.bodyRateWindowInSeconds * 1000;
    // Ticks often enough to notice the shortest limit within a quarter of it, and at most once a second.
    const tickMs = Math.max(50, Math.min(1000, Math.floor(Math.min(idleMs, windowMs) / 4)));
    this.limits = { idleMs, windowMs, minRate: settings.bodyMinBytesPerSecond, tickMs };
  }

  get tickMs(): number {
    return this.limits.tickMs;
  }

  /**
   * Marks the connection busy until the answer is finished, and watches the body of `request` until it has arrived,
   * the answer is finished or the connection is gone.
   */
  watch(request: IncomingMessage, response: ServerResponse, log: FastifyBaseLogger): void {
    const connection = this.connections.get(request.socket);
    if (connection) connection.response = response;
    if (request.complete || !hasBody(request)) return;
    this.bodies.add({ request, response, log, flow: new Flow(request.socket.bytesRead) });
    this.start();
  }

  /** Admits a new connection (closing an idle one at the cap, or this one when none is idle) and watches it. */
  admit(socket: Socket): void {
    if (this.connections.size >= this.settings.maxConnections && !this.evictIdle()) {
      socket.destroy();
      // At most one line a minute: a flood of refused connections must not flood the log as well.
      if (Date.now() - this.warned >= 60_000) {
        this.warned = Date.now();
        this.log.warn(
          { maxConnections: this.settings.maxConnections },
          'connections refused: server.maxConnections reached and every connection busy',
        );
      }
      return;
    }
    this.connections.set(socket, { sending: new Flow(sent(socket)), opened: Date.now(), response: null });
    socket.once('close', () => this.connections.delete(socket));
    this.start();
  }

  /** Closes the oldest connection without a request in progress; false when there is none. */
  private evictIdle(): boolean {
    for (const [socket, connection] of this.connections) {
      if (!isIdle(connection)) continue;
      this.connections.delete(socket);
      socket.destroy();
      return true;
    }
    return false;
  }

  /**
   * For an answer about to be sent while the body of `request` is still arriving: the body is read from now on (the
   * handler may have read part of it and left it paused, or none of it), and once the answer is sent the connection
   * closes with a lingering close. The answer must say `Connection: close`.
   */
  lingerAfter(request: IncomingMessage): void {
    const socket = request.socket;
    request.resume();
    // Node's HTTP server calls destroySoon after an answer with `Connection: close`: it would end and destroy the
    // socket as soon as the answer is written, with the rest of the body unread.
    const destroySoon = socket.destroySoon;
    socket.destroySoon = () => {
      socket.destroySoon = destroySoon;
      if (request.complete) destroySoon.call(socket);
      else this.lingering.close(socket, lingerMaxBytes(request));
    };
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.bodies.clear();
    this.connections.clear();
  }

  private start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => this.tick(), this.limits.tickMs);
    this.timer.unref();
  }

  private tick(): void {
    for (const w of this.bodies) {
      const { request, response } = w;
      if (request.complete || request.destroyed || response.writableFinished || response.destroyed) {
        this.bodies.delete(w);
        continue;
      }
      // A request whose buffer is below its high-water mark takes more at once: the server is waiting.
      const waiting = request.readableLength < request.readableHighWaterMark;
      const verdict = w.flow.step(request.socket.bytesRead, waiting, this.limits);
      if (verdict === 'idle') this.cutBody(w, `The request body sent nothing for ${this.limits.idleMs / 1000} s.`);
      else if (verdict === 'slow')
        this.cutBody(w, `The request body arrived slower than ${this.limits.minRate} bytes per second.`);
    }
    const now = Date.now();
    for (const [socket, connection] of this.connections) {
      if (socket.bytesRead === 0 && now - connection.opened >= this.limits.idleMs) {
        this.connections.delete(socket);
        socket.destroy();
        continue;
      }
      // Bytes queued on the socket mean the kernel's buffer is full: the client is not reading.
      const verdict = connection.sending.step(sent(socket), socket.writableLength > 0, this.limits);
      if (verdict === null) continue;
      this.connections.delete(socket);
      this.log.info(
        { remoteAddress: socket.remoteAddress, bytesSent: sent(socket), queued: socket.writableLength, verdict },
        'slow reader cut off',
      );
      socket.destroy();
    }
    if (this.bodies.size === 0 && this.connections.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private cutBody(w: WatchedBody, detail: string): void {
    this.bodies.delete(w);
    const { request, response } = w;
    w.log.info(
      { method: request.method, url: request.url, bytesRead: request.socket.bytesRead },
      'slow request body cut off',
    );
    const socket = request.socket;
    // Only when the connection belongs to this answer and none of it was written (not so for a pipelined request).
    if (response.socket === socket && !response.headersSent && socket.writable) {
      const body = JSON.stringify({ type: 'about:blank', title: 'Request Timeout', status: 408, detail });
      const headers = {
        ...COMMON_HEADERS,
        'content-type': PROBLEM_CONTENT_TYPE,
        'content-length': String(Buffer.byteLength(body)),
        connection: 'close',
      };
      socket.write(
        `HTTP/1.1 408 Request Timeout\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n${body}`,
      );
    }
    // The connection closes after the answer, gracefully; whoever reads the body sees it break off.
    this.lingering.close(socket);
    request.destroy();
  }
}

/**
 * The bytes read and discarded after an early answer before the connection is cut: LINGER_MAX_BYTES for a body of a
 * declared length, none but the time bound for a chunked one. A client that streams its body (Node's fetch of a
 * stream) writes it whole before it reads the answer; cut off while it writes, it sees EPIPE instead of the answer,
 * and a chunked body has no length that would tell it to stop. LINGER_MAX_MS still ends the reading.
 */
function lingerMaxBytes(request: IncomingMessage): number {
  return request.headers['content-length'] === undefined ? Number.POSITIVE_INFINITY : LINGER_MAX_BYTES;
}

function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  if (length !== undefined) return length !== '0';
  return request.headers['transfer-encoding'] !== undefined;
}

/**
 * Guards the connections of `app`: the cap, silent connections, slow request bodies and slow readers, and closes
 * connections gracefully after answers given before their request body arrived.
 */
export function guardConnections(app: App, settings: Settings['server'], lingering: LingeringClose): ConnectionGuard {
  const watch = new ConnectionGuard(settings, app.log, lingering);
  // The cap is decided here rather than by Node's server.maxConnections, which refuses the new connection even
  // when the ones it keeps are idle.
  app.server.on('connection', (socket: Socket) => watch.admit(socket));
  app.addHook('onRequest', (request, reply, done) => {
    watch.watch(request.raw, reply.raw, request.log);
    done();
  });
  // An answer while the body is still arriving closes the connection after a lingering close (see lingerAfter).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!request.raw.complete && hasBody(request.raw)) {
      reply.header('connection', 'close');
      watch.lingerAfter(request.raw);
    }
    done(null, payload);
  });
  app.addHook('preClose', (done) => {
    lingering.drop();
    done();
  });
  app.addHook('onClose', (_app, done) => {
    watch.stop();
    done();
  });
  return watch;
}
