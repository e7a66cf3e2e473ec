// SIGTERM under load (issue 44, item 1): `trellis serve` answers /health/ready 503 at once, keeps serving for
// health.shutdownDelayInSeconds so that a load balancer stops sending first, lets the upload in flight finish, and
// exits 0.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backendsUnderTest, scratchPostgresDatabase, serviceClient, userWithToken } from '../helpers/harness.js';
import { freePort, spawnCli, waitForHttp } from '../helpers/process.js';

const CHUNK = Buffer.alloc(64 * 1024, 7);
const CHUNKS = 6;

/** A request body that sends one chunk every `everyMs`, and says when its first chunk has gone. */
function trickle(everyMs: number): { body: ReadableStream<Uint8Array>; firstSent: Promise<void> } {
  let sent = 0;
  let first = () => {};
  const firstSent = new Promise<void>((resolve) => (first = resolve));
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent > 0) await new Promise((resolve) => setTimeout(resolve, everyMs));
      if (sent === CHUNKS) return controller.close();
      controller.enqueue(new Uint8Array(CHUNK));
      sent++;
      if (sent === 1) first();
    },
  });
  return { body, firstSent };
}

describe.each(backendsUnderTest())('SIGTERM on trellis serve [%s]', (backend) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('turns readiness 503 first, serves during the delay, lets the upload in flight finish, exits 0', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'trellis-sigterm-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const configPath = join(dataDir, 'trellis.yaml');
    await writeFile(configPath, 'health:\n  shutdownDelayInSeconds: 2\nmetrics:\n  port: 0\n');
    const env: Record<string, string> = { DATA_DIR: dataDir, TRELLIS_CONFIG: configPath };
    if (backend === 'postgres') {
      const scratch = await scratchPostgresDatabase();
      cleanups.push(() => scratch.drop());
      env.DATABASE_URL = scratch.url;
    }
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = spawnCli(['serve'], { ...env, PORT: String(port) });
    cleanups.push(async () => {
      if (server.exitCode === null) server.kill('SIGKILL');
    });
    await waitForHttp(`${url}/health/live`, 150_000);
    const client = serviceClient(url);
    const { token } = await userWithToken(client, 'sigterm@example.com');
    const created = await client.request('POST', '/', { token, body: { type: 'Note' } });
    expect(created.status).toBe(201);
    const id = created.headers.get('location')!.slice(1);
    expect((await client.request('GET', '/health/ready')).status).toBe(200);

    const { body, firstSent } = trickle(400);
    const upload = fetch(`${url}/${id}/file`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${token}`,
        'upload-complete': '?1',
        'content-disposition': 'attachment; filename="slow.bin"',
        'content-type': 'application/octet-stream',
      },
      body,
      duplex: 'half',
    } as RequestInit);
    await firstSent;
    await new Promise((resolve) => setTimeout(resolve, 200));
    server.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));

    const ready = await client.request('GET', '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.json).toMatchObject({ status: 503, instance: 'shutting-down', database: 'up', blobStore: 'up' });
    // Still serving meanwhile: the load balancer has the delay to notice.
    expect((await client.request('GET', '/health/live')).status).toBe(200);

    const uploaded = await upload;
    expect(uploaded.status).toBe(201);
    const finished = await server.done;
    expect(finished.code).toBe(0);
    expect(finished.stderr).toContain('SIGTERM received, shutting down');
    await expect(fetch(`${url}/health/live`)).rejects.toThrow();
  }, 180_000);
});
