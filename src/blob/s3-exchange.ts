// One GetObject answer as the handler (s3-reader.ts) reads it off its connection: the head, then the body by the
// framing the head announced (a length, chunks, or until the connection closes).

import type { ObjectResponse } from './s3-http.js';
import { type Framing, framingOf, parseHead, protocolError } from './s3-http.js';
import { ObjectBody } from './s3-object-body.js';

/** Longest response head accepted (S3 heads are a few hundred bytes). */
const HEAD_LIMIT = 64 * 1024;

/** What an answer needs of the connection it arrives on (s3-connection.ts). */
export interface ExchangeConnection {
  fail(error: Error): void;
  /** The answer is complete; `reusable`: the connection may carry the next GET. */
  done(reusable: boolean): void;
  resume(): void;
}

/** One GET's answer on a connection: its head, then its body by the framing the head announced. */
export class Exchange {
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
    private readonly connection: ExchangeConnection,
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
