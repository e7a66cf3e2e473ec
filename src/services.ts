// The composition root: builds every domain service from configuration, the database, the clock and the blob
// store, once, and hands them to the HTTP layer and the CLI.
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from './blob/blob-store.js';
import { FsBlobStore } from './blob/fs-blob-store.js';
import type { Clock } from './clock.js';
import type { Config } from './config/schema.js';
import { Accounts } from './domain/accounts/accounts.js';
import { Authentication } from './domain/accounts/authentication.js';
import { Principals } from './domain/accounts/principals.js';
import { Capacity } from './domain/capacity.js';
import { Collections } from './domain/elements/collections.js';
import { Elements } from './domain/elements/elements.js';
import { Feed } from './domain/events/feed.js';
import { Files } from './domain/files/files.js';
import { SearchAdmission } from './domain/search/admission.js';
import { Search, searchAdmissionLimits } from './domain/search/pipeline.js';
import { Uploads } from './domain/uploads/uploads.js';
import { Dispatcher } from './domain/webhooks/dispatcher.js';
import { SecretBox } from './domain/webhooks/secrets.js';
import { Webhooks } from './domain/webhooks/webhooks.js';
import { Readiness } from './health/readiness.js';
import { CountedAccessDecisions } from './metrics/access-decisions.js';
import { measuredBlobStore } from './metrics/blob-store.js';
import { measuredDb } from './metrics/database.js';
import { PromMetrics } from './metrics/registry.js';
import { webhookMetrics } from './metrics/webhooks.js';
import { AddressPolicy } from './outbound/address-policy.js';
import { HttpSender } from './outbound/http-sender.js';
import { webhookKeyFrom } from './outbound/webhook-key.js';
import { AccessDecisions } from './storage/access-decisions.js';
import { sqlAccountStore, sqlCredentialFailureStore, sqlRegistrationCountStore } from './storage/account-store.js';
import type { Db } from './storage/db.js';
import { sqlElementStore } from './storage/element-store.js';
import { sqlEventLog } from './storage/event-log.js';
import { sqlFileStore } from './storage/file-store.js';
import { StatfsGauge, type WatchedFolder } from './storage/free-space.js';
import { embeddedDatabaseDir } from './storage/open.js';
import { defaultPoolSize } from './storage/postgres.js';
import { EVENTS_CHANNEL } from './storage/schema/events.js';
import { checkSchemaCurrent } from './storage/schema-state.js';
import { sqlSearchEngine } from './storage/search/search-engine.js';
import { sqlTransactions } from './storage/transactions.js';
import { sqlUploadStore } from './storage/upload-store.js';
import { sqlWebhookStore } from './storage/webhook-store.js';
import type { Tracing } from './tracing/port.js';
import { tracedBlobStore, tracedDb } from './tracing/wrappers.js';

export interface Services {
  db: Db;
  clock: Clock;
  blobs: BlobStore;
  accounts: Accounts;
  principals: Principals;
  elements: Elements;
  collections: Collections;
  files: Files;
  uploads: Uploads;
  search: Search;
  /** The change feed (GET /events); it starts listening with its first subscription. */
  events: Feed;
  /** The webhooks API; its dispatcher delivers once the server starts it (server.ts). */
  webhooks: Webhooks;
  dispatcher: Dispatcher;
  capacity: Capacity;
  readiness: Readiness;
  /** The Prometheus metrics (metrics.enabled), which server.ts serves on their own listener; null when off. */
  metrics: PromMetrics | null;
  /** Spans over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT); null when not configured. */
  tracing: Tracing | null;
}

