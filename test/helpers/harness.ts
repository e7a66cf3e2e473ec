// The shared integration-test harness: every suite declared with `describeBackends` runs once per backend
// (PGlite and a real PostgreSQL server), each against a fresh migrated database, a fresh DATA_DIR on disk and the
// real HTTP app listening on a real socket. Suites about file bytes (`blobs: true`) run once per backend and blob
// store: the disk store in DATA_DIR, and the object store (a prefix of its own in the test bucket of the throw-away
// Ceph cluster). Time comes from a ManualClock the tests can move.

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, inject } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { validateSettings } from '../../src/config/load.js';
import type { Config, Settings } from '../../src/config/schema.js';
import { buildApp } from '../../src/http/app.js';
import type { App } from '../../src/http/types.js';
import { createServices, type Services } from '../../src/services.js';
import type { Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { pgliteDb } from '../../src/storage/pglite.js';
import { openPostgres } from '../../src/storage/postgres.js';
import type { ElementId } from '../../src/values.js';
import { emptyPrefix, newS3Prefix } from './bucket.js';
import { checkExchange, forgetDocument, registerDocument } from './openapi-check.js';
import { newPglite } from './pglite-template.js';

export type BackendName = 'pglite' | 'postgres';
export type BlobStoreName = 'disk' | 's3';

export function backendsUnderTest(): BackendName[] {
  const provided = inject('backends') as string[] | undefined;
  const list = provided && provided.length > 0 ? provided : ['pglite', 'postgres'];
  return list.filter((b): b is BackendName => b === 'pglite' || b === 'postgres');
}

export function blobStoresUnderTest(): BlobStoreName[] {
  const provided = inject('blobStores') as string[] | undefined;
  const list = provided && provided.length > 0 ? provided : ['disk', 's3'];
  return list.filter((b): b is BlobStoreName => b === 'disk' || b === 's3');
}

/** A new, empty database on the test PostgreSQL server: its URL, and how to drop it. */
export async function scratchPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = inject('pgUrl') as string | null;
  if (!adminUrl)
    throw new Error('PostgreSQL backend requested but no server URL was provided (run the tests with npm test)');
  const name = `trellis_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** A fresh, migrated database on the given backend, and how to dispose of it. */
export async function freshDatabase(backend: BackendName): Promise<{ db: Db; dispose(): Promise<void> }> {
  if (backend === 'pglite') {
    const db = await pgliteDb(await newPglite('migrated'), true);
    return { db, dispose: () => db.close() };
  }
  const scratch = await scratchPostgresDatabase();
  const db = await openPostgres(scratch.url, 5);
  await migrate(db);
  return {
    db,
    async dispose() {
      await db.close();
      await scratch.drop();
    },
  };
}

export interface TestOptions {
  settings?: Record<string, unknown>;
  anonymousUserId?: string | null;
  /** Run the suite on every blob store under test, not on the disk store only. */
  blobs?: boolean;
  /** The service's logger (a test that reads the log lines); default silent, or TEST_LOG_LEVEL's. */
  logger?: FastifyBaseLogger;
}

export interface HarnessOptions extends TestOptions {
  blobStore?: BlobStoreName;
  /** The object store's prefix (default: a new one); two harnesses given the same share their files. */
  s3Prefix?: string;
  /** Use this database instead of a fresh one (it is not disposed of by `stop`). */
  db?: Db;
  /** The object store of the s3 blob store, instead of the test bucket (a test's own, which it may freeze). */
  objectStore?: ObjectStoreAccess;
}

export interface Harness {
  backend: BackendName;
  blobStore: BlobStoreName;
  /** The object store's prefix of this harness (null on the disk store). */
  s3Prefix: string | null;
  url: string;
  db: Db;
  app: App;
  services: Services;
  clock: ManualClock;
  config: Config;
  dataDir: string;
  /**
   * Sends a request over the socket. `body` objects are sent as JSON. The exchange is checked against the server's
   * OpenAPI document (openapi-check.ts): a disagreement throws.
   */
  request(method: string, path: string, init?: RequestOptions): Promise<TestResponse>;
}

export interface RequestOptions {
  token?: string;
  headers?: Record<string, string>;
  body?: unknown;
  raw?: BodyInit;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** What a test needs to talk to a service: its URL and requests over the socket (see `Harness.request`). */
export type ServiceClient = Pick<Harness, 'url' | 'request'>;

/** A client of the service at `url` (a harness's, or one running in a child process). */
export function serviceClient(url: string): ServiceClient {
  const request = async (method: string, path: string, init: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    if (init.token) headers.authorization = `Bearer ${init.token}`;
    let body: BodyInit | undefined = init.raw;
    if (init.body !== undefined) {
      body = JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(url + path, { method, headers, body, redirect: 'manual' });
    const text = await response.text();
    let json: unknown;
    if (text.length > 0 && /json/.test(response.headers.get('content-type') ?? '')) json = JSON.parse(text);
    const { status } = response;
    checkExchange(url, { method, path, status, headers: response.headers, text, requestBody: init.body });
    return { status, headers: response.headers, text, json };
  };
  return { url, request };
}

/** An object store and bucket for a service: the test bucket of `npm test`'s store unless a test has its own. */
export interface ObjectStoreAccess {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
}

/** The settings and credentials of a service on the object store (`store`, or the test bucket), under `prefix`. */
export function s3Settings(
  settings: Record<string, unknown>,
  prefix: string,
  store = inject('s3') as ObjectStoreAccess,
) {
  if (!store) throw new Error('the s3 blob store was requested but no object store was provided (run npm test)');
  const file = (settings.file ?? {}) as Record<string, unknown>;
  return {
    settings: {
      ...settings,
      file: {
        ...file,
        storage: 's3',
        s3: { endpoint: store.endpoint, bucket: store.bucket, ...(file.s3 as object | undefined), prefix },
      },
    },
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
  };
}

/**
 * Tests register many users from one address: the registration throttle is off unless a suite's settings give
 * `register.throttle` (test/accounts/registration-throttle.test.ts does).
 */
function registrationsUnthrottled(settings: Record<string, unknown>): Record<string, unknown> {
  const register = (settings.register ?? {}) as Record<string, unknown>;
  if (register.throttle !== undefined) return settings;
  return { ...settings, register: { ...register, throttle: { enabled: false } } };
}

export async function startHarness(
  backend: BackendName,
  options: HarnessOptions = {},
): Promise<Harness & { stop(): Promise<void> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'trellis-test-'));
  const blobStore = options.blobStore ?? 'disk';
  const { db, dispose } = options.db ? { db: options.db, dispose: async () => {} } : await freshDatabase(backend);
  const s3Prefix = blobStore === 's3' ? (options.s3Prefix ?? newS3Prefix()) : null;
  const given = registrationsUnthrottled(options.settings ?? {});
  const s3 = s3Prefix !== null ? s3Settings(given, s3Prefix, options.objectStore) : null;
  const settings: Settings = validateSettings(s3?.settings ?? given);
  const config: Config = {
    settings,
    runtime: {
      s3Credentials: s3?.credentials ?? null,
      port: 0,
      host: '127.0.0.1',
      dataDir,
      databaseUrl: backend === 'postgres' ? 'postgres://test' : null,
      anonymousUserId: options.anonymousUserId ?? null,
      logLevel: 'silent',
      configPath: null,
    },
  };
  const clock = new ManualClock();
  const services = await createServices(config, db, clock);
  const app = await buildApp({
    config,
    services,
    ...(options.logger
      ? { logger: options.logger }
      : process.env.TEST_LOG_LEVEL
        ? { logger: (await import('pino')).pino({ level: process.env.TEST_LOG_LEVEL }) }
        : {}),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  registerDocument(url, app.swagger());
  const { request } = serviceClient(url);
  return {
    backend,
    blobStore,
    s3Prefix,
    url,
    db,
    app,
    services,
    clock,
    config,
    dataDir,
    request,
    async stop() {
      forgetDocument(url);
      // Teardown, not a graceful shutdown (test/ops covers that): a client's keep-alive connection that Node does
      // not count as idle would otherwise hold the close until the keep-alive timeout.
      const cut = setTimeout(() => app.server.closeAllConnections(), 1000);
      await app.close();
      clearTimeout(cut);
      await dispose();
      await rm(dataDir, { recursive: true, force: true });
      // The object store keeps its objects in memory: a prefix this harness made is emptied.
      if (s3Prefix !== null && options.s3Prefix === undefined) await emptyPrefix(`${s3Prefix}/`);
    },
  };
}

/**
 * Declares a suite once per backend. The callback receives a getter for the harness, which is started before the
 * suite's tests and stopped after them.
 */
export function describeBackends(title: string, body: (h: () => Harness) => void, options: TestOptions = {}): void {
  const stores: BlobStoreName[] = options.blobs ? blobStoresUnderTest() : ['disk'];
  for (const backend of backendsUnderTest())
    for (const blobStore of stores) {
      describe(`${title} [${backend}${blobStore === 'disk' ? '' : `, ${blobStore}`}]`, () => {
        let harness: (Harness & { stop(): Promise<void> }) | null = null;
        beforeAll(async () => {
          harness = await startHarness(backend, { ...options, blobStore });
        });
        afterAll(async () => {
          await harness?.stop();
        });
        body(() => {
          if (!harness) throw new Error('harness not started');
          return harness;
        });
      });
    }
}

/** Registers a user and returns its id and a fresh token. */
export async function userWithToken(h: ServiceClient, identifier: string, password = 'correct horse battery staple') {
  const reg = await h.request('POST', '/register', {
    body: { type: 'User', uniqueUserIdentifier: identifier, password },
  });
  if (reg.status !== 201) throw new Error(`register ${identifier}: ${reg.status} ${reg.text}`);
  const id = reg.headers.get('location')!.slice(1) as ElementId;
  const tok = await h.request('POST', '/token', {
    body: { type: 'Token', uniqueUserIdentifier: identifier, password },
  });
  if (tok.status !== 201) throw new Error(`token ${identifier}: ${tok.status} ${tok.text}`);
  return { id, token: tok.json.token as string, identifier, password };
}

/** Attaches `bytes` as the element's file (a direct upload named `filename`); throws unless it is stored. */
export async function attachFile(
  h: ServiceClient,
  token: string,
  id: string,
  bytes: Buffer,
  filename: string,
): Promise<void> {
  const headers = { 'upload-complete': '?1', 'content-disposition': `attachment; filename="${filename}"` };
  const res = await h.request('PUT', `/${id}/file`, { token, raw: new Uint8Array(bytes), headers });
  if (res.status >= 300) throw new Error(`attach ${filename} to ${id}: ${res.status} ${res.text}`);
}

/** Creates an element and returns its id. */
export async function createElement(
  h: ServiceClient,
  token: string,
  body: Record<string, unknown>,
  parent?: string,
): Promise<string> {
  const res = await h.request('POST', parent ? `/${parent}` : '/', { token, body });
  if (res.status !== 201) throw new Error(`create ${JSON.stringify(body)}: ${res.status} ${res.text}`);
  return res.headers.get('location')!.slice(1);
}
