// A connection of the GetObject handler (s3-reader.ts) to the store: one GET at a time, read into one buffer of its
// own, kept for the next GET when the answer allows it.
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Exchange } from './s3-exchange.js';
import { type AbortSignalLike, abortError, type ObjectResponse, type SignedRequest } from './s3-http.js';
import { READ_BYTES } from './s3-object-body.js';

/** How long an unused connection waits for the next GET. */
const IDLE_MS = 4000;

/** Where connections wait between GETs (the handler). */
export interface ConnectionPool {
  keep(connection: Connection): void;
  forget(connection: Connection): void;
}

export /** A kept connection that the store closed meanwhile: the GET goes again on a new one. */
class StaleConnection extends Error {}

const closed = (error: Error) => ['ECONNRESET', 'EPIPE'].includes((error as { code?: string }).code ?? '');

/** One connection to the store: one GET at a time, its answer read into `buffer`. */
export class Connection {
  readonly socket: Socket;
  private readonly buffer = Buffer.allocUnsafeSlow(READ_BYTES);
  /** The answer in progress; null between GETs. */
  private exchange: Exchange | null = null;
  idle = false;
  /** GETs answered on it so far: a failure before the first byte of a later answer means the store closed it. */
  private answered = 0;

  constructor(
    private readonly reader: ConnectionPool,
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
