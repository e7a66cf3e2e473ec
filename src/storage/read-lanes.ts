// Short reads on a PostgreSQL server through pipelined connections: a statement is written at once behind those still
// running, each with its own Sync, so it is its own transaction and fails alone (docs/architecture.md, "Read lanes").
// Only short reads belong here (a bounded number of rows by index, no locks): a connection answers in order, so a
// slow statement would hold up every statement behind it.
import pg from 'pg';
import { ANSWER_GRACE_MS } from './answer-grace.js';

/**
 * How long a short read may run before PostgreSQL cancels it (the lanes' `statement_timeout`; the pool has none). A
 * short read takes well under a millisecond; one that runs for seconds (waiting on a table lock a migration or a
 * restore holds, say) would hold up every read written behind it on its connection, so it fails instead. With the
 * answer's grace it stays within the default connect bound (database.connectTimeoutInSeconds): a read written
 * behind one a frozen server never answers waits no longer than a request that waits for a connection
 * (docs/decisions/032-statement-bounds.md).
 */
export const SHORT_READ_TIMEOUT_MS = 3_000;

/** Pipelined connections for `cores` cores: one per two (docs/decisions/003-read-lanes.md). */
export const defaultReadLanes = (cores: number): number => Math.max(1, Math.floor(cores / 2));

export class ReadLanes {
  private readonly lanes: (pg.Client | undefined)[];
  private next = 0;
  private closed = false;

  /**
   * `config`: the pool's connection settings (storage/postgres.ts poolOptions); `count` connections, opened on first
   * use; `timeoutMs`: the statement timeout of every one of them. A statement not answered ANSWER_GRACE_MS after it
   * (a server that does not answer at all) fails, and so does every statement behind it on its connection, which is
   * closed and replaced: the answers it waits for may never come.
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
    const client = new pg.Client({
      ...this.config,
      options,
      query_timeout: this.timeoutMs + ANSWER_GRACE_MS,
      pipeline: true,
    } as pg.ClientConfig);
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
