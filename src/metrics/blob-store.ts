// The blob store as the metrics see it: every call timed until it resolves, and its failures counted, by store and
// operation. A wrapper, so that the stores stay as they are.
import type { BlobStore } from '../blob/blob-store.js';
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

/** `store` (named 'disk' or 's3' in the labels) with its calls timed. */
export function measuredBlobStore(store: BlobStore, name: string, metrics: PromMetrics): BlobStore {
  const wrapped = new Map<PropertyKey, Call>();
  for (const operation of OPERATIONS) {
    const call = (store[operation] as Call).bind(store);
    const duration = metrics.blobDuration.labels(name, operation);
    const errors = metrics.blobErrors.labels(name, operation);
    wrapped.set(operation, (...args) => {
      const started = performance.now();
      return call(...args).then(
        (result) => {
          duration.observe((performance.now() - started) / 1000);
          return result;
        },
        (error: unknown) => {
          duration.observe((performance.now() - started) / 1000);
          errors.inc();
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
