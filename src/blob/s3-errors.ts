// Failures of the object store. The SDK's errors carry the bucket, keys and the store's own messages; they are kept
// as the cause (logged with the request) and never shown to a client, which gets the spec's 500 problem.

/** A request to the object store failed (an error answer, a timeout, a broken connection). */
export class ObjectStoreError extends Error {
  constructor(
    readonly operation: string,
    override readonly cause: unknown,
  ) {
    const e = cause as { name?: string; $metadata?: { httpStatusCode?: number } };
    const status = e?.$metadata?.httpStatusCode;
    super(`object store ${operation} failed: ${e?.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}`);
    this.name = 'ObjectStoreError';
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
