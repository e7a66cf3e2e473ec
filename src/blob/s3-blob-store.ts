// The object-store blob store: file bytes as objects in one bucket of an S3-compatible store (path-style requests),
// under an optional prefix P, so that several instances on several machines share them:
//   P<key>/f-<tag>      the file of element <key> whose database tag (its SHA-256) is <tag>
//   P<key>/c-<offset>   a chunk of upload <key>, starting at byte <offset>: one object per append
//   P<key>/g-<gen>/c-<offset>  a chunk of generation <gen> of upload <key>, forked when a writer took it over
//   Ptmp/<random>       a direct upload on its way in, copied to its element's name once it is checked
// Objects cannot be renamed or appended to. A replacement therefore writes the new version beside the old one and the
// database's commit switches between them: a download asks for the version its row names, so it never gets bytes whose
// digest differs from the element's, and the old version stays readable until the commit. What a crash leaves behind
// (versions nothing names, chunks of no upload, temporary objects, unfinished multipart uploads) the sweep removes.
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { GetObjectCommand, type GetObjectCommandOutput, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import {
  type Appended,
  type AppendOptions,
  type BlobStore,
  type ByteRange,
  type CompletedUpload,
  checkKey,
  PartialAppendError,
  type Replacement,
  type ReplaceTags,
  type SweepPolicy,
  type SweepReport,
  type TempBlob,
  type UploadBlob,
  type WriteOptions,
} from './blob-store.js';
import { guarded, meter, type SourceFailure } from './meter.js';
import { isNotFound, S3Bucket } from './s3-bucket.js';
import { compose, type Piece } from './s3-compose.js';
import { cleanUpAfter, ObjectStoreError, objectStoreCall } from './s3-errors.js';
import { MAX_PARTS, PartBuffers, putStream } from './s3-put.js';
import { ObjectReader } from './s3-reader.js';
import { sweepBucket } from './s3-sweep.js';
import { quietAgents, storeRetries } from './s3-timeouts.js';

const TAG = /^[A-Za-z0-9]{1,128}$/;
/** Digits of a chunk's offset in its name: enough for the 5 TiB storage ceiling, and names sort by offset. */
const OFFSET_DIGITS = 15;
/**
 * Parts of the uploads this store streams, QUEUE of them sent at once while the next fills: S3's smallest part, since
 * an upload's memory is its parts and more of them in flight measured no faster (docs/decisions/025).
 */
export const PART_BYTES = 5 * 1024 * 1024;
export const QUEUE = 2;

/**
 * The part size for an object of at most `maxBytes`: PART_BYTES, or as many whole MiB as keep it within S3's
 * MAX_PARTS (so a file limit above about 48 GiB costs each upload larger buffers).
 */
export function partBytes(maxBytes: number): number {
  const MiB = 1024 * 1024;
  if (!Number.isFinite(maxBytes)) return PART_BYTES;
  return Math.max(PART_BYTES, Math.ceil(maxBytes / MAX_PARTS / MiB) * MiB);
}

export interface S3StoreOptions {
  /** null: the AWS endpoint of `region`. */
  endpoint: string | null;
  region: string;
  bucket: string;
  /** '' or a path ending in '/'. */
  prefix: string;
  /** Longest wait for a connection, and longest silence of a request, in milliseconds. */
  timeoutMs: number;
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

interface Chunk {
  name: string;
  start: number;
  size: number;
}

function checkTag(tag: string): string {
  if (!TAG.test(tag)) throw new Error(`invalid blob tag ${JSON.stringify(tag)}`);
  return tag;
}

/** The chunks that make the bytes of an upload: from offset 0 on, as long as each starts where the last ended. */
function contiguous(chunks: Chunk[]): { total: number; run: Chunk[] } {
  let total = 0;
  const run: Chunk[] = [];
  for (const chunk of chunks) {
    if (chunk.start !== total) break;
    run.push(chunk);
    total += chunk.size;
  }
  return { total, run };
}

export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  /** The client of the GetObject requests whose bodies a download streams (see the constructor). */
  private readonly downloads: S3Client;
  private readonly bucket: string;
  /** The bucket's objects as lists and removals (s3-bucket.ts). */
  private readonly objects: S3Bucket;
  private readonly prefix: string;
  private readonly endpoint: string;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix;
    this.endpoint = options.endpoint ?? `the AWS endpoint of ${options.region}`;
    const agent = { keepAlive: true, maxSockets: 256 };
    const common = {
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      region: options.region,
      credentials: options.credentials,
      forcePathStyle: true,
      // Checksums only where S3 requires them: with the SDK's default trailing checksums, S3-compatible stores
      // refuse streamed uploads (411 MissingContentLength); the SHA-256 of every file is checked here anyway.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      retryStrategy: storeRetries,
    } as const;
    // A request whose connection is silent for longer than the timeout fails, and is not sent again (s3-timeouts.ts:
    // the SDK's socketTimeout and retries let a silent store hold a request for several timeouts).
    this.client = new S3Client({ ...common, requestHandler: quietAgents(agent, options.timeoutMs) });
    // Downloads read bodies with a handler of their own (s3-reader.ts, docs/decisions/023). A body goes at the pace
    // of its reader, who may pause for longer than the store may be silent (a reader too slow is the HTTP layer's to
    // cut off): the handler times the store only while it waits for the store's bytes.
    this.downloads = new S3Client({ ...common, requestHandler: new ObjectReader(options.timeoutMs) });
    this.objects = new S3Bucket(this.client, this.bucket);
  }

  private fileName(key: string, tag: string): string {
    return `${this.prefix}${checkKey(key)}/f-${checkTag(tag)}`;
  }

  /** Where the chunks of an upload's generation are named. */
  private chunkBase(upload: UploadBlob): string {
    const generation = upload.generation === null ? '' : `g-${checkKey(upload.generation)}/`;
    return `${this.prefix}${checkKey(upload.key)}/${generation}c-`;
  }

  private chunkName(upload: UploadBlob, offset: number): string {
    return `${this.chunkBase(upload)}${String(offset).padStart(OFFSET_DIGITS, '0')}`;
  }

  readonly versioned = true;

  async verify(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
      const reason =
        e.$metadata?.httpStatusCode === 404
          ? 'it does not exist'
          : e.$metadata?.httpStatusCode === 403
            ? 'access is denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)'
            : `${e.name ?? 'error'}: ${(error as Error).message}`;
      throw new Error(`file.s3.bucket: the bucket "${this.bucket}" at ${this.endpoint} cannot be used: ${reason}`, {
        cause: error,
      });
    }
  }

  /**
   * Streams `source`, at most `maxBytes` long, into the object `name` (one PUT, or a multipart upload past one part).
   * A failure of the source itself is what this rejects with (a limit passed, a client that went away), not the
   * store's report of it.
   */
  private put(name: string, source: AsyncIterable<Uint8Array>, maxBytes: number): Promise<void> {
    // Buffers of its own for each upload, let go when it ends: an instance that took one upload an hour ago does not
    // keep its memory, and allocating them again costs nothing next to sending them.
    const buffers = new PartBuffers(partBytes(maxBytes), QUEUE + 1);
    return putStream({ client: this.client, bucket: this.bucket, key: name }, source, buffers, QUEUE);
  }

  async write(source: AsyncIterable<Uint8Array>, options: WriteOptions): Promise<TempBlob> {
    const temp = `${this.prefix}tmp/${randomBytes(16).toString('hex')}`;
    const hash = createHash('sha256');
    const m = meter({
      ...options,
      observe: (chunk) => {
        hash.update(chunk);
        options.observe?.(chunk);
      },
    });
    try {
      await this.put(temp, m.pass(source), options.maxBytes);
    } catch (error) {
      await cleanUpAfter(error, () => this.objects.removeLater([temp]));
      throw error;
    }
    return { temp, size: m.state.size, sha256: hash.digest(), head: m.head() };
  }

  async discard(temp: TempBlob): Promise<void> {
    await this.objects.removeLater([temp.temp]); // the request's outcome is decided; a leftover is the sweep's
  }

  async replace(key: string, next: TempBlob | CompletedUpload | null, tags: ReplaceTags): Promise<Replacement> {
    const previous = tags.previous === 'none' ? null : this.fileName(key, tags.previous);
    const target = next === null ? null : this.fileName(key, tags.next);
    // The same tag is the same SHA-256, so the same bytes: the version stays, whatever happens.
    const same = previous !== null && previous === target;
    if (next !== null) {
      const pieces: Piece[] =
        'temp' in next ? [{ name: next.temp, start: 0, size: next.size }] : await this.committed(next);
      await compose(this.client, this.bucket, target!, pieces);
    }
    return {
      finish: async () => {
        // Committed: the previous version and the chunks the file came from (of every generation of the upload)
        // are nobody's any more.
        const gone = previous !== null && !same ? [previous] : [];
        if (next !== null && !('temp' in next)) {
          const base = `${this.prefix}${checkKey(next.key)}/`;
          for await (const o of this.objects.list(base)) if (!o.name.startsWith(`${base}f-`)) gone.push(o.name);
        }
        await this.objects.removeLater(gone);
      },
      undo: async () => {
        // Nothing names the new version: it goes (or, should this fail, the sweep removes it).
        if (target !== null && !same) await this.objects.removeLater([target]);
      },
    };
  }

  /** The chunks that hold exactly the `size` committed bytes of an upload, as pieces to compose. */
  private async committed(upload: CompletedUpload): Promise<Piece[]> {
    const pieces: Piece[] = [];
    let total = 0;
    for (const chunk of contiguous(await this.chunks(upload)).run) {
      if (total === upload.size) break;
      pieces.push({ name: chunk.name, start: 0, size: chunk.size });
      total += chunk.size;
    }
    if (total !== upload.size)
      throw new Error(`upload ${upload.key} holds ${total} bytes in its chunks, its offset says ${upload.size}`);
    return pieces;
  }

  /** The chunk objects of an upload's generation, by offset. */
  private async chunks(upload: UploadBlob): Promise<Chunk[]> {
    const base = this.chunkBase(upload);
    const chunks: Chunk[] = [];
    for await (const o of this.objects.list(base)) {
      const digits = o.name.slice(base.length);
      if (/^\d+$/.test(digits)) chunks.push({ name: o.name, start: Number(digits), size: o.size });
    }
    return chunks.sort((a, b) => a.start - b.start);
  }

  async append(
    upload: UploadBlob,
    offset: number,
    source: AsyncIterable<Uint8Array>,
    options: AppendOptions,
  ): Promise<Appended> {
    const key = upload.key;
    const chunks = await this.chunks(upload);
    const { total, run } = contiguous(chunks);
    if (run.length === 0 && offset > 0) throw new Error(`blob ${key} is missing, expected ${offset} bytes`);
    if (total < offset) throw new Error(`blob ${key} holds ${total} bytes, expected at least ${offset}`);
    if (run.some((c) => c.start < offset && c.start + c.size > offset))
      throw new Error(`blob ${key} has no chunk boundary at ${offset}`);
    // Leftovers of an append whose offset was never committed (an instance that died after storing it).
    await this.objects.remove(chunks.filter((c) => c.start >= offset).map((c) => c.name));
    const name = this.chunkName(upload, offset);
    const m = meter(options);
    // With keepPartial, a failing source ends the stream as if it were complete, so the object holds all that
    // arrived; limits are checked after this guard, so passing one still fails the upload.
    const failure: SourceFailure = {};
    try {
      await this.put(name, m.pass(options.keepPartial ? guarded(source, failure) : source), options.maxBytes);
    } catch (error) {
      await cleanUpAfter(error, () => this.objects.removeLater([name]));
      throw error;
    }
    const size = m.state.size;
    if ('error' in failure) {
      if (size > 0) throw new PartialAppendError(offset + size, failure.error);
      await this.objects.remove([name]);
      throw failure.error;
    }
    if (size === 0) await this.objects.remove([name]); // an empty chunk adds nothing
    try {
      options.check?.(size);
    } catch (error) {
      await this.objects.remove([name]);
      throw error;
    }
    return { size, total: offset + size, head: m.head() };
  }

  async fork(from: UploadBlob, to: string, length: number): Promise<void> {
    if (length === 0) return; // the first append creates the first chunk
    // One chunk at offset 0 of the new generation, copied in the store from the committed chunks of the old one.
    await compose(
      this.client,
      this.bucket,
      this.chunkName({ key: from.key, generation: to }, 0),
      await this.committed({ ...from, size: length }),
    );
  }

  async open(key: string, range?: ByteRange, tag?: string): Promise<{ stream: Readable; size: number } | null> {
    if (tag !== undefined) return this.openFile(key, tag, range);
    return this.openUpload({ key, generation: null }, range);
  }

  async openUpload(upload: UploadBlob, range?: ByteRange): Promise<{ stream: Readable; size: number } | null> {
    const { total, run } = contiguous(await this.chunks(upload));
    if (run.length === 0) return null;
    const wanted = range ?? { start: 0, end: total - 1 };
    return { stream: Readable.from(this.readChunks(run, wanted), { objectMode: false }), size: total };
  }

  private async openFile(
    key: string,
    tag: string,
    range: ByteRange | undefined,
  ): Promise<{ stream: Readable; size: number } | null> {
    if (tag === 'none') return null;
    const name = this.fileName(key, tag);
    let out: GetObjectCommandOutput;
    try {
      out = await this.downloads.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: name,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
    } catch (error) {
      if (isNotFound(error)) return null;
      throw new ObjectStoreError('GetObject', error);
    }
    const size = range ? Number(/\/(\d+)$/.exec(out.ContentRange ?? '')?.[1] ?? Number.NaN) : (out.ContentLength ?? 0);
    return { stream: out.Body as Readable, size };
  }

  /** The bytes `range` of an upload's chunks, one ranged GET per chunk it touches. */
  private async *readChunks(run: Chunk[], range: ByteRange): AsyncGenerator<Buffer> {
    for (const chunk of run) {
      const end = chunk.start + chunk.size - 1;
      if (end < range.start || chunk.start > range.end || chunk.size === 0) continue;
      const from = Math.max(range.start, chunk.start) - chunk.start;
      const to = Math.min(range.end, end) - chunk.start;
      const out = await objectStoreCall('GetObject', () =>
        this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: chunk.name, Range: `bytes=${from}-${to}` })),
      );
      for await (const part of out.Body as Readable) yield part as Buffer;
    }
  }

  async uploadSize(upload: UploadBlob): Promise<number | null> {
    const { total, run } = contiguous(await this.chunks(upload));
    return run.length === 0 ? null : total;
  }

  async delete(key: string): Promise<void> {
    await this.objects.removeAll(`${this.prefix}${checkKey(key)}/`);
  }

  async dropGeneration(upload: UploadBlob): Promise<void> {
    // A late writer's multipart upload is aborted too: its next part fails, and it stops.
    await this.objects.removeAll(this.chunkBase(upload));
  }

  async deleteUpload(key: string): Promise<void> {
    await this.delete(key);
  }

  async sweep(policy: SweepPolicy): Promise<SweepReport> {
    return sweepBucket(this.objects, this.prefix, policy);
  }

  async settled(): Promise<void> {}
}
