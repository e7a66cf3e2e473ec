// A change feed subscription's HTTP side: Server-Sent Events (WHATWG HTML) written to the raw response. The status
// line and headers go out with the first message, so that a subscription refused before it has one is an ordinary
// problem response.
import type { FastifyReply } from 'fastify';
import type { FeedMessage, Sink } from '../domain/events/subscription.js';
import { COMMON_HEADERS } from './headers.js';

/** How long an EventSource waits before it reconnects after the stream ends (the SSE `retry:` field). */
const RECONNECT_MS = 1000;

/** One SSE message. `data` is JSON, which holds no line break. */
const frame = (m: FeedMessage) => `${m.id === null ? '' : `id: ${m.id}\n`}event: ${m.event}\ndata: ${m.data}\n\n`;

/**
 * The stream of `reply`. A client that lets more than `maxBufferedBytes` pile up unread has its stream ended (it
 * resumes from its last cursor) rather than growing this process's memory.
 */
export function eventStream(reply: FastifyReply, maxBufferedBytes: number): Sink {
  const raw = reply.raw;
  let open = false;
  const writable = () => open && !raw.destroyed && !raw.writableEnded;
  const start = () => {
    if (open) return;
    open = true;
    reply.hijack();
    raw.writeHead(200, {
      ...COMMON_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // nginx and others buffer a response unless told not to, which would hold events back.
      'x-accel-buffering': 'no',
    });
    raw.write(`retry: ${RECONNECT_MS}\n\n`);
  };
  return {
    send(message) {
      start();
      if (!writable()) return false;
      raw.write(frame(message));
      if (raw.writableLength > maxBufferedBytes) {
        raw.destroy();
        return false;
      }
      return true;
    },
    heartbeat() {
      if (writable()) raw.write(': heartbeat\n\n');
    },
    end() {
      // The connection goes with the stream: kept alive, it would hold a shutting-down server until the
      // keep-alive timeout, and the client opens a new one to resume anyway.
      if (writable()) raw.end(() => raw.socket?.destroy());
    },
  };
}
