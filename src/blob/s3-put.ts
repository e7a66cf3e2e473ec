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
  const put = new PartedPut(target, buffers, inFlight);
  try {
    for await (const raw of source) await put.write(raw);
    await put.finish();
  } catch (error) {
    await put.abort(error);
    throw error;
  } finally {
    put.release();
  }
}

/** One object being written: a part filling, the parts in flight, and the multipart upload once there is one. */
class PartedPut {
  /** The buffer being filled; null once the last one is handed to a request. */
  private current: Buffer | null;
  private filled = 0;
  private uploadId: string | null = null;
  private readonly parts: CompletedPart[] = [];
  private numbered = 0;
  private readonly sending = new Set<Promise<void>>();
  private storeFailure: unknown = null;

  constructor(
    private readonly target: PutTarget,
    private readonly buffers: PartBuffers,
    private readonly inFlight: number,
  ) {
    this.current = buffers.take();
  }

  /** Copies `raw` into parts, sending each that fills. */
  async write(raw: Uint8Array): Promise<void> {
    const size = this.buffers.partBytes;
    let at = 0;
    while (at < raw.length) {
      const n = Math.min(raw.length - at, size - this.filled);
      this.current!.set(raw.subarray(at, at + n), this.filled);
      this.filled += n;
      at += n;
      if (this.filled === size) await this.flush();
    }
  }

  /** The source has ended: one PutObject when no part was sent yet, else the last part and the completion. */
  async finish(): Promise<void> {
    const { client, bucket, key } = this.target;
    if (this.uploadId === null) {
      const body = this.current!.subarray(0, this.filled);
      await objectStoreCall('PutObject', () =>
        client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: this.filled })),
      );
      return;
    }
    if (this.filled > 0) this.send(this.current!, this.filled);
    else this.buffers.give(this.current!);
    this.current = null;
    await Promise.all(this.sending);
    if (this.storeFailure !== null) throw this.storeFailure;
    this.parts.sort((a, b) => a.PartNumber! - b.PartNumber!);
    await objectStoreCall('CompleteMultipartUpload', () =>
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          UploadId: this.uploadId!,
          MultipartUpload: { Parts: this.parts },
        }),
      ),
    );
  }

  /** After a failure: waits for the parts in flight, then aborts the multipart upload, if one was begun. */
  async abort(error: unknown): Promise<void> {
    await Promise.all(this.sending);
    const id = this.uploadId;
    const { client, bucket, key } = this.target;
    if (id !== null)
      await cleanUpAfter(error, () =>
        client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id })),
      );
  }

  /** Gives back the buffer still being filled, if any. */
  release(): void {
    if (this.current !== null) this.buffers.give(this.current);
  }

  /** Sends the full part (beginning the multipart upload first), then waits while too many are in flight. */
  private async flush(): Promise<void> {
    if (this.uploadId === null) {
      const { client, bucket, key } = this.target;
      const created = await objectStoreCall('CreateMultipartUpload', () =>
        client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key })),
      );
      this.uploadId = created.UploadId ?? null;
      if (this.uploadId === null)
        throw new ObjectStoreError('CreateMultipartUpload', new Error('the store returned no upload id'));
    }
    this.send(this.current!, this.filled);
    this.current = this.buffers.take();
    this.filled = 0;
    while (this.sending.size >= this.inFlight && this.storeFailure === null) await Promise.race(this.sending);
    if (this.storeFailure !== null) throw this.storeFailure;
  }

  private send(buffer: Buffer, length: number): void {
    const { client, bucket, key } = this.target;
    const partNumber = ++this.numbered;
    if (partNumber > MAX_PARTS)
      throw new ObjectStoreError(
        'UploadPart',
        new Error(`more than ${MAX_PARTS} parts of ${this.buffers.partBytes} bytes`),
      );
    const uploadId = this.uploadId!;
    const sent = objectStoreCall('UploadPart', () =>
      client.send(
        new UploadPartCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber: partNumber,
          Body: buffer.subarray(0, length),
          ContentLength: length,
        }),
      ),
    ).then(
      (out) => {
        this.parts.push({ ETag: out.ETag ?? '', PartNumber: partNumber });
      },
      (error) => {
        this.storeFailure ??= error;
      },
    );
    // The buffer goes back only when the request is over: the SDK may still be writing it (or retrying) before.
    const tracked = sent.finally(() => {
      this.sending.delete(tracked);
      this.buffers.give(buffer);
    });
    this.sending.add(tracked);
  }
}
