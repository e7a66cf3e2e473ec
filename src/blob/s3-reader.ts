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
import { Connection, type ConnectionPool, StaleConnection } from './s3-connection.js';
import { type AbortSignalLike, type ObjectResponse, requestHead, type SignedRequest } from './s3-http.js';

/** How many unused connections wait for the next GET, per store. */
const IDLE_PER_ORIGIN = 16;

/** The SDK's request handler for GetObject (S3Client's `requestHandler`). */
export class ObjectReader implements ConnectionPool {
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
