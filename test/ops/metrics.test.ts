// The Prometheus metrics (issue 44, item 2): served on a listener of their own (never on the service's port), with
// requests by route template, method and status class, the database pool and statements by name, search steps,
// uploads and bytes, blob store calls, login back-offs and 429s, remembered access decisions, and the process's own;
// labels never carry an id or a token.

import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, validateSettings } from '../../src/config/load.js';
import { type MetricsListener, startMetricsListener } from '../../src/metrics/listener.js';
import {
  attachFile,
  backendsUnderTest,
  createElement,
  describeBackends,
  type Harness,
  startHarness,
  userWithToken,
} from '../helpers/harness.js';
import { lockElements } from '../helpers/locks.js';

/** The value of the sample `name{labels}` in a Prometheus text exposition, or undefined when it is not there. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

describeBackends(
  'metrics',
  (h: () => Harness) => {
    let listener: MetricsListener;
    const scrape = async () => {
      const res = await fetch(listener.url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return res.text();
    };
    let token = '';
    let id = '';
    const bytes = Buffer.alloc(100_000, 3);

    beforeAll(async () => {
      listener = await startMetricsListener(h().services.metrics!, '127.0.0.1', 0);
      ({ token } = await userWithToken(h(), 'metrics@example.com'));
      id = await createElement(h(), token, { type: 'Note', data: { name: 'measured' } });
      await attachFile(h(), token, id, bytes, 'measured.bin');
    });
    afterAll(() => listener?.close());

    it('counts and times requests by route template, method and status class, never by path', async () => {
      for (let i = 0; i < 3; i++) expect((await h().request('GET', `/${id}`, { token })).status).toBe(200);
      expect((await h().request('GET', '/00000000-0000-4000-8000-000000000000', { token })).status).toBe(404);
      expect((await h().request('GET', '/no/such/path')).status).toBe(404);
      const text = await scrape();
      const ok = { route: '/:id', method: 'GET', status_class: '2xx' };
      expect(sample(text, 'trellis_http_requests_total', ok)).toBeGreaterThanOrEqual(3);
      expect(sample(text, 'trellis_http_request_duration_seconds_count', ok)).toBeGreaterThanOrEqual(3);
      expect(sample(text, 'trellis_http_request_duration_seconds_bucket', { ...ok, le: '+Inf' })).toBe(
        sample(text, 'trellis_http_request_duration_seconds_count', ok),
      );
      expect(sample(text, 'trellis_http_requests_total', { ...ok, status_class: '4xx' })).toBe(1);
      expect(sample(text, 'trellis_http_requests_total', { route: 'unmatched', status_class: '4xx' })).toBe(1);
      expect(text).not.toMatch(UUID);
      expect(text).not.toContain(token);
    });

    it('times statements by name and counts the pool, and remembers access decisions', async () => {
      const text = await scrape();
      const names = [...text.matchAll(/trellis_db_statement_duration_seconds_count\{statement="([^"]+)"\}/g)].map(
        (m) => m[1],
      );
      expect(names.some((name) => /readable_element/.test(name!))).toBe(true);
      for (const name of names) expect(name).not.toMatch(/_[0-9a-f]{24}$/);
      expect(sample(text, 'trellis_db_pool_max_connections')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'trellis_db_pool_connections')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'trellis_db_pool_connections_in_use')).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'trellis_db_pool_waiting_requests')).toBe(0);
      // Three reads of one element with one token: the later ones by the remembered decision.
      expect(sample(text, 'trellis_access_decision_hits_total')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'trellis_access_decision_misses_total')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'trellis_access_epoch_bumps_total')).toBeGreaterThanOrEqual(0);
    });

    it('times search steps by type and shows the searches running and waiting', async () => {
      const res = await h().request('POST', '/search', {
        token,
        body: { steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: 'measured' } } }] },
      });
      expect(res.status).toBe(200);
      const text = await scrape();
      expect(sample(text, 'trellis_search_step_duration_seconds_count', { step: 'search-engine' })).toBe(1);
      expect(sample(text, 'trellis_search_step_duration_seconds_count', { step: 'hydration' })).toBe(1);
      expect(sample(text, 'trellis_search_budget_cancellations_total')).toBe(0);
      // The search has ended: none runs or waits.
      expect(sample(text, 'trellis_searches_running')).toBe(0);
      expect(sample(text, 'trellis_searches_waiting')).toBe(0);
      expect(text).toMatch(/trellis_db_statement_duration_seconds_count\{statement="search"\}/);
    });

    it('counts file bytes received and sent, uploads in progress and blob store calls by store and operation', async () => {
      const download = await h().request('GET', `/${id}/file`, { token });
      expect(download.status).toBe(200);
      const text = await scrape();
      const store = h().blobStore;
      expect(sample(text, 'trellis_file_received_bytes_total', { store })).toBe(bytes.length);
      expect(sample(text, 'trellis_file_sent_bytes_total', { store })).toBe(bytes.length);
      expect(sample(text, 'trellis_uploads_in_progress')).toBe(0);
      expect(sample(text, 'trellis_blob_operation_duration_seconds_count', { store, operation: 'write' })).toBe(1);
      expect(sample(text, 'trellis_blob_operation_duration_seconds_count', { store, operation: 'open' })).toBe(1);
      expect(sample(text, 'trellis_blob_operation_errors_total', { store, operation: 'open' })).toBeUndefined();
    });

    it('counts login back-offs and 429s', async () => {
      const wrong = { type: 'Token', uniqueUserIdentifier: 'metrics@example.com', password: 'wrong password!' };
      let status = 0;
      for (let i = 0; i < 4 && status !== 429; i++)
        status = (await h().request('POST', '/token', { body: wrong })).status;
      expect(status).toBe(429);
      const text = await scrape();
      expect(sample(text, 'trellis_login_backoffs_total')).toBe(1);
      expect(sample(text, 'trellis_http_too_many_requests_total', { route: '/token' })).toBe(1);
    });

    it('serves the process metrics, and nothing but /metrics', async () => {
      const text = await scrape();
      for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds'])
        expect(sample(text, name)).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'process_open_fds')).toBeGreaterThan(0);
      expect((await fetch(listener.url.replace('/metrics', '/'))).status).toBe(404);
      expect((await fetch(listener.url, { method: 'POST' })).status).toBe(405);
    });

    it('is not served on the service port', async () => {
      const res = await h().request('GET', '/metrics');
      expect(res.status).toBe(404);
    });
  },
  { blobs: true, settings: { login: { throttle: { freeFailuresPerIdentifier: 2 } } } },
);

describeBackends(
  'metrics off',
  (h: () => Harness) => {
    it('measures nothing: no registry, the database and the blob store unwrapped', () => {
      expect(h().services.metrics).toBeNull();
      expect(h().services.db).toBe(h().db);
    });
  },
  { settings: { metrics: { enabled: false } } },
);

describe.runIf(backendsUnderTest().includes('postgres'))('search budget cancellations [postgres]', () => {
  it('are counted', async () => {
    const h = await startHarness('postgres', { settings: { search: { statementTimeoutInSeconds: 1 } } });
    try {
      const { token } = await userWithToken(h, 'budget@example.com');
      await createElement(h, token, { type: 'Note', data: { name: 'budget' } });
      // A statement that cannot finish in time: the elements are locked until the search gave up.
      const unlock = await lockElements(h.db);
      const res = await h.request('POST', '/search', {
        token,
        body: { steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: 'budget' } } }] },
      });
      await unlock();
      expect(res.status).toBe(400);
      const { text } = await h.services.metrics!.exposition();
      expect(sample(text, 'trellis_search_budget_cancellations_total')).toBe(1);
      expect(sample(text, 'trellis_http_requests_total', { route: '/search', status_class: '4xx' })).toBe(1);
    } finally {
      await h.stop();
    }
  });
});

describe('metrics settings', () => {
  it('default to on, at 127.0.0.1:9464, and are validated', () => {
    expect(validateSettings({}).metrics).toEqual({ enabled: true, host: '127.0.0.1', port: 9464 });
    expect(() => validateSettings({ metrics: { port: 70000 } })).toThrow(/metrics\.port/);
    expect(() => validateSettings({ metrics: { host: '' } })).toThrow(/metrics\.host/);
    expect(() => validateSettings({ metrics: { path: '/x' } })).toThrow(/metrics\.path: unknown key/);
  });

  it('are never served on the service port', () => {
    const path = join(tmpdir(), `trellis-metrics-${process.pid}.yaml`);
    writeFileSync(path, 'metrics:\n  port: 8080\n');
    expect(() => loadConfig({ TRELLIS_CONFIG: path, PORT: '8080' })).toThrow(
      'invalid configuration: metrics.port: must differ from PORT (8080)',
    );
    expect(loadConfig({ TRELLIS_CONFIG: path, PORT: '8081' }).settings.metrics.port).toBe(8080);
    writeFileSync(path, 'metrics:\n  enabled: false\n  port: 8080\n');
    expect(loadConfig({ TRELLIS_CONFIG: path, PORT: '8080' }).settings.metrics.enabled).toBe(false);
  });
});
