// What a completion answers with is what the store holds: the upload's bytes are read back and hashed
// (docs/decisions/026-upload-generations.md). The committed part can be read while the completing request's own body
// still streams in behind it: under the request's lease nothing writes below the committed offset.
import { createHash } from 'node:crypto';
import type { BlobStore, UploadBlob } from '../../blob/blob-store.js';
import { SNIFF_BYTES } from '../files/mime-detect.js';

/** The bytes a completion read back: their SHA-256 and their leading bytes (content detection). */
export interface StoredBytes {
  sha256: Buffer;
  head: Buffer;
}

/** Reads an upload's stored bytes in order, in steps, hashing them. */
export class ReadBack {
  private readonly hash = createHash('sha256');
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private position = 0;
  private stopped = false;

  constructor(
    private readonly blobs: BlobStore,
    private readonly upload: UploadBlob,
  ) {}

  /**
   * Reads on from where it stopped up to byte `end` (exclusive). False when the store holds fewer bytes, or, with
   * `whole`, not exactly `end` of them.
   */
  async until(end: number, whole: boolean): Promise<boolean> {
    if (end <= this.position) return !whole || ((await this.blobs.uploadSize(this.upload)) ?? 0) === end;
    const blob = await this.blobs.openUpload(this.upload, { start: this.position, end: end - 1 });
    if (!blob || (whole ? blob.size !== end : blob.size < end)) {
      blob?.stream.destroy();
      return false;
    }
    for await (const chunk of blob.stream as AsyncIterable<Buffer>) {
      if (this.stopped) {
        blob.stream.destroy();
        return false;
      }
      this.hash.update(chunk);
      this.position += chunk.length;
      if (this.headBytes < SNIFF_BYTES) {
        const part = chunk.subarray(0, SNIFF_BYTES - this.headBytes);
        this.head.push(part);
        this.headBytes += part.length;
      }
    }
    return this.position === end;
  }

  /** Ends a read in progress at its next chunk: the completion failed. */
  stop(): void {
    this.stopped = true;
  }

  result(): StoredBytes {
    return { sha256: this.hash.digest(), head: Buffer.concat(this.head) };
  }
}
