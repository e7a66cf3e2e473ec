// The probes (issue 44, item 1): GET /health/live and GET /health/ready, without credentials, described in the
// OpenAPI document, never logged at info level; readiness follows the database and the blob store, and turns 503
// first when the instance shuts down.
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { validateSettings } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { buildApp } from '../../src/http/app.js';
import { createServices } from '../../src/services.js';
import { describeBackends, freshDatabase, type Harness, serviceClient, type TestResponse } from '../helpers/harness.js';

/** Readiness reuses a report this long (health/readiness.ts) : a test waits it out before asking again. */
const REUSE_MS = 300;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function notReady(res: TestResponse, members: Record<string, string>): void {
  expect(res.status).toBe(503);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(res.json).toMatchObject({ status: 503, title: 'Service Unavailable', ...members });
  expect(res.json.type).toMatch(/\/error\/503\/service-unavailable$/);
}

describeBackends('probes', (h: () => Harness) => {
  it('GET /health/live answers 200 without credentials, and with any Authorization header', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-a-token' }] as Record<string, string>[]) {
      const res = await h().request('GET', '/health/live', { headers });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.json).toEqual({ status: 'live' });
    }
    const head = await h().request('HEAD', '/health/live');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('GET /health/ready answers 200 when the database (schema current) and the blob store answer', async () => {
    const res = await h().request('GET', '/health/ready', { headers: { authorization: 'Bearer not-a-token' } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: 'ready', checks: { database: 'up', blobStore: 'up' } });
  });

  it('answers 503 naming the blob store while its folder is gone, and 200 once it is back', async () => {
    const files = join(h().dataDir, 'files');
    await pause(REUSE_MS);
    await rename(files, `${files}.away`);
    try {
      await pause(REUSE_MS);
      const res = await h().request('GET', '/health/ready');
      notReady(res, { database: 'up', blobStore: 'down' });
      expect(res.json.detail).toBe('This instance is not ready: blobStore (down).');
    } finally {
      await rename(`${files}.away`, files);
    }
    await pause(REUSE_MS);
    expect((await h().request('GET', '/health/ready')).status).toBe(200);
  });

  it('answers 503 naming the database when its schema lacks a migration of this version', async () => {
    await h().db.query("UPDATE schema_migrations SET name = 'other' WHERE version = 1");
    try {
      await pause(REUSE_MS);
      notReady(await h().request('GET', '/health/ready'), { database: 'down', blobStore: 'up' });
    } finally {
      await h().db.query("UPDATE schema_migrations SET name = 'baseline' WHERE version = 1");
    }
    await pause(REUSE_MS);
    expect((await h().request('GET', '/health/ready')).status).toBe(200);
  });

  it('is described in /openapi.json, without security', async () => {
    const doc = (await h().request('GET', '/openapi.json')).json;
    expect(doc.paths['/health/live'].get.operationId).toBe('getLiveness');
    expect(doc.paths['/health/ready'].get.operationId).toBe('getReadiness');
    expect(doc.paths['/health/ready'].get.security).toEqual([{}]);
    expect(Object.keys(doc.paths['/health/ready'].get.responses)).toEqual(expect.arrayContaining(['200', '503']));
  });

  it('answers 503 once the instance drains (shutting down), while liveness stays 200', async () => {
    h().services.readiness.drain();
    notReady(await h().request('GET', '/health/ready'), {
      database: 'up',
      blobStore: 'up',
      instance: 'shutting-down',
    });
    expect((await h().request('GET', '/health/live')).status).toBe(200);
  });
});

describe('probes in the log', () => {
  const lines: Array<Record<string, unknown>> = [];
  let stop = async () => {};
  let url = '';

  beforeAll(async () => {
    const { db, dispose } = await freshDatabase('pglite');
    const config: Config = {
      settings: validateSettings({}),
      runtime: {
        s3Credentials: null,
        port: 0,
        host: '127.0.0.1',
        dataDir: await import('node:fs/promises').then((fs) => fs.mkdtemp('/tmp/trellis-health-')),
        databaseUrl: null,
        anonymousUserId: null,
        logLevel: 'info',
        configPath: null,
      },
    };
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const services = await createServices(config, db, new ManualClock());
    const app = await buildApp({ config, services, logger: pino({ level: 'info' }, sink) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    stop = async () => {
      await app.close();
      await dispose();
    };
  });
  afterAll(() => stop());

  it('writes no line for a probe at info level, and does for another request', async () => {
    const client = serviceClient(url);
    for (const path of ['/health/live', '/health/ready', '/health/live']) {
      expect((await client.request('GET', path)).status).toBe(200);
    }
    expect((await client.request('GET', '/instance-configuration')).status).toBe(200);
    // The control request's completion is logged after everything the probes could have logged.
    const completed = () =>
      lines.some((line) => line.msg === 'request completed' && JSON.stringify(line).includes('"statusCode":200'));
    for (const started = Date.now(); !completed() && Date.now() - started < 5000; ) await pause(50);
    expect(lines.some((line) => JSON.stringify(line).includes('/instance-configuration'))).toBe(true);
    expect(completed()).toBe(true);
    expect(lines.filter((line) => JSON.stringify(line).includes('/health'))).toEqual([]);
    expect(lines.filter((line) => line.msg === 'request completed')).toHaveLength(1);
  });
});
