// The operating contract: `trellis serve`, config errors, the DATA_DIR lock, graceful shutdown, and the database
// commands beside a running embedded server (through its admin socket) and on PostgreSQL directly.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort, runCli, spawnCli, waitForHttp } from '../helpers/process.js';

async function token(url: string, identifier: string, password: string): Promise<string> {
  const res = await fetch(`${url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'Token', uniqueUserIdentifier: identifier, password }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

describe('trellis serve (embedded PGlite)', () => {
  let dataDir: string;
  let port: number;
  let url: string;
  let server: ReturnType<typeof spawnCli>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'trellis-cli-'));
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = spawnCli(['serve'], { DATA_DIR: dataDir, PORT: String(port) });
    await waitForHttp(`${url}/error/404/not-found`);
  });

  afterAll(async () => {
    if (server.exitCode === null) server.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('refuses an invalid configuration before listening, naming the key', async () => {
    const cfg = join(dataDir, 'bad.yaml');
    await writeFile(cfg, 'file:\n  uploadMinChunkSizeInBytes: -1\n');
    const otherPort = await freePort();
    const res = await runCli(['serve'], {
      DATA_DIR: join(dataDir, 'other'),
      PORT: String(otherPort),
      TRELLIS_CONFIG: cfg,
    });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('file.uploadMinChunkSizeInBytes');
    await expect(fetch(`http://127.0.0.1:${otherPort}/`)).rejects.toThrow();
    const check = await runCli(['config:check'], { TRELLIS_CONFIG: cfg });
    expect(check.code).not.toBe(0);
    expect(check.stderr).toContain('file.uploadMinChunkSizeInBytes');
    const good = await runCli(['config:check'], {});
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout.slice(0, good.stdout.lastIndexOf('}') + 1)).pageSize).toEqual({
      min: 5,
      default: 25,
      max: 100,
    });
  });

  it('a second server on the same DATA_DIR fails fast with a clear message', async () => {
    const res = await runCli(['serve'], { DATA_DIR: dataDir, PORT: String(await freePort()) });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/in use by process \d+/);
  });

  it('user:create and token:revoke run through the running server', async () => {
    const created = await runCli(['user:create', 'cli@example.dev', 'pw-cli-secret', '--name', 'CLI User'], {
      DATA_DIR: dataDir,
    });
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const id = created.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const t = await token(url, 'cli@example.dev', 'pw-cli-secret');
    const me = await fetch(`${url}/me`, { headers: { authorization: `Bearer ${t}` } });
    expect((await me.json()) as { id: string; data: { name: string } }).toMatchObject({
      id,
      data: { name: 'CLI User' },
    });
    const dup = await runCli(['user:create', 'cli@example.dev', 'x'], { DATA_DIR: dataDir });
    expect(dup.code).toBe(1);
    // A password shorter than register.minPasswordLength: a warning, and the user is created all the same.
    const short = await runCli(['user:create', 'cli-short@example.dev', 'short'], { DATA_DIR: dataDir });
    expect([short.code, short.stderr]).toEqual([
      0,
      expect.stringMatching(/^warning: the password is shorter than register\.minPasswordLength \(8 characters\)\n$/),
    ]);
    expect(short.stdout.trim()).toMatch(/^[0-9a-f-]{36}$/);
    for (const [identifier, password] of [
      ['', 'pw'],
      ['empty-password@example.dev', ''],
    ]) {
      const empty = await runCli(['user:create', identifier, password], { DATA_DIR: dataDir });
      expect([identifier, empty.code, empty.stderr]).toEqual([
        identifier,
        1,
        expect.stringMatching(/must be a non-empty string/),
      ]);
    }
    const users = await fetch(`${url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        type: 'User',
        uniqueUserIdentifier: 'empty-password@example.dev',
        password: 'now set right',
      }),
    });
    expect(users.status).toBe(201); // the refused user:create left nothing behind

    const dry = await runCli(['token:revoke', '--dry-run', '--user', 'cli@example.dev'], { DATA_DIR: dataDir });
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('1 active token(s) match.');
    expect(dry.stdout).toContain('Dry run');
    expect((await fetch(`${url}/me`, { headers: { authorization: `Bearer ${t}` } })).status).toBe(200);
    // without a terminal and without --force nothing asks: stdin is not a TTY, so it proceeds (the reference's behaviour)
    const revoke = await runCli(['token:revoke', '-u', id], { DATA_DIR: dataDir });
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toContain('Revoked 1 token(s).');
    expect((await fetch(`${url}/me`, { headers: { authorization: `Bearer ${t}` } })).status).toBe(401);
  });

  it('answers argument mistakes with the usage and exit 2, here and through the server, never a stack trace', async () => {
    const bareDir = await mkdtemp(join(tmpdir(), 'trellis-cli-args-'));
    try {
      for (const env of [{ DATA_DIR: dataDir }, { DATA_DIR: bareDir }]) {
        const misspelt = await runCli(['user:create', 'a@b.dev', 'pw', '--nmae', 'X'], env);
        expect([misspelt.code, misspelt.stderr]).toEqual([
          2,
          expect.stringMatching(/--nmae[\s\S]*usage: trellis user:create/),
        ]);
        const unquoted = await runCli(['token:revoke', '-b', '2024-01-01', '12:00'], env);
        expect([unquoted.code, unquoted.stderr]).toEqual([
          2,
          expect.stringMatching(/unexpected argument 12:00[\s\S]*usage: trellis token:revoke/),
        ]);
        const unknown = await runCli(['backup:load', '--nope', 'x'], env);
        expect(unknown.code).toBe(2);
        for (const res of [misspelt, unquoted, unknown]) expect(res.stderr).not.toMatch(/\n\s+at /);
      }
    } finally {
      await rm(bareDir, { recursive: true, force: true });
    }
  });

  it('tells the operator what is wrong with the environment in one line: a port in use, a database that does not answer', async () => {
    const inUse = await runCli(['serve'], { DATA_DIR: join(dataDir, 'port-in-use'), PORT: String(port) });
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toMatch(/^trellis: .*EADDRINUSE/m);
    expect(inUse.stderr).not.toMatch(/\n\s+at /);
    const closed = await freePort();
    const noDb = await runCli(['serve'], {
      DATA_DIR: join(dataDir, 'no-db'),
      PORT: String(await freePort()),
      DATABASE_URL: `postgres://x:y@127.0.0.1:${closed}/none`,
    });
    expect(noDb.code).toBe(1);
    expect(noDb.stderr).toMatch(/^trellis: .*ECONNREFUSED/m);
    expect(noDb.stderr).not.toMatch(/\n\s+at /);
  });

  it('runs a command given while the server is still starting once the server is up', async () => {
    const startingDir = await mkdtemp(join(tmpdir(), 'trellis-cli-starting-'));
    const startingPort = await freePort();
    const starting = spawnCli(['serve'], { DATA_DIR: startingDir, PORT: String(startingPort) });
    try {
      // The server holds DATA_DIR from its first moment, and opens its admin socket only once it is migrated.
      for (const started = Date.now(); !existsSync(join(startingDir, 'trellis.pid')); ) {
        if (Date.now() - started > 30_000) throw new Error('the server never took DATA_DIR');
        await new Promise((r) => setTimeout(r, 20));
      }
      const created = await runCli(['user:create', 'early@example.dev', 'pw-early'], { DATA_DIR: startingDir });
      expect([created.code, created.stderr]).toEqual([0, '']);
      await waitForHttp(`http://127.0.0.1:${startingPort}/error/404/not-found`);
      await token(`http://127.0.0.1:${startingPort}`, 'early@example.dev', 'pw-early');
    } finally {
      starting.kill('SIGTERM');
      await starting.done;
      await rm(startingDir, { recursive: true, force: true });
    }
  });

  it('resolves relative paths against the CLI caller, also when the server runs the command', async () => {
    const here = await mkdtemp(join(tmpdir(), 'trellis-cwd-'));
    try {
      const res = await runCli(['backup:create', 'my-backup'], { DATA_DIR: dataDir }, undefined, here);
      expect(res.code, res.stderr).toBe(0);
      expect(existsSync(join(here, 'my-backup', 'summary.json'))).toBe(true);
    } finally {
      await rm(here, { recursive: true, force: true });
    }
  });

  it('shuts down gracefully on SIGTERM and releases the DATA_DIR', async () => {
    server.kill('SIGTERM');
    const res = await server.done;
    expect(res.code).toBe(0);
    expect(existsSync(join(dataDir, 'trellis.pid'))).toBe(false);
    // the data survived: a CLI command now opens the database itself
    const again = await runCli(['token:revoke', '--dry-run'], { DATA_DIR: dataDir });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('0 active token(s) match.');
  });
});

