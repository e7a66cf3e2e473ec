// The bytes of a backup's file/ entry into the blob store: streamed to a temporary file while SHA-256 and length
// are computed, checked against the element's metadata, then renamed to the element's blob path. `syncPlaced` makes
// every copied blob durable before the load commits.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileTypeFromBuffer } from 'file-type';
import type { BlobFiles } from '../blob/blob-store.js';
import { syncPath } from '../blob/durable-sink.js';
import type { FileMeta } from '../domain/files/types.js';
import { BackupError } from './format.js';

/** A blob put in place by a load that has not committed yet (removed again if it does not). */
export interface Placed {
  final: string;
}

// file-type needs at most this many leading bytes to recognise a format.
const SNIFF_BYTES = 4100;

/**
 * Copies `source` (absolute; `name` is its path inside the backup, for messages) to the blob of element `id`.
 * Returns the metadata to store: the backup's, checked against the bytes, or one derived from the bytes when the
 * backup has none (extension from the file name, MIME type from the content).
 */
export async function copyIntoBlobStore(
  blobs: BlobFiles,
  source: string,
  name: string,
  id: string,
  given: FileMeta | undefined,
  placed: Placed[],
): Promise<FileMeta> {
  const final = blobs.pathOf(id);
  const temp = join(blobs.tmpDir, `backup-${randomBytes(12).toString('hex')}`);
  const hash = createHash('sha256');
  let size = 0;
  const head: Buffer[] = [];
  let headSize = 0;
  const observe = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      size += chunk.length;
      if (headSize < SNIFF_BYTES) {
        const part = chunk.subarray(0, SNIFF_BYTES - headSize);
        head.push(part);
        headSize += part.length;
      }
      callback(null, chunk);
    },
  });
  try {
    await pipeline(createReadStream(source), observe, createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
    const sha256 = hash.digest('hex');
    if (given && given.hash.sha256 !== null && given.hash.sha256 !== sha256)
      throw new BackupError(name, `SHA-256 ${sha256} does not match the metadata's ${given.hash.sha256}`);
    if (given && given.contentLength !== size)
      throw new BackupError(name, `holds ${size} bytes, the metadata says ${given.contentLength}`);
    await mkdir(dirname(final), { recursive: true });
    await rename(temp, final);
    placed.push({ final });
    if (given) return { ...given, hash: { sha256 } };
    const detected = size > 0 ? await fileTypeFromBuffer(Buffer.concat(head)) : undefined;
    return {
      contentLength: size,
      extension: extname(name).slice(1) || 'bin',
      mimeType: detected?.mime ?? 'application/octet-stream',
      hash: { sha256 },
    };
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * How many fsyncs run at once: concurrent ones share the file system's journal commits, several times faster for
 * small files than one after another (docs/decisions/015-write-behind.md).
 */
const SYNC_CONCURRENCY = 32;

/**
 * Makes the placed blobs durable, their bytes and then the directory entries their renames made, before the load
 * commits: an operating-system crash after the commit must not leave elements whose files never reached the disk
 * (the upload endpoints fsync before their commit for the same reason). Copying writes only to the page cache,
 * and syncing all files at the end lets their fsyncs overlap instead of stalling every copy in turn.
 */
export async function syncPlaced(placed: readonly Placed[]): Promise<void> {
  const dirs = new Set(placed.map((p) => dirname(p.final)));
  await eachConcurrently(
    placed.map((p) => p.final),
    syncPath,
  );
  await eachConcurrently([...dirs], syncPath);
}

async function eachConcurrently(paths: string[], work: (path: string) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < paths.length) await work(paths[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(SYNC_CONCURRENCY, paths.length) }, worker));
}
