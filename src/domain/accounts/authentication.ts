// Who a request acts for: credentials resolved to a caller, or 401. Every capability authenticates through this, so
// that "credentials first" is one rule.
import { Problem } from '../../errors.js';
import type { Transactions, Tx } from '../transactions.js';
import type { AccountStore } from './ports.js';
import type { Caller, Credentials } from './types.js';

/** The 401 for credentials that resolved to no user. */
export const unauthorized = (credentials: Credentials) =>
  new Problem(
    'unauthorized',
    credentials.tokenHash ? 'The token is unknown, expired or revoked.' : 'The anonymous user does not exist.',
  );

export class Authentication {
  constructor(
    private readonly store: Pick<AccountStore, 'resolveCaller'>,
    private readonly transactions: Transactions,
  ) {}

  /** The caller the credentials name (one indexed query), or 401; in `tx` when given. */
  async caller(credentials: Credentials, now: Date, tx: Tx = this.transactions.direct): Promise<Caller> {
    const caller = await this.store.resolveCaller(tx, credentials, now);
    if (!caller) throw unauthorized(credentials);
    return caller;
  }

  /**
   * For a request found invalid before the database was asked: bad credentials still answer 401 before the 400/404
   * that `problem` is, so only this error path pays a round trip for the order.
   */
  async failAfter(credentials: Credentials, now: Date, problem: unknown): Promise<never> {
    await this.caller(credentials, now);
    throw problem;
  }
}
