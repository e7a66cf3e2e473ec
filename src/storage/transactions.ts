// The domain's Transactions port (domain/transactions.ts) on a Db: a Tx is the Queryable of a transaction, or the Db.
import type { StoreFailure, Transactions, Tx } from '../domain/transactions.js';
import { type Db, isForeignKeyViolation, type Queryable, retryingTransient } from './db.js';

const QUERY_CANCELED = '57014';
const STATEMENT_TOO_COMPLEX = '54001';
const UNIQUE_VIOLATION = '23505';

/** The Queryable behind a Tx this module handed out. For the storage adapters that implement the ports. */
export const queryable = (tx: Tx): Queryable => tx as unknown as Queryable;
const asTx = (q: Queryable): Tx => q as unknown as Tx;

export function sqlTransactions(db: Db): Transactions {
  return {
    embedded: db.kind === 'pglite',
    direct: asTx(db),
    transaction: (work, options) => db.transaction((q) => work(asTx(q)), options),
    retryingTransient: (work) => retryingTransient(work),
    failureOf(error: unknown): StoreFailure | null {
      const code = (error as { code?: string })?.code;
      if (code === QUERY_CANCELED) return 'statement-cancelled';
      if (code === STATEMENT_TOO_COMPLEX) return 'too-complex';
      if (code === UNIQUE_VIOLATION) return 'duplicate';
      if (isForeignKeyViolation(error)) return 'missing-reference';
      return null;
    },
  };
}
