// The composition root: builds every domain service from configuration, the database, the clock and the blob
// store, once, and hands them to the HTTP layer and the CLI.
import { join } from 'node:path';
import type { BlobStore } from './blob/blob-store.js';
import { FsBlobStore } from './blob/fs-blob-store.js';
import type { Clock } from './clock.js';
import type { Config } from './config/schema.js';
import { Accounts } from './domain/accounts/accounts.js';
import { Authentication } from './domain/accounts/authentication.js';
import { Capacity } from './domain/capacity.js';
import { Collections } from './domain/elements/collections.js';
import { Elements } from './domain/elements/elements.js';
import { Files } from './domain/files/files.js';
import { Search } from './domain/search/pipeline.js';
import { Uploads } from './domain/uploads/uploads.js';
import { AccessDecisions } from './storage/access-decisions.js';
import { sqlAccountStore, sqlCredentialFailureStore, sqlRegistrationCountStore } from './storage/account-store.js';
import type { Db } from './storage/db.js';
import { sqlElementStore } from './storage/element-store.js';
import { sqlFileStore } from './storage/file-store.js';
import { StatfsGauge, type WatchedFolder } from './storage/free-space.js';
import { embeddedDatabaseDir } from './storage/open.js';
import { sqlSearchEngine } from './storage/search/search-engine.js';
import { sqlTransactions } from './storage/transactions.js';
import { sqlUploadStore } from './storage/upload-store.js';

export interface Services {
  db: Db;
  clock: Clock;
  blobs: BlobStore;
  accounts: Accounts;
  elements: Elements;
  collections: Collections;
  files: Files;
  uploads: Uploads;
  search: Search;
  capacity: Capacity;
}

export async function createServices(config: Config, db: Db, clock: Clock): Promise<Services> {
  const { settings, runtime } = config;
  const blobs = await createBlobStore(config);
  const transactions = sqlTransactions(db);
  const decisions = new AccessDecisions({ sessionEpoch: db.sessionEpoch });
  const elementStore = sqlElementStore(decisions);
  const authentication = new Authentication(sqlAccountStore, transactions);
  const counters = { failures: sqlCredentialFailureStore(db), registrations: sqlRegistrationCountStore(db) };
  const accounts = new Accounts(
    transactions,
    sqlAccountStore,
    elementStore,
    authentication,
    counters,
    settings,
    clock,
    runtime.anonymousUserId,
  );
  const collections = new Collections(transactions, elementStore, authentication, settings);
  const elements = new Elements(transactions, elementStore, authentication, settings, clock, blobs, collections);
  const files = new Files(transactions, sqlFileStore, settings, clock, blobs, elements);
  const uploads = new Uploads(transactions, sqlUploadStore, settings, clock, blobs, elements, files);
  const search = new Search(transactions, sqlSearchEngine(), settings);
  const capacity = new Capacity(spaceGauge(config, db), settings.storage.minFreeSpaceInBytes);
  return { db, clock, blobs, accounts, elements, collections, files, uploads, search, capacity };
}

/**
 * The folders whose free space limits writes: the embedded database's and the disk file store's. A PostgreSQL
 * server's disk is the server's business, and an object store's space is not this machine's.
 */
function spaceGauge({ settings, runtime }: Config, db: Db): StatfsGauge | null {
  const folders: WatchedFolder[] = [];
  if (db.kind === 'pglite') folders.push({ path: embeddedDatabaseDir(runtime.dataDir), holdsFiles: false });
  if (settings.file.storage === 'disk') folders.push({ path: fileStoreDir(runtime.dataDir), holdsFiles: true });
  return folders.length > 0 ? new StatfsGauge(folders) : null;
}

const fileStoreDir = (dataDir: string) => join(dataDir, 'files');

/**
 * The blob store `file.storage` chooses. The object store's SDK is loaded only when it is chosen: it adds about half
 * a second to the start of every process, every CLI command included.
 */
export async function createBlobStore({ settings, runtime }: Config): Promise<BlobStore> {
  const { storage, s3 } = settings.file;
  if (storage === 'disk') return new FsBlobStore(fileStoreDir(runtime.dataDir));
  const { S3BlobStore } = await import('./blob/s3-blob-store.js');
  if (s3.bucket === null || runtime.s3Credentials === null)
    throw new Error("file.storage 's3' needs file.s3.bucket and AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY");
  return new S3BlobStore({
    endpoint: s3.endpoint,
    region: s3.region,
    bucket: s3.bucket,
    prefix: s3.prefix === '' ? '' : `${s3.prefix}/`,
    timeoutMs: s3.timeoutInSeconds * 1000,
    credentials: runtime.s3Credentials,
  });
}
