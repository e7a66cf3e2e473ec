// How long a request to the object store may wait for it (file.s3.timeoutInSeconds): never longer than the timeout
// without a byte either way, and never sent again after such a silence. The SDK's own bounds fall short of that: its
// socketTimeout arms itself only seconds into a request when it is 6 s or more, and its retries sent a request that
// timed out twice more, so a store that stopped answering held a download for three timeouts, and an upload (with
// the clean-up after it) for six.
import { type AgentOptions, type ClientRequest, type ClientRequestArgs, Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { S3ClientConfig } from '@aws-sdk/client-s3';

/** The error of a request whose store was silent for `ms`: while connecting, answering, or reading the request body. */
function silenceError(ms: number): Error {
  return Object.assign(new Error(`the object store sent nothing and took nothing for ${ms} ms`), {
    name: 'TimeoutError',
    code: 'ETIMEDOUT',
  });
}

/** Did a request fail because the store was silent for the whole timeout (here, in s3-reader.ts, or in the SDK)? */
export function isSilence(error: unknown): boolean {
  const e = error as { name?: string; code?: string } | null;
  return e?.code === 'ETIMEDOUT' || (e?.name === 'TimeoutError' && e.code === undefined);
}

/** What a connection has read, and what it still has to write (Node's queue, and the bytes its kernel has yet to take). */
function progressOf(socket: Duplex): string {
  const handle = (socket as { _handle?: { writeQueueSize?: number } })._handle;
  return `${(socket as Socket).bytesRead} ${socket.writableLength} ${handle?.writeQueueSize}`;
}

/**
 * Times the connections of an agent: from its creation or its reuse for a request until the agent keeps it for the
 * next one, a connection on which nothing moved for `ms` (no byte read, none taken of what it writes: a store that
 * neither answers nor reads the body it is sent) fails its request. Idle kept connections are the agent's. Node's
 * own socket timeout would not do: while a write is in progress it lets the first timeout pass, so a store that
 * stopped reading a body held the request for up to twice the timeout.
 */
class SilenceWatch {
  private readonly busy = new Map<Duplex, { progress: string; since: number }>();
  private readonly watched = new WeakSet<Duplex>();
  private timer: NodeJS.Timeout | null = null;
  /** How often connections are looked at: a silence is noticed at most this long after it reached the timeout. */
  private readonly periodMs: number;

  constructor(private readonly ms: number) {
    this.periodMs = Math.min(1000, Math.max(10, ms / 10));
  }

  start(socket: Duplex): void {
    if (!this.watched.has(socket)) {
      this.watched.add(socket);
      socket.once('close', () => this.stop(socket));
    }
    this.busy.set(socket, { progress: progressOf(socket), since: performance.now() });
    this.timer ??= setInterval(() => this.look(), this.periodMs).unref();
  }

  stop(socket: Duplex): void {
    this.busy.delete(socket);
    if (this.busy.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private look(): void {
    const now = performance.now();
    for (const [socket, seen] of this.busy) {
      const progress = progressOf(socket);
      if (progress !== seen.progress) {
        seen.progress = progress;
        seen.since = now;
      } else if (now - seen.since >= this.ms) {
        this.stop(socket);
        socket.destroy(silenceError(this.ms));
      }
    }
  }
}

/** `Base` (node's http or https Agent, the latter a subclass of the former) with every busy connection watched. */
function quiet<T extends HttpAgent>(
  Base: new (options: AgentOptions) => T,
  options: AgentOptions,
  watch: SilenceWatch,
): T {
  const Watched = class extends (Base as new (options: AgentOptions) => HttpAgent) {
    override createConnection(options: ClientRequestArgs, callback?: (error: Error | null, socket: Duplex) => void) {
      const socket = super.createConnection(options, callback);
      if (socket) watch.start(socket);
      return socket;
    }

    override reuseSocket(socket: Duplex, request: ClientRequest): void {
      super.reuseSocket(socket, request);
      watch.start(socket);
    }

    override keepSocketAlive(socket: Duplex) {
      watch.stop(socket);
      return super.keepSocketAlive(socket);
    }
  };
  return new Watched(options) as T;
}

export function quietAgents(
  options: AgentOptions,
  silenceMs: number,
): { httpAgent: HttpAgent; httpsAgent: HttpsAgent } {
  const watch = new SilenceWatch(silenceMs);
  return { httpAgent: quiet(HttpAgent, options, watch), httpsAgent: quiet(HttpsAgent, options, watch) };
}

type RetryStrategyV2 = Extract<NonNullable<S3ClientConfig['retryStrategy']>, { acquireInitialRetryToken: unknown }>;
type RetryToken = Awaited<ReturnType<RetryStrategyV2['acquireInitialRetryToken']>>;

/** Attempts of one request, and the backoff between them (as the SDK's standard retries). */
const MAX_ATTEMPTS = 3;
const BASE_DELAY_MS = 100;
const THROTTLED_BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 20_000;

const token = (retries: number, delayMs: number): RetryToken => ({
  getRetryCount: () => retries,
  getRetryDelay: () => delayMs,
});

/**
 * The SDK's standard retries (up to three attempts with jittered exponential backoff, for throttling and transient
 * failures such as a reset connection or a 503 answer), except after a silence: the store did not answer for the
 * whole timeout once, and asked again it would hold the request for another.
 */
export const storeRetries: RetryStrategyV2 = {
  acquireInitialRetryToken: async () => token(0, 0),
  refreshRetryTokenForRetry: async (previous, { error, errorType }) => {
    const retries = previous.getRetryCount() + 1;
    if (retries >= MAX_ATTEMPTS || isSilence(error) || (errorType !== 'TRANSIENT' && errorType !== 'THROTTLING'))
      throw new Error('not retried');
    const base = errorType === 'THROTTLING' ? THROTTLED_BASE_DELAY_MS : BASE_DELAY_MS;
    return token(retries, Math.random() * Math.min(MAX_DELAY_MS, base * 2 ** retries));
  },
  recordSuccess: () => {},
};
