// One client's stream of the change feed: what it watches, who it is, where it stands, and where its messages go.
import type { ElementId } from '../../values.js';
import type { Caller } from '../accounts/types.js';
import type { Cursor } from './cursor.js';

/** What a subscription watches: everything the caller may read, some elements, or a node's children. */
export type Scope = { kind: 'all' } | { kind: 'ids'; ids: ReadonlySet<ElementId> } | { kind: 'parent'; id: ElementId };

/** One message of the stream: an SSE event (`id` null: it does not move the client's cursor). */
export interface FeedMessage {
  id: string | null;
  event: string;
  /** JSON. */
  data: string;
}

/** Where a subscription's messages go (the HTTP stream). */
export interface Sink {
  /** Queues one message; false when the client reads too slowly to keep up, and the stream is then ended. */
  send(message: FeedMessage): boolean;
  /** A comment that keeps proxies from closing an idle stream. */
  heartbeat(): void;
  /** Ends the stream; the client resumes from its last cursor. */
  end(): void;
}

export class Subscription {
  /** The last event this subscription has been given (or skipped as not its own). */
  cursor: Cursor;
  /** Following the feed's tail with the others, rather than catching up on its own. */
  live = false;
  closed = false;
  /** For an `ids` scope: the watched elements it could read when it last looked. */
  readonly readableWatched = new Set<ElementId>();

  constructor(
    readonly caller: Caller,
    /** The token's hash, checked every second (null for the anonymous user). */
    readonly tokenHash: string | null,
    readonly scope: Scope,
    private readonly sink: Sink,
    cursor: Cursor,
  ) {
    this.cursor = cursor;
  }

  get userId(): ElementId {
    return this.caller.userId;
  }

  send(message: FeedMessage): void {
    if (this.closed) return;
    if (!this.sink.send(message)) this.closed = true;
  }

  heartbeat(): void {
    if (!this.closed) this.sink.heartbeat();
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.sink.end();
  }
}
