// Live changes for the view shown: GET /events read as a stream of Server-Sent Events. The browser's EventSource
// cannot send an Authorization header, so this reads the stream with fetch and parses it, reconnecting with
// Last-Event-ID (docs/events.md) so that nothing is missed between two connections.
import { authHeaders } from './api.js';
import { session } from './session.js';

export interface LiveEvent {
  event: string;
  data: { change?: string; id?: string; kind?: string | null; type?: string | null };
}

/** How long to wait before reconnecting after the stream ended or failed. */
const RECONNECT_MS = 1000;

interface Following {
  path: string;
  controller: AbortController;
  onEvent: (event: LiveEvent) => void;
  onGone: () => void;
}

let current: Following | null = null;

/** Stops following (the view changed). */
export function stopLive(): void {
  current?.controller.abort();
  current = null;
}

/**
 * Follows `path` (e.g. `/events?parent=<id>`) until the next `follow` or `stopLive`, calling `onEvent` for every
 * element event and `access` event. `onGone` hears a 404: the watched element is gone or no longer readable.
 */
export function follow(path: string, onEvent: (event: LiveEvent) => void, onGone: () => void): void {
  // The same view drawn again (after a change) keeps its stream, so that nothing falls between two streams.
  if (current?.path === path) {
    current.onEvent = onEvent;
    current.onGone = onGone;
    return;
  }
  stopLive();
  const controller = new AbortController();
  const following: Following = { path, controller, onEvent, onGone };
  current = following;
  let lastEventId = '';
  const connect = async (): Promise<void> => {
    while (!controller.signal.aborted) {
      try {
        const headers: Record<string, string> = { ...authHeaders(), Accept: 'text/event-stream' };
        if (lastEventId) headers['Last-Event-ID'] = lastEventId;
        const response = await fetch(path, { headers, signal: controller.signal });
        if (response.status === 401 && session.token !== null) return session.ended();
        if (response.status === 404) return following.onGone();
        if (!response.ok || !response.body) throw new Error(`status ${response.status}`);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const message = parse(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf('\n\n');
            if (message.id !== null) lastEventId = message.id;
            if (message.event && message.data && message.event !== 'ready') {
              following.onEvent({ event: message.event, data: JSON.parse(message.data) });
            }
          }
        }
      } catch {
        if (controller.signal.aborted) return;
      }
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  };
  void connect();
}

/** One SSE message's fields (WHATWG HTML: `field: value` lines; comments start with a colon). */
function parse(block: string): { id: string | null; event: string; data: string } {
  let id: string | null = null;
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return { id, event, data: data.join('\n') };
}
