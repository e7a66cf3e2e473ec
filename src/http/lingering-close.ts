// The lingering close of every answer the server gives before it has read the whole request: a body refused while
// it arrives (413, 401, 404), a body cut off for arriving too slowly (408), a request Node's parser refused (400,
// 431). Closing a socket with unread bytes makes the kernel send a reset, which can reach the client before it has
// read the answer, and then it sees EPIPE or ECONNRESET instead of the problem document. So the server sends its FIN
// after the answer, reads and discards what the client still sends, and closes only once the client has closed its
// side, or after a bound in bytes or in time (as nginx does).
import type { Socket } from 'node:net';

/**
 * Bounds of the lingering close, whichever comes first: the bytes read and discarded after the answer, and the time
 * from the answer to the close. Enough for a client that writes a refused body of a few MiB whole before it reads
 * the answer, or that needs a few seconds on a slow link to notice it; small enough that a client cannot make the
 * server read an endless body or hold the connection after its answer (nginx lingers up to 30 s, with 5 s of
 * silence at most).
 */
export const LINGER_MAX_BYTES = 8 * 1024 * 1024;
export const LINGER_MAX_MS = 5000;

export class LingeringClose {
  /** The sockets lingering, each with how to close it for good. */
  private readonly sockets = new Map<Socket, () => void>();

  /**
   * The answer on `socket` is written or queued: closes the connection gracefully after it. From now on Node's HTTP
   * parser sees nothing more of the connection, and a destroy of the socket (the request's, the server's after a
   * parse error, a handler's) waits for the lingering close, which alone ends the connection; an error of the
   * socket itself (a reset, a broken pipe) still ends it at once. `maxBytes` bounds what is read and discarded.
   */
  close(socket: Socket, maxBytes = LINGER_MAX_BYTES): void {
    if (this.sockets.has(socket) || socket.destroyed) return;
    const destroy = socket.destroy;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      clearTimeout(timer);
      this.sockets.delete(socket);
      socket.destroy = destroy;
      socket.destroy();
    };
    this.sockets.set(socket, finish);
    socket.destroy = ((error?: Error) => {
      // Errors of the connection carry the system call that failed; nothing more can be read or written on it.
      if (error !== undefined && 'syscall' in error) finish();
      return socket;
    }) as Socket['destroy'];
    const answered = socket.bytesRead;
    // The parser's listener goes; adding one of our own makes Node hand the bytes to JavaScript instead of
    // parsing them natively.
    socket.removeAllListeners('data');
    socket.on('data', () => {
      if (socket.bytesRead - answered > maxBytes) finish();
    });
    // The client closed its side: nothing more will arrive.
    socket.once('end', finish);
    socket.once('close', () => {
      clearTimeout(timer);
      this.sockets.delete(socket);
    });
    timer = setTimeout(finish, LINGER_MAX_MS);
    timer.unref();
    socket.end();
    socket.resume();
    // Node's parser may have stopped the socket's reading (a request body nobody read) while it read the socket
    // natively, which leaves the stream believing a read is under way: the handle is started again, as Node's own
    // HTTP server does when it resumes a socket.
    const handle = (socket as unknown as { _handle?: { reading: boolean; readStart(): number } })._handle;
    if (handle && !handle.reading) {
      handle.reading = true;
      handle.readStart();
    }
  }

  /** Closes every connection still lingering (the instance is shutting down). */
  drop(): void {
    for (const finish of [...this.sockets.values()]) finish();
  }
}
