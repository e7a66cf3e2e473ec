// Where file bytes live, behind a small interface. The filesystem implementation keeps one file per element under
// DATA_DIR/files/<aa>/<id>; writes go to DATA_DIR/files/tmp first and are renamed into place.
import { mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

export interface BlobStore {
  /** Removes the bytes stored under `key` (no error when there are none). */
  delete(key: string): Promise<void>;
}

export class FsBlobStore implements BlobStore {
  readonly root: string;
  readonly tmpDir: string;

  constructor(root: string) {
    this.root = root;
    this.tmpDir = join(root, 'tmp');
    mkdirSync(this.tmpDir, { recursive: true });
  }

  pathOf(key: string): string {
    return join(this.root, key.slice(0, 2), key);
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }
}
