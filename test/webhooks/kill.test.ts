// `kill -9` of the instance delivering a webhook: a second `trellis serve` on the same PostgreSQL takes the webhook
// over once the killed one's lease runs out and delivers from the last event a receiver acknowledged, so every
// event arrives (at least once), in commit order.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backendsUnderTest, scratchPostgresDatabase, serviceClient, userWithToken } from '../helpers/harness.js';
import { serveInstance } from '../helpers/process.js';
import { startReceiver } from '../helpers/receiver.js';

describe.skipIf(!backendsUnderTest().includes('postgres'))('webhooks across a killed instance [postgres]', () => {
  it('go on from the last acknowledged event on another instance, losing none', async () => {
    const database = await scratchPostgresDatabase();
    const dirs = [await mkdtemp(join(tmpdir(), 'trellis-hook-a-')), await mkdtemp(join(tmpdir(), 'trellis-hook-b-'))];
    // One key for both instances, as docs/webhooks.md asks of several instances on one database.
    const env = { DATABASE_URL: database.url, TRELLIS_WEBHOOK_KEY: randomBytes(32).toString('base64') };
    const settings = { webhooks: { allowedHosts: ['127.0.0.1'], timeoutInSeconds: 1 } };
    const receiver = await startReceiver();
    // Slow answers, so that the kill lands while deliveries are under way.
    receiver.script.push(...Array.from({ length: 200 }, () => ({ delayMs: 150 })));
    const a = await serveInstance(dirs[0]!, settings, env);
    let b: Awaited<ReturnType<typeof serveInstance>> | null = null;
    try {
      const client = serviceClient(a.url);
      const alice = await userWithToken(client, 'alice@hook-kill.dev');
      const made = await client.request('POST', '/webhooks', {
        token: alice.token,
        body: { url: receiver.url, events: ['created'] },
      });
      expect(made.status).toBe(201);
      const created: string[] = [];
      for (let n = 0; n < 10; n++) {
        const res = await client.request('POST', '/', { token: alice.token, body: { type: 'Doc', data: { n } } });
        created.push(res.headers.get('location')!.slice(1));
      }
      await receiver.until(4);
      a.kill('SIGKILL');
      await a.done;
      const before = receiver.hits.length;
      b = await serveInstance(dirs[1]!, settings, env);
      const docs = () => receiver.hits.filter((x) => x.json?.data?.type === 'Doc').map((x) => x.json.data.id as string);
      const deadline = Date.now() + 60_000;
      while (new Set(docs()).size < created.length && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 200));
      expect(receiver.hits.length).toBeGreaterThan(before);
      // Every node in order of creation; an event whose answer the kill cut off may come twice, never out of order.
      const firsts = docs().filter((id, i, all) => all.indexOf(id) === i);
      expect(firsts).toEqual(created);
      const ids = receiver.hits.map((x) => x.headers['webhook-id']);
      expect(ids.filter((id, i) => i > 0 && id === ids[i - 1]).length).toBeLessThanOrEqual(1);
    } finally {
      for (const instance of [a, b])
        if (instance && instance.exitCode === null && instance.signalCode === null) instance.kill();
      await Promise.all([a.done, b?.done]);
      await receiver.close();
      await database.drop();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
