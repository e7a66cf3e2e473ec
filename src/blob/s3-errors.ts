// Failures of the object store. The SDK's errors carry the bucket, keys and the store's own messages; they are kept
// as the cause (logged with the request) and never shown to a client. A store that cannot be reached, does not
// answer in time or says it is unavailable is an outage the client may wait out: 503 with Retry-After
// (http/problems.ts); any other failure (the store refused the request, answered what cannot be read) is the spec's
// 500 problem.
import { isSilence } from './s3-timeouts.js';

/** Connection failures: the store is down, restarting, or out of reach. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** Whether `cause` says the store is unavailable for the moment rather than that it refused the request. */
function unavailable(cause: unknown): boolean {
  const e = cause as { code?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined) return status === 500 || status === 502 || status === 503 || status === 504;
  return isSilence(cause) || UNREACHABLE.has(e?.code ?? '');
}

/** A request to the object store failed (an error answer, a timeout, a broken connection). */
export class ObjectStoreError extends Error {
  /** The store could not be reached, did not answer in time, or answered that it is unavailable (a 5xx). */
  readonly unavailable: boolean;

  constructor(
    readonly operation: string,
    override readonly cause: unknown,
  ) {
    const e = cause as { name?: string; $metadata?: { httpStatusCode?: number } };
    const status = e?.$metadata?.httpStatusCode;
    super(`object store ${operation} failed: ${e?.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}`);
    this.name = 'ObjectStoreError';
    this.unavailable = unavailable(cause);
  }
}

/** Runs one request to the object store; whatever it throws becomes an ObjectStoreError. */
export async function objectStoreCall<T>(operation: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    throw new ObjectStoreError(operation, error);
  }
}

/**
 * Runs `cleanUp` after `failure` (removing what a failed request left): waited for, unless the store was unavailable,
 * when waiting would hold the request for another timeout. What it cannot remove, the sweep does.
 */
export async function cleanUpAfter(failure: unknown, cleanUp: () => Promise<unknown>): Promise<void> {
  const done = cleanUp().catch(() => {});
  if (!(failure instanceof ObjectStoreError && failure.unavailable)) await done;
}
