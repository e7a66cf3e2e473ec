// The objects of the S3 store's bucket as the store lists and removes them (s3-blob-store.ts, s3-sweep.ts).
import {
  AbortMultipartUploadCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { ObjectStoreError, objectStoreCall } from './s3-errors.js';

export const isNotFound = (error: unknown) => {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
};

export class S3Bucket {
  constructor(
    private readonly client: S3Client,
    private readonly name: string,
  ) {}

  /** Lists the objects under `prefix` (all pages). */
  async *list(prefix: string): AsyncGenerator<{ name: string; size: number; modified: Date | undefined }> {
    let token: string | undefined;
    do {
      const page = await objectStoreCall('ListObjectsV2', () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.name, Prefix: prefix, ContinuationToken: token })),
      );
      for (const o of page.Contents ?? [])
        if (o.Key !== undefined) yield { name: o.Key, size: o.Size ?? 0, modified: o.LastModified };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Multipart uploads under `prefix` that were started and neither completed nor aborted. */
  async *unfinished(prefix: string): AsyncGenerator<{ name: string; uploadId: string; initiated?: Date }> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await objectStoreCall('ListMultipartUploads', () =>
        this.client.send(
          new ListMultipartUploadsCommand({
            Bucket: this.name,
            Prefix: prefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        ),
      );
      for (const u of page.Uploads ?? [])
        if (u.Key !== undefined && u.UploadId !== undefined)
          yield { name: u.Key, uploadId: u.UploadId, ...(u.Initiated ? { initiated: u.Initiated } : {}) };
      if (!page.IsTruncated) return;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }

  /** Aborts a multipart upload; one already gone (completed, or aborted by another instance's sweep) is done. */
  async abortUpload(name: string, uploadId: string): Promise<void> {
    try {
      await objectStoreCall('AbortMultipartUpload', () =>
        this.client.send(new AbortMultipartUploadCommand({ Bucket: this.name, Key: name, UploadId: uploadId })),
      );
    } catch (error) {
      if (!(error instanceof ObjectStoreError && isNotFound(error.cause))) throw error;
    }
  }

  /** Removes objects by name (no error for missing ones). */
  async remove(names: string[]): Promise<void> {
    for (let i = 0; i < names.length; i += 1000) {
      const batch = names.slice(i, i + 1000);
      const out = await objectStoreCall('DeleteObjects', () =>
        this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.name,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
        ),
      );
      const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0)
        throw new ObjectStoreError(
          'DeleteObjects',
          new Error(`${failed.length} objects not deleted: ${failed[0]!.Code}`),
        );
    }
  }

  /** `remove` whose failure is left to the sweep: the objects are unreferenced already. */
  async removeLater(names: string[]): Promise<void> {
    await this.remove(names).catch(() => {});
  }

  /** Removes every object under `prefix`, and the multipart uploads on their way there. */
  async removeAll(prefix: string): Promise<void> {
    for await (const u of this.unfinished(prefix)) await this.abortUpload(u.name, u.uploadId);
    const names: string[] = [];
    for await (const o of this.list(prefix)) names.push(o.name);
    await this.remove(names);
  }
}
