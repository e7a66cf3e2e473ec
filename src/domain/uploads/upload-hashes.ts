// The incremental SHA-256 of resumable uploads, kept in memory between appends: Node's crypto cannot export a hash
// state, so it cannot go into the database. Each hash is tagged with the offset it covers and used only while that is
// the upload's stored offset; otherwise (a restart, another instance took the previous append) the upload service
// recomputes it once from the stored bytes. One client talking to one instance has every byte hashed once.
import type { Hash } from 'node:crypto';

/** Enough for every upload a busy instance serves at once; a Hash holds a few hundred bytes. */
const DEFAULT_CAPACITY = 10_000;

export class UploadHashes {
  private readonly live = new Map<string, { hash: Hash; offset: number }>();

  constructor(private readonly capacity = DEFAULT_CAPACITY) {}

  /**
   * A copy of the hash of the first `offset` bytes of upload `id`, or null when this instance has none for that
   * offset. A copy, so that an append that fails leaves the kept state valid.
   */
  take(id: string, offset: number): Hash | null {
    const entry = this.live.get(id);
    return entry && entry.offset === offset ? entry.hash.copy() : null;
  }

  /** Remembers `hash` as the hash of the first `offset` bytes of upload `id`. */
  keep(id: string, hash: Hash, offset: number): void {
    this.live.delete(id); // re-insert: Map order is the eviction order, oldest first
    this.live.set(id, { hash, offset });
    for (const key of this.live.keys()) {
      if (this.live.size <= this.capacity) break;
      this.live.delete(key);
    }
  }

  /** The upload completed, was cancelled or expired, or its stored bytes changed in a way the hash did not see. */
  forget(id: string): void {
    this.live.delete(id);
  }

  get size(): number {
    return this.live.size;
  }
}
