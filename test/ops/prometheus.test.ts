// The operations files and a real Prometheus (issue 44, items 2 and 4): `promtool` accepts ops/prometheus.yml,
// ops/alerts.yml and what /metrics serves; a Prometheus server of the test's own scrapes a running Trellis and its
// HTTP API answers the request, pool and search series after some traffic (errors and a search among it).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installDebianPackages } from '../../scripts/debian-packages.js';
import { type MetricsListener, startMetricsListener } from '../../src/metrics/listener.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { freePort } from '../helpers/process.js';

const OPS = fileURLToPath(new URL('../../ops/', import.meta.url));

/** promtool and prometheus, from Debian's `prometheus` package, installed the way the other test servers are. */
async function ensurePrometheus(): Promise<void> {
  if (spawnSync('promtool', ['--version']).status === 0) return;
  await installDebianPackages(['prometheus'], (message) => process.stderr.write(`[prometheus] ${message}\n`));
}

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { input, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('operations files', () => {
  beforeAll(ensurePrometheus, 300_000);

  it('promtool check config accepts ops/prometheus.yml and check rules accepts ops/alerts.yml', () => {
    const config = promtool(['check', 'config', join(OPS, 'prometheus.yml')]);
    expect(config.output).toContain('is valid prometheus config file syntax');
    expect(config.status).toBe(0);
    const rules = promtool(['check', 'rules', join(OPS, 'alerts.yml')]);
    expect(rules.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(rules.status).toBe(0);
  });
});

interface Series {
  metric: Record<string, string>;
  value: [number, string];
}

describeBackends('a real Prometheus scraping Trellis', (h: () => Harness) => {
  let listener: MetricsListener;
  let prometheus: ChildProcess | null = null;
  let api = '';
  let dir = '';

  beforeAll(async () => {
    await ensurePrometheus();
    listener = await startMetricsListener(h().services.metrics!, '127.0.0.1', 0);
    dir = await mkdtemp(join(tmpdir(), 'trellis-prometheus-'));
    const target = new URL(listener.url).host;
    // The shipped rules, and a scrape of this test's instance every second.
    await copyFile(join(OPS, 'alerts.yml'), join(dir, 'alerts.yml'));
    await writeFile(
      join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'rule_files: [alerts.yml]',
        'scrape_configs:',
        `  - { job_name: trellis, static_configs: [{ targets: ['${target}'] }] }`,
      ].join('\n'),
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    );
    for (const started = Date.now(); ; ) {
      const ready = await fetch(`${api}/-/ready`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ready) break;
      if (Date.now() - started > 60_000) throw new Error('prometheus did not start');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }, 300_000);
  afterAll(async () => {
    prometheus?.kill('SIGTERM');
    await listener?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The result of an instant query, once it has at least one series (Prometheus scrapes every second). */
  async function query(expression: string): Promise<Series[]> {
    for (const started = Date.now(); ; ) {
      const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(expression)}`);
      const body = (await res.json()) as { status: string; data: { result: Series[] } };
      expect(body.status).toBe('success');
      if (body.data.result.length > 0) return body.data.result;
      if (Date.now() - started > 30_000) throw new Error(`no series for ${expression}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  it('holds the request, pool and search series after traffic with errors and a search', async () => {
    const { token } = await userWithToken(h(), 'scraped@example.com');
    const id = await createElement(h(), token, { type: 'Note', data: { name: 'scraped' } });
    expect((await h().request('GET', `/${id}`, { token })).status).toBe(200);
    expect((await h().request('GET', `/${id}`)).status).toBe(401);
    expect((await h().request('POST', '/', { token, body: { type: 'Note', data: 'not an object' } })).status).toBe(400);
    const search = await h().request('POST', '/search', {
      token,
      body: { steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: 'scraped' } } }] },
    });
    expect(search.status).toBe(200);

    const ok = await query('trellis_http_requests_total{job="trellis",route="/:id",method="GET",status_class="2xx"}');
    expect(Number(ok[0]!.value[1])).toBeGreaterThanOrEqual(1);
    const errors = await query('sum(trellis_http_requests_total{status_class="4xx"})');
    expect(Number(errors[0]!.value[1])).toBeGreaterThanOrEqual(2);
    const searched = await query('trellis_search_step_duration_seconds_count{step="search-engine"}');
    expect(Number(searched[0]!.value[1])).toBe(1);
    const latency = await query(
      'histogram_quantile(0.99, sum by (le) (trellis_http_request_duration_seconds_bucket{route="/search"}))',
    );
    expect(Number(latency[0]!.value[1])).toBeGreaterThan(0);
    const pool = await query('trellis_db_pool_max_connections');
    expect(Number(pool[0]!.value[1])).toBeGreaterThanOrEqual(1);
    await query('trellis_db_pool_connections_in_use');
    await query('trellis_db_statement_duration_seconds_count{statement="search"}');
    const ready = await query('trellis_ready');
    expect(ready[0]!.value[1]).toBe('1');
    const up = await query('up{job="trellis"}');
    expect(up[0]!.value[1]).toBe('1');
  });

  it('loads the shipped alert rules, none of them firing on a healthy instance', async () => {
    const res = await fetch(`${api}/api/v1/rules`);
    const body = (await res.json()) as {
      data: { groups: Array<{ rules: Array<{ name: string; state: string; health: string }> }> };
    };
    const rules = body.data.groups.flatMap((group) => group.rules);
    expect(rules.map((rule) => rule.name)).toEqual(
      expect.arrayContaining([
        'TrellisNotReady',
        'TrellisHighErrorRate',
        'TrellisHighLatencyP99',
        'TrellisDatabasePoolSaturated',
        'TrellisBlobStoreErrors',
        'TrellisUploadSweepBehind',
      ]),
    );
    for (const rule of rules) expect(rule.state, rule.name).not.toBe('firing');
  });

  it('serves what promtool check metrics accepts', async () => {
    const text = await (await fetch(listener.url)).text();
    const check = promtool(['check', 'metrics'], text);
    expect(check.output).toBe('');
    expect(check.status).toBe(0);
  });
});
