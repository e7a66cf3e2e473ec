// database.embeddedDurable (issue 52): on the embedded database an acknowledged write is on stable storage. A
// `trellis serve` runs under strace, which records the process's own system calls: between reading the request
// `POST /` from its socket and writing the answer to it, the process fsyncs a WAL file under DATA_DIR/db/pg_wal;
// with `embeddedDurable: false` it syncs nothing there.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installDebianPackages } from '../../scripts/debian-packages.js';
import { validateSettings } from '../../src/config/load.js';
import { openDatabase } from '../../src/storage/open.js';
import { backendsUnderTest } from '../helpers/harness.js';
import { type Instance, serveInstance } from '../helpers/process.js';

/** strace, from Debian's package, installed the way the other test tools are. */
async function ensureStrace(): Promise<void> {
  if (spawnSync('strace', ['-V']).status === 0) return;
  await installDebianPackages(['strace'], (message) => process.stderr.write(`[strace] ${message}\n`));
}

/** strace attached to every thread of `pid`, writing to `log`, once it says it is attached. */
async function attach(pid: number, log: string): Promise<ChildProcess> {
  // -y names each descriptor's file or socket; -s 32 keeps the first bytes of what is read and written.
  const calls = 'trace=fsync,fdatasync,sync_file_range,read,write,writev';
  const tracer = spawn('strace', ['-f', '-y', '-s', '32', '-e', calls, '-e', 'signal=none', '-o', log, '-p', `${pid}`]);
  let said = '';
  await new Promise<void>((resolve, reject) => {
    tracer.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      if (said.includes(`Process ${pid} attached`)) resolve();
    });
    tracer.on('exit', (code) => reject(new Error(`strace ended (${code}) before attaching: ${said}`)));
  });
  return tracer;
}

async function detach(tracer: ChildProcess): Promise<void> {
  const ended = new Promise((resolve) => tracer.on('exit', resolve));
  tracer.kill('SIGINT');
  await ended;
}

interface Call {
  name: string;
  fd: number;
  target: string;
  data: string;
}

/** The system calls of the process's main thread (whose id is the process's), in their order. */
function mainThreadCalls(log: string, pid: number): Call[] {
  const calls: Call[] = [];
  for (const line of log.split('\n')) {
    const call = /^(\d+)\s+(\w+)\((\d+)<([^>]*)>,?\s*(.*)$/.exec(line);
    if (call && Number(call[1]) === pid)
      calls.push({ name: call[2]!, fd: Number(call[3]), target: call[4]!, data: call[5]! });
  }
  return calls;
}

/** What the main thread did between reading `POST /` and writing the answer to that socket. */
function callsWhileAnswering(calls: Call[]): { between: Call[]; answer: Call } {
  const request = calls.findIndex((c) => c.name === 'read' && c.data.startsWith('"POST / HTTP/1.1'));
  expect(request).toBeGreaterThanOrEqual(0);
  const fd = calls[request]!.fd;
  const answer = calls.findIndex((c, i) => i > request && c.fd === fd && /^(write|writev)$/.test(c.name));
  expect(answer).toBeGreaterThan(request);
  return { between: calls.slice(request + 1, answer), answer: calls[answer]! };
}

const json = (body: unknown, token?: string) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});

/** A user and their token on `url`, then `POST /` traced: the main thread's calls, and the new element's path. */
async function tracedCreate(server: Instance, log: string): Promise<{ calls: Call[]; location: string }> {
  const user = { type: 'User', uniqueUserIdentifier: 'durable@example.dev', password: 'pw-durable' };
  expect((await fetch(`${server.url}/register`, json(user))).status).toBe(201);
  const { token } = (await (await fetch(`${server.url}/token`, json({ ...user, type: 'Token' }))).json()) as {
    token: string;
  };
  const tracer = await attach(server.pid!, log);
  let location: string;
  try {
    const created = await fetch(`${server.url}/`, json({ type: 'Doc', data: { kept: true } }, token));
    expect(created.status).toBe(201);
    location = created.headers.get('location')!;
  } finally {
    await detach(tracer);
  }
  // What was acknowledged is there.
  const read = await fetch(`${server.url}${location}`, { headers: { authorization: `Bearer ${token}` } });
  expect([read.status, ((await read.json()) as { data: { kept?: boolean } }).data.kept]).toEqual([200, true]);
  return { calls: mainThreadCalls(await readFile(log, 'utf8'), server.pid!), location };
}

describe.skipIf(!backendsUnderTest().includes('pglite'))('durable commits on the embedded database', () => {
  const dirs: string[] = [];
  const servers: Instance[] = [];
  beforeAll(ensureStrace, 300_000);
  afterAll(async () => {
    for (const server of servers) if (server.exitCode === null) server.kill('SIGKILL');
    await Promise.all(servers.map((server) => server.done));
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  const serve = async (settings: Record<string, unknown>) => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-durable-'));
    dirs.push(dir);
    const server = await serveInstance(dir, settings);
    servers.push(server);
    return { dir, server };
  };

  it('fsyncs the WAL after POST / arrives and before its answer is written', async () => {
    const { dir, server } = await serve({ register: { enabled: true } });
    const { calls } = await tracedCreate(server, join(dir, 'strace.log'));
    const { between, answer } = callsWhileAnswering(calls);
    expect(answer.data).toMatch(/^"HTTP\/1\.1 201/);
    const walSyncs = between.filter((c) => /^(fsync|fdatasync)$/.test(c.name));
    expect(walSyncs.map((c) => c.target)).toContainEqual(expect.stringContaining(join(dir, 'db', 'pg_wal')));
  }, 300_000);

  it('syncs nothing of DATA_DIR for POST / with embeddedDurable: false', async () => {
    const { dir, server } = await serve({ register: { enabled: true }, database: { embeddedDurable: false } });
    const { calls } = await tracedCreate(server, join(dir, 'strace.log'));
    // The trace holds the request and its answer, and no sync of a file under DATA_DIR anywhere.
    expect(callsWhileAnswering(calls).answer.data).toMatch(/^"HTTP\/1\.1 201/);
    const syncs = calls.filter((c) => /^(fsync|fdatasync|sync_file_range)$/.test(c.name) && c.target.startsWith(dir));
    expect(syncs).toEqual([]);
  }, 300_000);

  it('runs PostgreSQL with fsync on, its WAL synced by fsync, and with fsync off when not durable', async () => {
    const show = async (embeddedDurable: boolean) => {
      const dir = await mkdtemp(join(tmpdir(), 'trellis-durable-'));
      dirs.push(dir);
      const db = await openDatabase(
        { databaseUrl: null, dataDir: dir },
        validateSettings({ database: { embeddedDurable } }).database,
      );
      try {
        const setting = async (name: string) => (await db.query<Record<string, string>>(`SHOW ${name}`)).rows[0]![name];
        return [await setting('fsync'), await setting('wal_sync_method'), await setting('synchronous_commit')];
      } finally {
        await db.close();
      }
    };
    expect(await show(true)).toEqual(['on', 'fsync', 'on']);
    expect((await show(false))[0]).toBe('off');
  }, 120_000);
});
