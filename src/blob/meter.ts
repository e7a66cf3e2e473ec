// What both blob stores do to a byte stream on its way in: count it, hold it to a limit, show it to an observer and
// keep its first bytes (content sniffing); and, for appends that keep what arrived, end it quietly when its source
// fails.
import { BlobLimitError, type WriteOptions } from './blob-store.js';

/** Counts, limits, observes and keeps the head of a byte stream as it passes. */
export function meter(options: WriteOptions) {
  const headBytes = options.headBytes ?? 0;
  const state = { size: 0, head: [] as Buffer[], headSize: 0 };
  async function* pass(source: AsyncIterable<Uint8Array>) {
    for await (const raw of source) {
      const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      state.size += chunk.length;
      if (state.size > options.maxBytes) throw new BlobLimitError(options.maxBytes);
      if (state.headSize < headBytes) {
        const part = chunk.subarray(0, headBytes - state.headSize);
        state.head.push(Buffer.from(part)); // a copy: the head must not pin the whole chunk
        state.headSize += part.length;
      }
      options.observe?.(chunk);
      yield chunk;
    }
  }
  return { pass, state, head: () => Buffer.concat(state.head) };
}

/** Where `guarded` records the failure of its source. */
export type SourceFailure = { error: unknown } | { error?: undefined };

/** Passes `input` on and ends normally when it fails, recording the failure in `failure`. */
export async function* guarded(input: AsyncIterable<Uint8Array>, failure: SourceFailure) {
  try {
    yield* input;
  } catch (error) {
    Object.assign(failure, { error });
  }
}
