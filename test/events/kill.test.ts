// Resume after `kill -9` of the instance that served the stream: two `trellis serve` processes on one PostgreSQL,
// the stream on the first, writers on both; the first is killed mid-stream and the client resumes on the second
// from its last cursor, receiving every change exactly once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { follow } from '../helpers/events.js';
import { backendsUnderTest, scratchPostgresDatabase, serviceClient, userWithToken } from '../helpers/harness.js';
import { serveInstance } from '../helpers/process.js';

describe.skipIf(!backendsUnderTest().includes('postgres'))('change feed across a killed instance [postgres]', () => {
  it('resumes on the other instance with every event exactly once', async () => {
    const database = await scratchPostgresDatabase();
    const dirs = [await mkdtemp(join(tmpdir(), 'trellis-kill-a-')), await mkdtemp(join(tmpdir(), 'trellis-kill-b-'))];
    const env = { DATABASE_URL: database.url };
    const a = await serveInstance(dirs[0]!, {}, env);
    const b = await serveInstance(dirs[1]!, {}, env);
    try {
      const client = serviceClient(b.url);
      const alice = await userWithToken(client, 'alice@kill.dev');
      const feed = follow(a.url, '/events', alice.token);
      await feed.until((r) => r.length > 0, 10_000);
      const created: string[] = [];
      const write = async (n: number) => {
        const res = await client.request('POST', '/', { token: alice.token, body: { type: 'Doc', data: { n } } });
        created.push(res.headers.get('location')!.slice(1));
      };
      for (let n = 0; n < 10; n++) await write(n);
      await feed.until((r) => r.filter((m) => m.data.type === 'Doc').length >= 5, 10_000);
      a.kill('SIGKILL');
      await a.done;
      const cursor = feed.lastEventId;
      const before = feed.changes().filter((m) => m.data.type === 'Doc');
      feed.close();
      for (let n = 10; n < 20; n++) await write(n);

      const resumed = follow(b.url, '/events', alice.token, cursor);
      await resumed.until((r) => r.filter((m) => m.data.type === 'Doc').length + before.length >= 20, 10_000);
      await sleep(300);
      const after = resumed.changes().filter((m) => m.data.type === 'Doc');
      resumed.close();
      expect([...before, ...after].map((m) => m.data.id)).toEqual(created);
    } finally {
      for (const instance of [a, b]) if (instance.exitCode === null && instance.signalCode === null) instance.kill();
      await Promise.all([a.done, b.done]);
      await database.drop();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
