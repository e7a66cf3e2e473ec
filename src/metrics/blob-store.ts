// The blob store as the metrics see it: every call timed until it resolves, and its failures counted, by store and
// operation. A wrapper, so that the stores stay as they are.
import { type BlobStore, type ByteRange, PartialAppendError } from '../blob/blob-store.js';
import type { PromMetrics } from './registry.js';

/** The calls that reach the disk or the bucket (`settled` waits for background work and is not one). */
const OPERATIONS = [
  'verify',
  'write',
  'discard',
  'replace',
  'append',
  'fork',
  'open',
  'openUpload',
  'uploadSize',
  'delete',
  'dropGeneration',
  'deleteUpload',
  'sweep',
] as const satisfies readonly (keyof BlobStore)[];

type Call = (...args: unknown[]) => Promise<unknown>;
type Count = (bytes: number) => void;

/**
 * Counts the bytes a call moved: those a write or an append stored, and those a download opened (the range's length,
 * or the whole file), counted when it opens: the object store's body is written into the answer directly, past any
 * stream event a wrapper could see.
 */
function countBytes(operation: string, args: unknown[], result: unknown, received: Count, sent: Count): void {
  if (operation === 'write' || operation === 'append') received((result as { size: number }).size);
  else if (operation === 'open' && result !== null) {
    const range = args[1] as ByteRange | undefined;
    sent(range ? range.end - range.start + 1 : (result as { size: number }).size);
  }
}

/** `store` (named 'disk' or 's3' in the labels) with its calls timed and the bytes of files counted. */
export function measuredBlobStore(store: BlobStore, name: string, metrics: PromMetrics): BlobStore {
  const wrapped = new Map<PropertyKey, Call>();
  const receivedBytes = metrics.receivedBytes.labels(name);
  const sentBytes = metrics.sentBytes.labels(name);
  const received = (n: number) => receivedBytes.inc(n);
  const sent = (n: number) => sentBytes.inc(n);
  for (const operation of OPERATIONS) {
    const call = (store[operation] as Call).bind(store);
    const duration = metrics.blobDuration.labels(name, operation);
    const errors = metrics.blobErrors.labels(name, operation);
    wrapped.set(operation, (...args) => {
      const started = performance.now();
      return call(...args).then(
        (result) => {
          duration.observe((performance.now() - started) / 1000);
          countBytes(operation, args, result, received, sent);
          return result;
        },
        (error: unknown) => {
          duration.observe((performance.now() - started) / 1000);
          errors.inc();
          // An append that keeps what arrived of a source that failed stored those bytes.
          if (error instanceof PartialAppendError && operation === 'append')
            received(error.total - (args[1] as number));
          throw error;
        },
      );
    });
  }
  // A proxy, so that everything else of the store (its other methods, its class) is the store's own.
  return new Proxy(store, {
    get: (target, property, receiver) => wrapped.get(property) ?? Reflect.get(target, property, receiver),
  });
}
