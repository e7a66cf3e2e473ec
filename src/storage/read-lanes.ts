// Short reads on a PostgreSQL server through pipelined connections (pg's pipeline mode): a statement is written as
// soon as it is asked for, behind the ones still running on the same connection, instead of waiting for a pooled
// connection to come back. Each statement ends with its own Sync, so it is its own implicit transaction and an
// error in one does not touch the others.
//
// Why: through the pool, GET /<id>'s one short statement was bound by round trips rather than by any process's CPU
// (docs/decisions/003-read-lanes.md).
//
// Only short reads belong here: a statement that reads a bounded number of rows by index and takes no locks. A
// connection answers in order, so a slow statement would hold up every statement written behind it; searches,
// pages and writes stay on the pool.
import pg from 'pg';

/**
 * How long a short read may run before PostgreSQL cancels it (the lanes' `statement_timeout`; the pool has none). A
 * short read takes well under a millisecond; one that runs for seconds (waiting on a table lock a migration or a
 * restore holds, say) would hold up every read written behind it on its connection, so it fails instead.
 */
export const SHORT_READ_TIMEOUT_MS = 10_000;

/** Pipelined connections for `cores` cores: one per two (docs/decisions/003-read-lanes.md). */
export const defaultReadLanes = (cores: number): number => Math.max(1, Math.floor(cores / 2));

export class ReadLanes {
  private readonly lanes: (pg.Client | undefined)[];
  private next = 0;
  private closed = false;

  /**
   * `config`: the pool's connection settings (storage/postgres.ts poolOptions); `count` connections, opened on first
   * use; `timeoutMs`: the statement timeout of every one of them.
   */
  constructor(
    private readonly config: pg.ClientConfig,
    count: number,
    private readonly timeoutMs = SHORT_READ_TIMEOUT_MS,
  ) {
    this.lanes = new Array<pg.Client | undefined>(Math.max(1, count)).fill(undefined);
  }

  /** The connection the next short read goes to (round robin); a broken or closed one is replaced. */
  connection(): pg.Client {
    if (this.closed) throw new Error('The database connections are closed.');
    const lane = this.next;
    this.next = (lane + 1) % this.lanes.length;
    return this.lanes[lane] ?? this.open(lane);
  }

  private open(lane: number): pg.Client {
    const options = `${this.config.options ?? ''} -c statement_timeout=${this.timeoutMs}`.trim();
    const client = new pg.Client({ ...this.config, options, pipeline: true } as pg.ClientConfig);
    const drop = () => {
      if (this.lanes[lane] === client) this.lanes[lane] = undefined;
    };
    // A connection that breaks fails the statements written to it (pg errors every one of them) and is replaced at
    // the next read; it must not crash the process.
    client.on('error', () => {
      drop();
      client.end().catch(() => {});
    });
    client.on('end', drop);
    // Statements asked for while it connects wait in pg's queue; a failed connect fails them.
    client.connect().catch(drop);
    this.lanes[lane] = client;
    return client;
  }

  async close(): Promise<void> {
    this.closed = true;
    const open = this.lanes.filter((c): c is pg.Client => c !== undefined);
    this.lanes.fill(undefined);
    await Promise.all(open.map((c) => c.end().catch(() => {})));
  }
}
