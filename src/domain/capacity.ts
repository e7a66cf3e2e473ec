// Free disk space as a limit on writes, as Elasticsearch's flood-stage watermark is. Below
// `storage.minFreeSpaceInBytes` on a filesystem the instance writes to (the embedded database's folder, the disk file
// store's), every request that changes state is refused with 507 and reads go on, so that the disk never fills under
// the embedded database (PostgreSQL aborts when it cannot create a WAL segment) or under a file being stored. An upload
// body already streaming is stopped the same way (watch).
import { Problem } from '../errors.js';

/** One filesystem the instance writes to, as the gauge measured it. */
export interface Filesystem {
  /** A folder on it, for the log (never shown to clients). */
  readonly path: string;
  /** Bytes available to this process (what `df` shows as available). */
  readonly availableBytes: number;
  /** Whether upload bodies are stored here (the disk file store's folder). */
  readonly holdsFiles: boolean;
}

/** The port: measures each filesystem the instance writes to (storage/free-space.ts). */
export interface SpaceGauge {
  measure(): Promise<Filesystem[]>;
}

/** How old a measurement may be: one statfs per filesystem and second, whatever the request rate. */
const MEASURE_EVERY_MS = 1000;
/**
 * While the bytes of upload bodies let through since the last measurement may have brought a filesystem below the
 * threshold, it is measured again this often at most: a fast upload cannot write a second's worth past it.
 */
const REMEASURE_WHEN_LOW_MS = 100;

export class Capacity {
  private measured: Filesystem[] = [];
  private measuredAt = Number.NEGATIVE_INFINITY;
  private measuring: Promise<void> | null = null;
  /** Bytes of upload bodies let through since the last measurement: they count against the file store's filesystem. */
  private streamed = 0;
  /** The filesystem short of space at the last measurement, for the listeners. */
  private short: Filesystem | null = null;
  private readonly listeners: Array<(short: Filesystem | null) => void> = [];

  /** `gauge` null: nothing to watch (PostgreSQL and an object store); `minFreeBytes` 0 turns the check off. */
  constructor(
    private readonly gauge: SpaceGauge | null,
    readonly minFreeBytes: number,
  ) {}

  get enabled(): boolean {
    return this.gauge !== null && this.minFreeBytes > 0;
  }

  /** `listener` hears when writes start being refused (the filesystem short of space) and when they resume (null). */
  observe(listener: (short: Filesystem | null) => void): void {
    this.listeners.push(listener);
  }

  /** The filesystem short of space, or null; from a measurement at most a second old. */
  async shortOfSpace(): Promise<Filesystem | null> {
    if (!this.enabled) return null;
    if (this.stale()) await this.measure();
    return this.estimate();
  }

  /** Throws 507 `insufficient-storage` while a filesystem is short of space. */
  async assertWritable(): Promise<void> {
    if (await this.shortOfSpace()) throw new Problem('insufficient-storage');
  }

  /**
   * `body`, counted against the file store's free space as it streams, and stopped with a 507 once a filesystem is
   * short of space: the reader fails as it would for a body that breaks off. `stopped` is called first.
   */
  watch(body: AsyncIterable<Uint8Array>, stopped?: () => void): AsyncIterable<Uint8Array> {
    if (!this.enabled) return body;
    const capacity = this;
    return {
      async *[Symbol.asyncIterator]() {
        for await (const chunk of body) {
          capacity.streamed += chunk.byteLength;
          if ((capacity.stale() ? await capacity.shortOfSpace() : capacity.estimate()) !== null) {
            stopped?.();
            throw new Problem(
              'insufficient-storage',
              'The server ran short of disk space while the body arrived; it takes no writes until space is freed.',
            );
          }
          yield chunk;
        }
      },
    };
  }

  private stale(): boolean {
    const age = performance.now() - this.measuredAt;
    return age >= MEASURE_EVERY_MS || (age >= REMEASURE_WHEN_LOW_MS && this.estimate() !== null);
  }

  /** The first filesystem below the threshold, counting what was streamed into the file store since it was measured. */
  private estimate(): Filesystem | null {
    for (const fs of this.measured) {
      const available = fs.availableBytes - (fs.holdsFiles ? this.streamed : 0);
      if (available < this.minFreeBytes) return { ...fs, availableBytes: available };
    }
    return null;
  }

  /** One measurement at a time; callers that come meanwhile wait for it. */
  private measure(): Promise<void> {
    this.measuring ??= (async () => {
      try {
        const measured = await this.gauge!.measure();
        this.measured = measured;
        this.measuredAt = performance.now();
        this.streamed = 0;
        const short = this.estimate();
        if ((short === null) !== (this.short === null)) for (const listener of this.listeners) listener(short);
        this.short = short;
      } finally {
        this.measuring = null;
      }
    })();
    return this.measuring;
  }
}
