// Following GET /events in tests: with the `eventsource` package (a real SSE client, which reconnects with
// Last-Event-ID by itself), recording every message it dispatches.
import { EventSource } from 'eventsource';

export interface Received {
  event: string;
  /** The SSE id of the message (the client's lastEventId after it). */
  id: string;
  data: any;
}

const NAMES = [
  'ready',
  'reset',
  'access',
  'created',
  'changed',
  'deleted',
  'file-created',
  'file-replaced',
  'file-removed',
];

export interface Follower {
  received: Received[];
  /** The element events received (not ready, reset or access). */
  changes(): Received[];
  /** Waits until `test` holds for the messages received so far (polling), or fails after `ms`. */
  until(test: (received: Received[]) => boolean, ms?: number): Promise<void>;
  /** The status and problem type of a refused stream, once the client gave up. */
  failure: { status?: number; message: string } | null;
  readonly lastEventId: string;
  close(): void;
}

/** Follows `path` (e.g. `/events?id=...`) of the service at `url` as the holder of `token`. */
export function follow(url: string, path: string, token?: string, lastEventId?: string): Follower {
  const received: Received[] = [];
  let lastId = lastEventId ?? '';
  const source = new EventSource(url + path, {
    fetch: (input, init) => {
      const headers: Record<string, string> = { ...(init?.headers as Record<string, string>) };
      if (token) headers.authorization = `Bearer ${token}`;
      if (lastEventId && !Object.keys(headers).some((k) => k.toLowerCase() === 'last-event-id'))
        headers['last-event-id'] = lastEventId;
      return fetch(input, { ...init, headers });
    },
  });
  const follower: Follower = {
    received,
    failure: null,
    changes: () => received.filter((r) => !['ready', 'reset', 'access'].includes(r.event)),
    async until(test, ms = 5000) {
      const deadline = Date.now() + ms;
      while (!test(received)) {
        if (Date.now() > deadline)
          throw new Error(
            `timed out; failure ${JSON.stringify(follower.failure)}; received: ${JSON.stringify(received.map((r) => [r.event, r.data?.id ?? r.data]))}`,
          );
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    get lastEventId() {
      return lastId;
    },
    close: () => source.close(),
  };
  for (const name of NAMES)
    source.addEventListener(name, (e) => {
      const m = e as MessageEvent;
      lastId = m.lastEventId;
      received.push({ event: name, id: m.lastEventId, data: JSON.parse(m.data) });
    });
  source.addEventListener('error', (e) => {
    const err = e as unknown as { code?: number; message?: string };
    if (source.readyState === EventSource.CLOSED) follower.failure = { status: err.code, message: err.message ?? '' };
  });
  return follower;
}
