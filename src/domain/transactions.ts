// The port through which every domain capability runs its storage work, and decides where a transaction begins and
// ends. A `Tx` is opaque here: only the adapter that handed it out (storage/transactions.ts) reads it, so the domain
// never sees SQL, a connection or a driver's error codes.

declare const txBrand: unique symbol;
/** A transaction, or the store outside one (`Transactions.direct`). Pass it to the ports' methods. */
export interface Tx {
  readonly [txBrand]: true;
}

/** What a store's error means to the domain; anything else is the service's own failure. */
export type StoreFailure =
  /** A statement ran past its time budget and was cancelled; the transaction rolled back. */
  | 'statement-cancelled'
  /** A row the statement refers to is gone (deleted concurrently). */
  | 'missing-reference'
  /** The statement nests deeper than the database can run. */
  | 'too-complex'
  /** A unique key is taken (an identifier in use). */
  | 'duplicate';

export interface Transactions {
  /** The embedded database, which runs one statement at a time for the whole process. */
  readonly embedded: boolean;
  /** The store outside any transaction: each statement commits on its own; short reads may share a connection. */
  readonly direct: Tx;
  /**
   * Runs `work` in one transaction: it commits when `work` resolves and rolls back when it throws. A
   * `statementTimeoutMs` cancels any of its statements that runs longer ('statement-cancelled'); 0 lifts the bound.
   */
  transaction<T>(work: (tx: Tx) => Promise<T>, options?: { statementTimeoutMs?: number }): Promise<T>;
  /**
   * Runs `work` again when the database aborted it as a deadlock victim or a serialization failure. `work` must have
   * no effects outside the database before it resolves.
   */
  retryingTransient<T>(work: () => Promise<T>): Promise<T>;
  /** What `error`, thrown by a port's method, means to the domain, or null for a failure of the service itself. */
  failureOf(error: unknown): StoreFailure | null;
}
