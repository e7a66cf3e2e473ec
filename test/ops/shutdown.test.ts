// SIGTERM under load (issue 44, item 1): `trellis serve` answers /health/ready 503 at once, keeps serving for
// health.shutdownDelayInSeconds so that a load balancer stops sending first, lets the upload in flight finish, and
// exits 0 without waiting for the connections left idle to time out.
import { afterAll, describe, expect, it } from 'vitest';
import { backendsUnderTest, serviceClient, userWithToken } from '../helpers/harness.js';
import { freePort, spawnCli, waitForHttp } from '../helpers/process.js';
import { serveEnvironment, trickle } from './helpers.js';

const CHUNKS = 6;

describe.each(backendsUnderTest())('SIGTERM on trellis serve [%s]', (backend) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('turns readiness 503 first, serves during the delay, lets the upload in flight finish, exits 0', async () => {
    const { env } = await serveEnvironment(
      backend,
      'health:\n  shutdownDelayInSeconds: 2\nmetrics:\n  port: 0\n',
      cleanups,
    );
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

    const { body, firstSent } = trickle(CHUNKS, 400);
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
    // The upload's connection stays open (keep-alive) after its answer: the exit does not wait for the keep-alive
    // timeout (72 s) to close it. A bound far below that timeout and far above the shutdown's own second.
    const answered = performance.now();
    const finished = await server.done;
    expect(performance.now() - answered).toBeLessThan(20_000);
    expect(finished.code).toBe(0);
    expect(finished.stderr).toContain('SIGTERM received, shutting down');
    await expect(fetch(`${url}/health/live`)).rejects.toThrow();
  }, 180_000);
});
