// The domain's account ports (domain/accounts/ports.ts) in SQL: the statements of queries/accounts.ts and
// queries/credential-failures.ts, with rows turned into the domain's shapes.
import type { AccountStore, CredentialFailureStore, RegistrationCountStore } from '../domain/accounts/ports.js';
import { storedElementId } from '../values.js';
import type { Queryable } from './db.js';
import * as sql from './queries/accounts.js';
import * as failures from './queries/credential-failures.js';
import { principalsById, principalsByText } from './queries/principals.js';
import { queryable } from './transactions.js';

export const sqlAccountStore: AccountStore = {
  resolveCaller: (tx, credentials, now) => sql.resolveCaller(queryable(tx), credentials, now),
  async userByIdentifier(tx, identifier) {
    const user = await sql.userByIdentifier(queryable(tx), identifier);
    return user && { id: storedElementId(user.id), passwordHash: user.password_hash };
  },
  userExists: (tx, id) => sql.userExists(queryable(tx), id),
  insertUser: (tx, id, identifier, passwordHash) => sql.insertUser(queryable(tx), id, identifier, passwordHash),
  replacePasswordHash: (tx, id, previous, passwordHash) =>
    sql.replacePasswordHash(queryable(tx), id, previous, passwordHash),
  revokeTokensOfUser: (tx, userId, now) => sql.revokeTokensOfUser(queryable(tx), userId, now),
  insertToken: (tx, token) => sql.insertToken(queryable(tx), token),
  deleteToken: (tx, id) => sql.deleteToken(queryable(tx), id),
  deleteExpiredTokens: (tx, before) => sql.deleteExpiredTokens(queryable(tx), before),
  async principals(tx, query, limit, userNames) {
    const rows =
      'identifier' in query
        ? await principalsByText(queryable(tx), query.identifier, limit, userNames)
        : await principalsById(queryable(tx), query.ids, userNames);
    return rows.map((row) => ({ id: storedElementId(row.id), type: row.type, name: row.name }));
  },
};

export function sqlCredentialFailureStore(db: Queryable): CredentialFailureStore {
  return {
    counters: async (keys, since) =>
      (await failures.failureCounters(db, keys, since)).map((c) => ({
        key: c.key,
        failures: c.failures,
        lastFailure: c.last_failure,
      })),
    record: (keys, now, since) => failures.recordFailure(db, keys, now, since),
    clear: (key) => failures.clearFailures(db, key),
    deleteOld: (before) => failures.deleteOldFailures(db, before),
  };
}

export function sqlRegistrationCountStore(db: Queryable): RegistrationCountStore {
  return {
    async count(key, now, windowStartedBefore) {
      const counted = await sql.countRegistration(db, key, now, windowStartedBefore);
      return { registrations: counted.registrations, windowStart: counted.window_start };
    },
    deleteOld: (before) => sql.deleteOldRegistrationCounts(db, before),
  };
}
