// Readiness follows the PostgreSQL server (issue 44, item 1): a server of the test's own is stopped under a running
// instance, /health/ready answers 503 naming the database within 2 s, and 200 again once the server is back, without
// Trellis being restarted; requests succeed again too.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PgCluster, startCluster } from '../../bench/lib/cluster.js';
import type { Db } from '../../src/storage/db.js';
import { migrate } from '../../src/storage/migrate.js';
import { openPostgres } from '../../src/storage/postgres.js';
import { backendsUnderTest, type Harness, startHarness, userWithToken } from '../helpers/harness.js';

const runs = backendsUnderTest().includes('postgres');

/** pg_ctl of the cluster in `dataDir`, run as the operating system user that owns the cluster. */
function pgCtl(dataDir: string, args: string[]): void {
  const binDir = readFileSync(join(dataDir, 'postmaster.opts'), 'utf8')
    .split(' ')[0]!
    .replace(/\/postgres$/, '');
  const owner = execFileSync('id', ['-nu', String(statSync(dataDir).uid)], { encoding: 'utf8' }).trim();
  const command = [join(binDir, 'pg_ctl'), '-D', dataDir, ...args];
  const asOwner = process.getuid?.() === 0 ? ['runuser', '-u', owner, '--', ...command] : command;
  execFileSync(asOwner[0]!, asOwner.slice(1), { stdio: 'ignore' });
}

/** The server's options as it was started (postmaster.opts), to start it again on the same port. */
function startOptions(dataDir: string): string {
  const opts = readFileSync(join(dataDir, 'postmaster.opts'), 'utf8');
  const words = [...opts.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);
  const afterDataDir = words.slice(words.indexOf('-D') + 2);
  return afterDataDir.map((word) => `'${word}'`).join(' ');
}

async function readyWithin(h: Harness, status: number, timeoutMs: number): Promise<{ ms: number; json: any }> {
  const started = performance.now();
  for (;;) {
    const res = await h.request('GET', '/health/ready');
    const ms = performance.now() - started;
    if (res.status === status) return { ms, json: res.json };
    if (ms > timeoutMs) throw new Error(`/health/ready still ${res.status} after ${Math.round(ms)} ms: ${res.text}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.runIf(runs)('readiness while the PostgreSQL server stops and returns', () => {
  let cluster: PgCluster;
  let db: Db;
  let h: Harness & { stop(): Promise<void> };

  beforeAll(async () => {
    cluster = await startCluster(() => {});
    db = await openPostgres(cluster.url, 4, 1, { connectMs: 1000, statementMs: 2000 });
    await migrate(db);
    h = await startHarness('postgres', {
      db,
      settings: { database: { connectTimeoutInSeconds: 1, statementTimeoutInSeconds: 2 } },
    });
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
    await db?.close();
    await cluster?.stop();
  });

  it('turns 503 once the server stops, and 200 once it is back, without a restart', async () => {
    const { token } = await userWithToken(h, 'ready@example.com');
    expect((await h.request('GET', '/health/ready')).status).toBe(200);
    const options = startOptions(cluster.dataDir);

    pgCtl(cluster.dataDir, ['stop', '-m', 'fast', '-w']);
    const down = await readyWithin(h, 503, 10_000);
    // Within the connect timeout of a check (1 s) and the reuse of a report: five times that catches a readiness that
    // keeps answering 200 from a remembered report, whatever the machine's load.
    expect(down.ms).toBeLessThan(5_000);
    expect(down.json).toMatchObject({ status: 503, database: 'down', blobStore: 'up' });
    expect(down.json.detail).toBe('This instance is not ready: database (down).');
    // Requests meanwhile fail as the database's unavailability, never as a client's mistake.
    expect((await h.request('GET', '/me', { token })).status).toBe(503);

    pgCtl(cluster.dataDir, [
      'start',
      '-w',
      '-t',
      '60',
      '-l',
      join(cluster.dataDir, '..', 'restart.log'),
      '-o',
      options,
    ]);
    const up = await readyWithin(h, 200, 15_000);
    expect(up.json).toEqual({ status: 'ready', checks: { database: 'up', blobStore: 'up' } });
    const me = await h.request('GET', '/me', { token });
    expect(me.status).toBe(200);
  });
});
