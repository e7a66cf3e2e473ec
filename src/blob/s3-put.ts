// A byte stream of unknown length into one object: one PutObject when it fits in one part, else a multipart upload
// with a few parts in flight. Parts are gathered in buffers each used again once its part is stored, so an upload of
// any size costs the process the same few buffers; lib-storage's `Upload` concatenates every part into a fresh
// buffer instead, garbage the collector frees late (docs/decisions/025).
import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { cleanUpAfter, ObjectStoreError, objectStoreCall } from './s3-errors.js';

/** S3's most parts in one multipart upload (the caller sizes parts to stay within it). */
export const MAX_PARTS = 10_000;

/** Buffers of one part size, handed out and taken back; at most `keep` idle ones stay allocated. */
export class PartBuffers {
  private readonly idle: Buffer[] = [];
  /** Buffers allocated so far. */
  allocated = 0;

  constructor(
    readonly partBytes: number,
    private readonly keep: number,
  ) {}

  take(): Buffer {
    // Not zeroed: only the bytes a part is filled with are ever sent.
    const idle = this.idle.pop();
    if (idle) return idle;
    this.allocated++;
    return Buffer.allocUnsafeSlow(this.partBytes);
  }

  give(buffer: Buffer): void {
    if (this.idle.length < this.keep) this.idle.push(buffer);
  }
}

export interface PutTarget {
  client: S3Client;
  bucket: string;
  key: string;
}

/**
 * Streams `source` into the object `target.key`, with at most `inFlight` parts being sent while the next one fills.
 * Resolves once the object exists whole. A failure of the source rejects with the source's own error, one of the
 * store with an ObjectStoreError; either way nothing is left behind but, should the abort itself fail, an unfinished
 * multipart upload for the sweep.
 */
export async function putStream(
  target: PutTarget,
  source: AsyncIterable<Uint8Array>,
  buffers: PartBuffers,
  inFlight: number,
): Promise<void> {
  const { client, bucket, key } = target;
  const size = buffers.partBytes;
  /** The buffer being filled; null once the last one is handed to a request. */
  let current: Buffer | null = buffers.take();
  let filled = 0;
  let uploadId: string | null = null;
  const parts: CompletedPart[] = [];
  let numbered = 0;
  const sending = new Set<Promise<void>>();
  let storeFailure: unknown = null;

  const send = (buffer: Buffer, length: number) => {
    const partNumber = ++numbered;
    if (partNumber > MAX_PARTS)
      throw new ObjectStoreError('UploadPart', new Error(`more than ${MAX_PARTS} parts of ${size} bytes`));
    const sent = objectStoreCall('UploadPart', () =>
      client.send(
        new UploadPartCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId!,
          PartNumber: partNumber,
          Body: buffer.subarray(0, length),
          ContentLength: length,
        }),
      ),
    ).then(
      (out) => {
        parts.push({ ETag: out.ETag ?? '', PartNumber: partNumber });
      },
      (error) => {
        storeFailure ??= error;
      },
    );
    // The buffer goes back only when the request is over: the SDK may still be writing it (or retrying) before.
    const tracked = sent.finally(() => {
      sending.delete(tracked);
      buffers.give(buffer);
    });
    sending.add(tracked);
  };

  const flush = async () => {
    if (uploadId === null) {
      const created = await objectStoreCall('CreateMultipartUpload', () =>
        client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key })),
      );
      uploadId = created.UploadId ?? null;
      if (uploadId === null)
        throw new ObjectStoreError('CreateMultipartUpload', new Error('the store returned no upload id'));
    }
    send(current!, filled);
    current = buffers.take();
    filled = 0;
    while (sending.size >= inFlight && storeFailure === null) await Promise.race(sending);
    if (storeFailure !== null) throw storeFailure;
  };

  try {
    for await (const raw of source) {
      let at = 0;
      while (at < raw.length) {
        const n = Math.min(raw.length - at, size - filled);
        current!.set(raw.subarray(at, at + n), filled);
        filled += n;
        at += n;
        if (filled === size) await flush();
      }
    }
    if (uploadId === null) {
      await objectStoreCall('PutObject', () =>
        client.send(
          new PutObjectCommand({ Bucket: bucket, Key: key, Body: current!.subarray(0, filled), ContentLength: filled }),
        ),
      );
      return;
    }
    if (filled > 0) send(current!, filled);
    else buffers.give(current!);
    current = null;
    await Promise.all(sending);
    if (storeFailure !== null) throw storeFailure;
    parts.sort((a, b) => a.PartNumber! - b.PartNumber!);
    await objectStoreCall('CompleteMultipartUpload', () =>
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId!,
          MultipartUpload: { Parts: parts },
        }),
      ),
    );
  } catch (error) {
    await Promise.all(sending);
    const id = uploadId;
    if (id !== null)
      await cleanUpAfter(error, () =>
        client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id })),
      );
    throw error;
  } finally {
    if (current !== null) buffers.give(current);
  }
}
