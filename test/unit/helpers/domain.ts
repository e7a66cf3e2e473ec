// The domain's element and account capabilities on their real SQL adapters, over a fresh in-memory PGlite and a
// disk file store in a temporary folder: the unit tier's way to test a domain module without HTTP.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlobStore } from '../../../src/blob/fs-blob-store.js';
import { ManualClock } from '../../../src/clock.js';
import { validateSettings } from '../../../src/config/load.js';
import { Accounts } from '../../../src/domain/accounts/accounts.js';
import { Authentication } from '../../../src/domain/accounts/authentication.js';
import type { Credentials } from '../../../src/domain/accounts/types.js';
import { Collections } from '../../../src/domain/elements/collections.js';
import { Elements } from '../../../src/domain/elements/elements.js';
import { AccessDecisions } from '../../../src/storage/access-decisions.js';
import {
  sqlAccountStore,
  sqlCredentialFailureStore,
  sqlRegistrationCountStore,
} from '../../../src/storage/account-store.js';
import type { Db } from '../../../src/storage/db.js';
import { sqlElementStore } from '../../../src/storage/element-store.js';
import { migrate } from '../../../src/storage/migrate.js';
import { pgliteDb } from '../../../src/storage/pglite.js';
import { sqlTransactions } from '../../../src/storage/transactions.js';
import { newPglite } from '../../helpers/pglite-template.js';

export interface DomainUnderTest {
  db: Db;
  clock: ManualClock;
  accounts: Accounts;
  elements: Elements;
  collections: Collections;
  /** A registered user and the credentials of a fresh token of theirs. */
  user(identifier: string): Promise<{ id: string; credentials: Credentials }>;
  close(): Promise<void>;
}

export async function domainOnPglite(
  settingsInput: Record<string, unknown> = {},
  anonymousUserId: string | null = null,
): Promise<DomainUnderTest> {
  const db = await pgliteDb(await newPglite('migrated'), true);
  await migrate(db);
  const folder = await mkdtemp(join(tmpdir(), 'trellis-unit-'));
  const settings = validateSettings(settingsInput);
  const clock = new ManualClock();
  const transactions = sqlTransactions(db);
  const store = sqlElementStore(new AccessDecisions({ sessionEpoch: db.sessionEpoch }));
  const authentication = new Authentication(sqlAccountStore, transactions);
  const counters = { failures: sqlCredentialFailureStore(db), registrations: sqlRegistrationCountStore(db) };
  const accounts = new Accounts(
    transactions,
    sqlAccountStore,
    store,
    authentication,
    counters,
    settings,
    clock,
    anonymousUserId,
  );
  const collections = new Collections(transactions, store, authentication, settings);
  const blobs = new FsBlobStore(join(folder, 'files'));
  const elements = new Elements(transactions, store, authentication, settings, clock, blobs, collections);
  return {
    db,
    clock,
    accounts,
    elements,
    collections,
    async user(identifier) {
      const password = 'correct horse battery staple';
      const id = await accounts.register({ type: 'User', uniqueUserIdentifier: identifier, password });
      const { token } = await accounts.createToken({ type: 'Token', uniqueUserIdentifier: identifier, password });
      return { id, credentials: accounts.credentials(`Bearer ${token}`) };
    },
    async close() {
      await db.close();
      await rm(folder, { recursive: true, force: true });
    },
  };
}
