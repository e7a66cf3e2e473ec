// A socket for `pg` that talks to PGlite instead of a server: `pg`'s own Connection (pg-protocol's serializer and
// parser) writes the frontend messages of the PostgreSQL wire protocol into it, and reads the backend's replies
// from it, exactly as over TCP.
//
// The messages `pg` writes in one tick go to PGlite as one batch, and the reply bytes go to pg-protocol's parser,
// rather than one call per message and PGlite's own parser (docs/decisions/001-pglite-socket.md). PGlite stays on
// this thread (docs/decisions/002-pglite-not-on-a-worker.md).
import { Duplex } from 'node:stream';

/** Where the wire protocol's bytes go (pglite-wire.ts). */
export interface PgliteWire {
  /** Runs a batch of frontend messages; resolves with the backend's reply bytes. */
  exchange(messages: Uint8Array): Promise<Uint8Array>;
  /**
   * Opens a new session for a connection: PGlite is one PostgreSQL session, which outlives the connections of `pg`'s
   * pool (a client the pool drops is followed by a new one), so whatever a dropped client left is undone too.
   * Resolves with the reply to `startupPacket`.
   */
  startup(startupPacket: Uint8Array): Promise<Uint8Array>;
}

/** A startup packet begins with its Int32 length (always < 2^24, so a zero byte); every other message with its type. */
const isStartupPacket = (message: Uint8Array): boolean => message[0] === 0;

export class PgliteSocket extends Duplex {
  private pending: Buffer[] = [];
  private scheduled = false;
  /** The exchanges run one after another, in the order `pg` wrote them. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly wire: PgliteWire) {
    super();
  }

  // The net.Socket methods `pg`'s Connection calls.
  connect(): this {
    process.nextTick(() => this.emit('connect'));
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.pending.push(chunk);
    // `pg` writes the messages of one query (Parse, Bind, Describe, Execute, Sync) synchronously: they leave together.
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(() => this.send());
    }
    callback();
  }

  override _read(): void {}

  override _final(callback: (error?: Error | null) => void): void {
    this.chain.then(() => {
      this.push(null);
      callback();
    }, callback);
  }

  private send(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    // Terminate ('X') ends the connection, not PGlite's one session: the session stays for the next connection.
    const messages = batch.filter((message) => message[0] !== 0x58);
    if (messages.length === 0) return;
    // `pg` waits for the reply to its startup packet before it writes anything else; should more follow in the
    // same tick, they go after it.
    if (isStartupPacket(messages[0]!)) this.enqueue(messages.shift()!, true);
    if (messages.length > 0) this.enqueue(messages.length === 1 ? messages[0]! : Buffer.concat(messages), false);
  }

  private enqueue(bytes: Buffer, startup: boolean): void {
    this.chain = this.chain
      .then(() => (startup ? this.wire.startup(bytes) : this.wire.exchange(bytes)))
      .then(
        (reply) => {
          if (reply.length > 0) this.push(Buffer.from(reply.buffer, reply.byteOffset, reply.byteLength));
        },
        (error: Error) => {
          this.destroy(error);
        },
      );
  }
}
