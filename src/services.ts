// The composition root: builds every domain service from configuration, the database, the clock and the blob
// store, once, and hands them to the HTTP layer and the CLI.
import { join } from 'node:path';
import type { BlobFiles, BlobStore } from './blob/blob-store.js';
import { FsBlobStore } from './blob/fs-blob-store.js';
import type { Clock } from './clock.js';
import type { Config } from './config/schema.js';
import { Accounts } from './domain/accounts/accounts.js';
import { Collections } from './domain/elements/collections.js';
import { Elements } from './domain/elements/elements.js';
import { Files } from './domain/files/files.js';
import { Search } from './domain/search/pipeline.js';
import { Uploads } from './domain/uploads/uploads.js';
import { AccessDecisions } from './storage/access-decisions.js';
import type { Db } from './storage/db.js';

export interface Services {
  db: Db;
  clock: Clock;
  /** The backup copies files by path, so the store must also be BlobFiles for now. */
  blobs: BlobStore & BlobFiles;
  accounts: Accounts;
  elements: Elements;
  collections: Collections;
  files: Files;
  uploads: Uploads;
  search: Search;
}

export function createServices(config: Config, db: Db, clock: Clock): Services {
  const { settings, runtime } = config;
  const blobs = new FsBlobStore(join(runtime.dataDir, 'files'));
  const accounts = new Accounts(db, settings, clock, runtime.anonymousUserId);
  const decisions = new AccessDecisions({ sessionEpoch: db.sessionEpoch });
  const collections = new Collections(db, settings, decisions);
  const elements = new Elements(db, settings, clock, blobs, collections, decisions);
  const files = new Files(db, settings, clock, blobs, elements);
  const uploads = new Uploads(db, settings, clock, blobs, elements, files);
  const search = new Search(db, settings);
  return { db, clock, blobs, accounts, elements, collections, files, uploads, search };
}