export async function createServices(config: Config, givenDb: Db, clock: Clock): Promise<Services> {
  const { settings, runtime } = config;
  // With metrics on, the database and the blob store are wrapped to time every statement and call (src/metrics).
  // With an OTLP endpoint, they are wrapped again to trace them; the SDK is loaded only then.
  const metrics = settings.metrics.enabled ? new PromMetrics() : null;
  const tracing = runtime.otlpTracesUrl
    ? (await import('./tracing/tracing.js')).startTracing(runtime.otlpTracesUrl)
    : null;
  const measured = metrics ? measuredDb(givenDb, metrics) : givenDb;
  const db = tracing ? tracedDb(measured, tracing) : measured;
  const store = await createBlobStore(config);
  const measuredStore = metrics ? measuredBlobStore(store, settings.file.storage, metrics) : store;
  const blobs = tracing ? tracedBlobStore(measuredStore, settings.file.storage, tracing) : measuredStore;
  const transactions = sqlTransactions(db);
  const decisions = metrics
    ? new CountedAccessDecisions({ sessionEpoch: db.sessionEpoch }, metrics)
    : new AccessDecisions({ sessionEpoch: db.sessionEpoch });
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
  const principals = new Principals(transactions, sqlAccountStore, authentication, settings, clock);
  const collections = new Collections(transactions, elementStore, authentication, settings);
  const elements = new Elements(transactions, elementStore, authentication, settings, clock, blobs, collections);
  const files = new Files(transactions, sqlFileStore, settings, clock, blobs, elements);
  const uploads = new Uploads(transactions, sqlUploadStore, settings, clock, blobs, elements, files);
  const { poolSize } = settings.database;
  const connections = db.kind === 'pglite' ? 1 : poolSize === 'auto' ? defaultPoolSize() : poolSize;
  const admission = new SearchAdmission(searchAdmissionLimits(settings, connections));
  const search = new Search(transactions, sqlSearchEngine(), settings, admission, metrics ?? undefined);
  const events = new Feed({
    log: sqlEventLog,
    transactions,
    authentication,
    now: () => clock.now(),
    signal: (onNotify) => db.listen(EVENTS_CHANNEL, onNotify),
    settings: settings.events,
    retained: () => webhooks.retained(),
  });
  const { webhooks, dispatcher } = webhookServices(config, db, transactions, clock, metrics);
  const capacity = new Capacity(spaceGauge(config, db), settings.storage.minFreeSpaceInBytes);
  if (metrics) observeLoad(metrics, files, search);
  const readiness = new Readiness({
    database: () => checkSchemaCurrent(db),
    // The disk store's folder must be readable and writable; the bucket must answer (HeadBucket).
    blobStore: () =>
      settings.file.storage === 'disk'
        ? access(fileStoreDir(runtime.dataDir), constants.R_OK | constants.W_OK)
        : blobs.verify(),
  });
  metrics?.watchReadiness(() => readiness.report());
  return {
    db,
    clock,
    blobs,
    accounts,
    principals,
    elements,
    collections,
    files,
    uploads,
    search,
    events,
    webhooks,
    dispatcher,
    capacity,
    readiness,
    metrics,
    tracing,
  };
}

function observeLoad(metrics: PromMetrics, files: Files, search: Search) {
  metrics.observe('trellis_uploads_in_progress', 'Uploads streaming in now.', () => files.uploadSlots.inUse);
  metrics.observe('trellis_searches_running', 'Searches running now.', () => search.load.running);
  metrics.observe('trellis_searches_waiting', 'Searches waiting for their turn now.', () => search.load.waiting);
}

function webhookServices(
  { settings, runtime }: Config,
  db: Db,
  transactions: ReturnType<typeof sqlTransactions>,
  clock: Clock,
  metrics: PromMetrics | null,
) {
  const secrets = new SecretBox(async () => runtime.webhookKey ?? webhookKeyFrom(runtime.dataDir));
  const sender = new HttpSender(
    new AddressPolicy(settings.webhooks.allowedHosts),
    settings.webhooks.timeoutInSeconds * 1000,
  );
  const common = { store: sqlWebhookStore, log: sqlEventLog, transactions, sender, secrets, now: () => clock.now() };
  const dispatcher = new Dispatcher({
    ...common,
    signal: (onNotify) => db.listen(EVENTS_CHANNEL, onNotify),
    settings: settings.webhooks,
    observer: metrics
      ? webhookMetrics(metrics.registry, () => sqlWebhookStore.stats(transactions.direct, clock.now()))
      : undefined,
  });
  const webhooks = new Webhooks({ ...common, dispatcher, settings });
  return { webhooks, dispatcher };
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
