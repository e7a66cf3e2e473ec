// One object made of (ranges of) others, server-side where S3 allows it: a single source of at most 5 GiB is one
// CopyObject; otherwise a multipart upload whose parts are copied (UploadPartCopy) from sources of at least S3's
// minimum part size, while runs of smaller sources are streamed through this process as one part each (a part must
// have at least 5 MiB, except the last). So a resumable upload whose chunks respect the minimum is assembled
// without its bytes passing through the instance.
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { cleanUpAfter, objectStoreCall } from './s3-errors.js';

/** S3's smallest part (but the last) of a multipart upload. */
const MIN_PART_BYTES = 5 * 1024 * 1024;
/** S3's largest part, and largest object CopyObject copies. */
const MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;
/** Parts copied at once. */
const COPY_CONCURRENCY = 4;

/** `size` bytes of object `name` from byte `start` on. */
export interface Piece {
  name: string;
  start: number;
  size: number;
}

type Part = { copy: Piece } | { stream: Piece[]; size: number };

/** Which parts make the object: large pieces are copied (split at 5 GiB), runs of small ones streamed together. */
function plan(pieces: Piece[]): Part[] {
  const parts: Part[] = [];
  let run: Piece[] = [];
  let runSize = 0;
  for (const piece of pieces) {
    if (piece.size === 0) continue;
    if (run.length === 0 && piece.size >= MIN_PART_BYTES) {
      // Equal shares of at most 5 GiB each, so that no share is below the minimum.
      const count = Math.ceil(piece.size / MAX_PART_BYTES);
      const share = Math.ceil(piece.size / count);
      for (let at = 0; at < piece.size; at += share)
        parts.push({ copy: { name: piece.name, start: piece.start + at, size: Math.min(share, piece.size - at) } });
      continue;
    }
    run.push(piece);
    runSize += piece.size;
    if (runSize >= MIN_PART_BYTES) {
      parts.push({ stream: run, size: runSize });
      run = [];
      runSize = 0;
    }
  }
  if (run.length > 0) parts.push({ stream: run, size: runSize });
  return parts;
}

const copySource = (bucket: string, name: string) => `${bucket}/${encodeURIComponent(name).replaceAll('%2F', '/')}`;

/** The bytes of `pieces`, one ranged GET after the other. */
function readPieces(client: S3Client, bucket: string, pieces: Piece[]): Readable {
  async function* read() {
    for (const p of pieces) {
      const out = await objectStoreCall('GetObject', () =>
        client.send(
          new GetObjectCommand({ Bucket: bucket, Key: p.name, Range: `bytes=${p.start}-${p.start + p.size - 1}` }),
        ),
      );
      for await (const chunk of out.Body as Readable) yield chunk as Buffer;
    }
  }
  return Readable.from(read(), { objectMode: false });
}

/** Makes object `target` hold the bytes of `pieces`, in order. */
export async function compose(client: S3Client, bucket: string, target: string, pieces: Piece[]): Promise<void> {
  const whole = pieces.filter((p) => p.size > 0);
  if (whole.length === 1 && whole[0]!.start === 0 && whole[0]!.size <= MAX_PART_BYTES) {
    await objectStoreCall('CopyObject', () =>
      client.send(
        new CopyObjectCommand({ Bucket: bucket, Key: target, CopySource: copySource(bucket, whole[0]!.name) }),
      ),
    );
    return;
  }
  const parts = plan(whole);
  const only = parts.length === 1 ? parts[0]! : null;
  if (parts.length === 0) {
    await objectStoreCall('PutObject', () =>
      client.send(new PutObjectCommand({ Bucket: bucket, Key: target, Body: Buffer.alloc(0) })),
    );
    return;
  }
  if (only && 'stream' in only) {
    await objectStoreCall('PutObject', () =>
      client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: target,
          Body: readPieces(client, bucket, only.stream),
          ContentLength: only.size,
        }),
      ),
    );
    return;
  }
  const created = await objectStoreCall('CreateMultipartUpload', () =>
    client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: target })),
  );
  const uploadId = created.UploadId!;
  try {
    const etags: string[] = new Array(parts.length);
    let next = 0;
    const worker = async () => {
      while (next < parts.length) {
        const index = next++;
        const upload = { Bucket: bucket, Key: target, UploadId: uploadId, PartNumber: index + 1 };
        etags[index] = await sendPart(client, upload, parts[index]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(COPY_CONCURRENCY, parts.length) }, worker));
    await objectStoreCall('CompleteMultipartUpload', () =>
      client.send(
        new CompleteMultipartUploadCommand({
          Bucket: bucket,
          Key: target,
          UploadId: uploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      ),
    );
  } catch (error) {
    await cleanUpAfter(error, () =>
      client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: target, UploadId: uploadId })),
    );
    throw error;
  }
}

/** Sends one part of a multipart upload: copied from a piece's object, or streamed from the pieces' bytes. */
async function sendPart(
  client: S3Client,
  upload: { Bucket: string; Key: string; UploadId: string; PartNumber: number },
  part: Part,
): Promise<string> {
  if ('copy' in part) {
    const { name, start, size } = part.copy;
    const out = await objectStoreCall('UploadPartCopy', () =>
      client.send(
        new UploadPartCopyCommand({
          ...upload,
          CopySource: copySource(upload.Bucket, name),
          CopySourceRange: `bytes=${start}-${start + size - 1}`,
        }),
      ),
    );
    return out.CopyPartResult?.ETag ?? '';
  }
  const out = await objectStoreCall('UploadPart', () =>
    client.send(
      new UploadPartCommand({
        ...upload,
        Body: readPieces(client, upload.Bucket, part.stream),
        ContentLength: part.size,
      }),
    ),
  );
  return out.ETag ?? '';
}
