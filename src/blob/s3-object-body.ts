// The body of an object the GetObject handler reads (s3-reader.ts): a stream, or buffers lent to an HTTP answer.
import { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';

/** Bytes per socket read, and per buffer a body lends. */
export const READ_BYTES = 128 * 1024;
/** Buffers a body lends at once: reading pauses until one comes back. */
const LENT = 4;

/** Where a body's bytes come from (s3-exchange.ts). */
export interface BodySource {
  /** Whoever reads the body wants more. */
  resume(): void;
  /** The body's reader went away before its end. */
  abandon(): void;
}

/**
 * An object's body. Read as a stream, each piece is a copy of its own. Piped into an HTTP answer, the pieces are
 * written from a few buffers the body lends the answer, each used again once the socket has taken its bytes (the
 * write's callback): the answer is a socket's writer, which keeps no piece after that.
 */
export class ObjectBody extends Readable {
  private mode: 'waiting' | 'read' | 'lent' = 'waiting';
  /** What arrived before anyone read (at most one socket read: the connection pauses until then). */
  private pending: Buffer[] = [];
  private arrived = false;
  private target: ServerResponse | null = null;
  private endTarget = true;
  private readonly free: Buffer[] = [];
  private out = 0;
  private blocked = false;

  constructor(private readonly exchange: BodySource) {
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
