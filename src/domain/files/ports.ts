// What element files need from the database, in the domain's own terms; storage/file-store.ts implements it in SQL.
import type { ElementId } from '../../values.js';
import type { Tx } from '../transactions.js';
import type { FileMeta } from './types.js';

export interface FileStore {
  /**
   * Locks the element against writers (shared) until `tx` ends. Writers move file bytes while holding the element's
   * exclusive lock, so under this one the metadata read next and the bytes opened next belong together.
   */
  lockForDownload(tx: Tx, id: ElementId): Promise<void>;
  /** Records the element's file metadata (null: it has no file any more) and `at` as its update time. */
  setFile(tx: Tx, id: ElementId, file: FileMeta | null, at: Date): Promise<void>;
  /** Of `ids`, those whose blob is referenced: an element that has a file, or an upload. */
  referencedBlobKeys(tx: Tx, ids: readonly ElementId[]): Promise<Set<string>>;
  /** Of `ids`, the elements that have a file, with its SHA-256 (null for a file stored without one). */
  fileTags(tx: Tx, ids: readonly ElementId[]): Promise<Map<string, string | null>>;
  /**
   * Takes the element's exclusive lock (waiting for a writer that holds it) and returns its file's SHA-256, or
   * undefined when the element or its file is gone.
   */
  lockFileForSweep(tx: Tx, id: ElementId): Promise<{ sha256: string | null } | undefined>;
}
