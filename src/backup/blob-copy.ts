// The bytes of a backup's file/ entry into the blob store, through the store's own interface (so a load fills the
// disk store and an object store alike): streamed into a temporary blob while SHA-256 and length are computed,
// checked against the element's metadata, then placed under the element's id. The placements are settled once the
// load's transaction has ended: kept when it committed, removed when it did not.
import { createReadStream } from 'node:fs';
import { extname } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import { BlobLimitError, type BlobStore, type Replacement } from '../blob/blob-store.js';
import { blobTag } from '../domain/files/files.js';
import type { FileMeta } from '../domain/files/types.js';
import type { BackupFolder } from './folder.js';
import { BackupError } from './format.js';

// file-type needs at most this many leading bytes to recognise a format.
const SNIFF_BYTES = 4100;

/**
 * Copies the file `name` of the backup `folder` (a regular file inside it, or a BackupError) to the blob of element
 * `id`, a new element. Returns the metadata to store: the backup's, checked against the bytes, or one derived from
 * the bytes when the backup has none (extension from the file name, MIME type from the content). The placement is
 * added to `placed`, to be settled with `settlePlaced`.
 */
export async function copyIntoBlobStore(
  blobs: BlobStore,
  folder: BackupFolder,
  name: string,
  id: string,
  given: FileMeta | undefined,
  placed: Replacement[],
): Promise<FileMeta> {
  // The file's size is the limit: an object store sizes its parts by it.
  const { fd, size } = folder.open(name);
  const source = createReadStream('', { fd });
  const temp = await blobs
    .write(source, { maxBytes: size, headBytes: SNIFF_BYTES })
    .catch((error: unknown) => {
      throw error instanceof BlobLimitError ? new BackupError(name, 'grew while it was being read') : error;
    })
    .finally(() => source.destroy()); // closes the descriptor also when the store stopped reading early
  try {
    const sha256 = temp.sha256.toString('hex');
    if (given && given.hash.sha256 !== null && given.hash.sha256 !== sha256)
      throw new BackupError(name, `SHA-256 ${sha256} does not match the metadata's ${given.hash.sha256}`);
    if (given && given.contentLength !== temp.size)
      throw new BackupError(name, `holds ${temp.size} bytes, the metadata says ${given.contentLength}`);
    const detected = temp.size > 0 && !given ? await fileTypeFromBuffer(temp.head) : undefined;
    const meta: FileMeta = given
      ? { ...given, hash: { sha256 } }
      : {
          contentLength: temp.size,
          extension: extname(name).slice(1) || 'bin',
          mimeType: detected?.mime ?? 'application/octet-stream',
          hash: { sha256 },
        };
    placed.push(await blobs.replace(id, temp, { previous: blobTag(null), next: blobTag(meta) }));
    return meta;
  } finally {
    await blobs.discard(temp); // once placed, there is nothing left to discard on disk; the object store's copy stays
  }
}

/** Settles the placements of a load: `committed` keeps them, otherwise they are removed. */
export async function settlePlaced(placed: readonly Replacement[], committed: boolean): Promise<void> {
  for (const p of placed) await (committed ? p.finish() : p.undo());
}
