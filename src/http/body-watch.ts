// Slow request bodies: a body that sends nothing for `server.bodyIdleTimeoutInSeconds`, or less than
// `server.bodyMinBytesPerSecond` over `server.bodyRateWindowInSeconds`, is cut off (408 while nothing of the answer
// was written, then the connection closes). Only time spent waiting for the client counts: while the request's
// buffer is full the server is the one not reading. Node's own `requestTimeout` stays off, as it would cut a large
// upload that moves steadily.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Settings } from '../config/schema.js';
import { COMMON_HEADERS } from './headers.js';
import { PROBLEM_CONTENT_TYPE } from './problems.js';
import type { App } from './types.js';

interface Watched {
  request: IncomingMessage;
  response: ServerResponse;
  log: FastifyBaseLogger;
  /** socket.bytesRead at the last tick: counted on the socket, so a body counts whoever reads it. */
  bytes: number;
  /** Time without a byte while the server waited, in ms. */
  idle: number;
  /** Total time the server waited for this body, in ms. */
  waited: number;
  /** (waited, bytes) at each of the last ticks, oldest first: the rate window. */
  samples: Array<{ waited: number; bytes: number }>;
}

export class BodyWatch {
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | null = null;
  private readonly idleMs: number;
  private readonly windowMs: number;
  private readonly minRate: number;
  /** Ticks often enough to notice the shortest limit within a quarter of it, and at most once a second. */
  readonly tickMs: number;

  constructor(settings: Settings['server']) {
    this.idleMs = settings.bodyIdleTimeoutInSeconds * 1000;
    this.windowMs = settings.bodyRateWindowInSeconds * 1000;
    this.minRate = settings.bodyMinBytesPerSecond;
    this.tickMs = Math.max(50, Math.min(1000, Math.floor(Math.min(this.idleMs, this.windowMs) / 4)));
  }

  /** Watches the body of `request` until it has arrived, the answer is finished or the connection is gone. */
  watch(request: IncomingMessage, response: ServerResponse, log: FastifyBaseLogger): void {
    if (request.complete || !hasBody(request)) return;
    this.watched.add({ request, response, log, bytes: request.socket.bytesRead, idle: 0, waited: 0, samples: [] });
    if (this.timer === null) {
      this.timer = setInterval(() => this.tick(), this.tickMs);
      this.timer.unref();
    }
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.watched.clear();
  }

  private tick(): void {
    const windowTicks = Math.ceil(this.windowMs / this.tickMs);
    for (const w of this.watched) {
      const { request, response } = w;
      if (request.complete || request.destroyed || response.writableFinished || response.destroyed) {
        this.watched.delete(w);
        continue;
      }
      const bytes = request.socket.bytesRead;
      const arrived = bytes - w.bytes;
      w.bytes = bytes;
      // A request whose buffer is below its high-water mark takes more at once: the server is waiting.
      const waiting = request.readableLength < request.readableHighWaterMark;
      if (!waiting) {
        w.idle = 0;
        continue;
      }
      w.waited += this.tickMs;
      w.idle = arrived > 0 ? 0 : w.idle + this.tickMs;
      if (w.idle >= this.idleMs) {
        this.cut(w, `The request body sent nothing for ${this.idleMs / 1000} s.`);
        continue;
      }
      if (this.minRate <= 0) continue;
      w.samples.push({ waited: w.waited, bytes });
      if (w.samples.length <= windowTicks) continue;
      const oldest = w.samples.shift()!;
      const waited = w.waited - oldest.waited;
      // Judged only when the server spent at least half the window waiting for this body.
      if (waited >= this.windowMs / 2 && bytes - oldest.bytes < (this.minRate * waited) / 1000)
        this.cut(w, `The request body arrived slower than ${this.minRate} bytes per second.`);
    }
    if (this.watched.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private cut(w: Watched, detail: string): void {
    this.watched.delete(w);
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
    // Destroying the request closes the connection: whoever reads the body sees it break off.
    request.destroy();
  }
}

function hasBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  if (length !== undefined) return length !== '0';
  return request.headers['transfer-encoding'] !== undefined;
}

/** Watches every request body of `app`, and closes connections beyond `server.maxConnections`. */
export function guardConnections(app: App, settings: Settings['server']): BodyWatch {
  const watch = new BodyWatch(settings);
  app.server.maxConnections = settings.maxConnections;
  let warned = 0;
  app.server.on('drop', () => {
    // At most one line a minute: a flood of refused connections must not flood the log as well.
    if (Date.now() - warned < 60_000) return;
    warned = Date.now();
    app.log.warn({ maxConnections: settings.maxConnections }, 'connections refused: server.maxConnections reached');
  });
  app.addHook('onRequest', (request, reply, done) => {
    watch.watch(request.raw, reply.raw, request.log);
    done();
  });
  app.addHook('onClose', (_app, done) => {
    watch.stop();
    done();
  });
  return watch;
}