describe('CLI on PostgreSQL (DATABASE_URL)', () => {
  const adminUrl = inject('pgUrl');
  const name = `trellis_cli_${process.pid}`;
  let url: string;
  beforeAll(async () => {
    const c = new pg.Client({ connectionString: adminUrl! });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    const u = new URL(adminUrl!);
    u.pathname = `/${name}`;
    url = u.toString();
  });
  afterAll(async () => {
    const c = new pg.Client({ connectionString: adminUrl! });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });

  it.runIf(adminUrl)('creates users and revokes tokens by group, issue date and expiration flags', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'trellis-cli-pg-'));
    const env = { DATABASE_URL: url, DATA_DIR: dataDir };
    const fixedId = '0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b';
    const a = await runCli(['user:create', 'pg-a@example.dev', 'pw', '--id', fixedId], env);
    expect(a.stdout.trim()).toBe(fixedId);
    const port = await freePort();
    const server = spawnCli(['serve'], { ...env, PORT: String(port) });
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${base}/error/404/not-found`);
      const b = (await runCli(['user:create', 'pg-b@example.dev', 'pw'], env)).stdout.trim();
      const ta = await token(base, 'pg-a@example.dev', 'pw');
      const tb = await token(base, 'pg-b@example.dev', 'pw');
      // b is in group g (nested in g2); revoking by g2 hits b only
      const group = await fetch(`${base}/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ta}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'Group' }),
      });
      const g = group.headers.get('location')!.slice(1);
      const group2 = await fetch(`${base}/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ta}`, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'Group' }),
      });
      const g2 = group2.headers.get('location')!.slice(1);
      for (const [start, end] of [
        [b, g],
        [g, g2],
      ]) {
        const r = await fetch(`${base}/`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ta}`, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'IS_IN_GROUP', start, end }),
        });
        expect(r.status).toBe(201);
      }
      const none = await runCli(['token:revoke', '-f', '--issued-before', '2000-01-01 00:00'], env);
      expect(none.stdout).toContain('0 active token(s) match.');
      // A date that does not exist is refused, not rolled over into one nobody typed (2019-13-45 99:99 is 2020-02-18).
      for (const date of ['2019-13-45 99:99', '2023-02-29', '2024-04-31 12:00', '2024-01-01 24:00']) {
        const impossible = await runCli(['token:revoke', '-f', '--issued-before', date], env);
        expect(impossible.code, date).toBe(2);
        expect(impossible.stderr).toMatch(/--issued-before must be "YYYY-MM-DD HH:MM"/);
      }
      const noExp = await runCli(['token:revoke', '-f', '--issued-without-expiration-date'], env);
      expect(noExp.stdout).toContain('0 active token(s) match.');
      const byGroup = await runCli(['token:revoke', '-f', '-l', '-g', g2], env);
      expect(byGroup.code).toBe(0);
      expect(byGroup.stdout).toContain('pg-b@example.dev');
      expect(byGroup.stdout).toContain('Revoked 1 token(s).');
      expect((await fetch(`${base}/me`, { headers: { authorization: `Bearer ${tb}` } })).status).toBe(401);
      expect((await fetch(`${base}/me`, { headers: { authorization: `Bearer ${ta}` } })).status).toBe(200);
      const rest = await runCli(
        ['token:revoke', '-f', '--issued-after', '2000-01-01 00:00', '--issued-with-expiration-date'],
        env,
      );
      expect(rest.stdout).toContain('Revoked 1 token(s).');
      expect((await fetch(`${base}/me`, { headers: { authorization: `Bearer ${ta}` } })).status).toBe(401);
    } finally {
      server.kill('SIGTERM');
      await server.done;
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a database command through a server that dies', () => {
  it('ends with one line on stderr and exit 1, not a stack trace', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'trellis-gone-'));
    const backup = join(dataDir, 'backup');
    const port = await freePort();
    const server = spawnCli(['serve'], { DATA_DIR: join(dataDir, 'data'), PORT: String(port) });
    try {
      // A backup large enough that loading it is still going when the server is killed.
      const nodes = 40_000;
      await mkdir(join(backup, 'node'), { recursive: true });
      await writeFile(
        join(backup, 'summary.json'),
        JSON.stringify({
          backupCreated: new Date().toISOString(),
          nodeCount: nodes,
          relationCount: 0,
          fileCount: 0,
          hostname: 'test',
          version: 'dev',
          backupVersion: '0.0.28',
        }),
      );
      for (let i = 0; i < nodes; i += 1000)
        await Promise.all(
          Array.from({ length: 1000 }, (_, k) => {
            const id = randomUUID();
            return writeFile(
              join(backup, 'node', `${id}.json`),
              JSON.stringify({ type: 'Thing', id, data: { n: i + k } }),
            );
          }),
        );
      await waitForHttp(`http://127.0.0.1:${port}/error/404/not-found`);
      const load = spawnCli(['backup:load', backup], { DATA_DIR: join(dataDir, 'data') });
      // Killed once the server has taken the command (its first output reached the CLI).
      await new Promise<void>((resolve) => {
        const seen = () => resolve();
        load.stdout!.once('data', seen);
        load.stderr!.once('data', seen);
      });
      server.kill('SIGKILL');
      const res = await load.done;
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/trellis: the server closed the admin connection before the command finished/);
      expect(res.stderr).not.toMatch(/\n\s+at /);
    } finally {
      if (server.exitCode === null) server.kill('SIGKILL');
      await server.done;
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
