// SIGTERM while a 1 GiB download and a resumable upload run (issue 44, item 1): the download ends with every byte,
// the upload's append in flight is kept at its offset, and after a restart on the same data the client finishes the
// upload from that offset.
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { backendsUnderTest, serviceClient, userWithToken } from '../helpers/harness.js';
import { freePort, spawnCli, waitForHttp } from '../helpers/process.js';
import { serveEnvironment, trickle } from './helpers.js';

const MiB = 1024 * 1024;
const FILE_MIB = 1024;

/** The `i`-th MiB of the big file: different in every MiB, so that a byte out of place changes the digest. */
function mebibyte(i: number): Uint8Array {
  const block = Buffer.alloc(MiB, i % 251);
  block.writeUInt32BE(i, 0);
  return new Uint8Array(block);
}

function bigBody(): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i === FILE_MIB) return controller.close();
      controller.enqueue(mebibyte(i++));
    },
  });
}

function bigDigest(): string {
  const hash = createHash('sha256');
  for (let i = 0; i < FILE_MIB; i++) hash.update(mebibyte(i));
  return hash.digest('hex');
}

describe.each(backendsUnderTest())('SIGTERM during transfers [%s]', (backend) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('finishes a 1 GiB download byte for byte and keeps a resumable upload at its offset for the next instance', async () => {
    // Appends of 64 KiB chunks: below the default minimum (5 MiB), which is for S3's parts.
    const settings = 'metrics:\n  port: 0\nfile:\n  uploadMinChunkSizeInBytes: 65536\n';
    const { env } = await serveEnvironment(backend, settings, cleanups);
    const start = async () => {
      const port = await freePort();
      const server = spawnCli(['serve'], { ...env, PORT: String(port) });
      cleanups.push(async () => {
        if (server.exitCode === null) server.kill('SIGKILL');
      });
      const url = `http://127.0.0.1:${port}`;
      await waitForHttp(`${url}/health/live`, 150_000);
      return { server, url, client: serviceClient(url) };
    };
    const first = await start();
    const { token } = await userWithToken(first.client, 'transfers@example.com');
    const authorization = `Bearer ${token}`;
    const newNode = async () => {
      const res = await first.client.request('POST', '/', { token, body: { type: 'Note' } });
      expect(res.status).toBe(201);
      return res.headers.get('location')!.slice(1);
    };
    const big = await newNode();
    const stored = await fetch(`${first.url}/${big}/file`, {
      method: 'PUT',
      headers: { authorization, 'upload-complete': '?1', 'content-disposition': 'attachment; filename="big.bin"' },
      body: bigBody(),
      duplex: 'half',
    } as RequestInit);
    expect(stored.status).toBe(201);
    await stored.arrayBuffer();

    // A resumable upload with 64 KiB stored, then an append that trickles 8 chunks, 250 ms apart.
    const target = await newNode();
    const started = await fetch(`${first.url}/${target}/file`, {
      method: 'POST',
      headers: { authorization, 'upload-complete': '?0' },
      body: new Uint8Array(64 * 1024).fill(0),
    });
    expect(started.status).toBe(204);
    const uploadPath = started.headers.get('location')!;
    const appended = trickle(8, 250);
    const append = fetch(`${first.url}${uploadPath}`, {
      method: 'PATCH',
      headers: {
        authorization,
        'content-type': 'application/partial-upload',
        'upload-offset': String(64 * 1024),
        'upload-complete': '?0',
      },
      body: appended.body,
      duplex: 'half',
    } as RequestInit);

    const download = await fetch(`${first.url}/${big}/file`, { headers: { authorization } });
    expect(download.status).toBe(200);
    const reader = download.body!.getReader();
    const hash = createHash('sha256');
    let received = 0;
    const firstChunk = await reader.read();
    hash.update(firstChunk.value!);
    received += firstChunk.value!.byteLength;
    await appended.firstSent;
    first.server.kill('SIGTERM');
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      hash.update(value);
      received += value.byteLength;
    }
    expect(received).toBe(FILE_MIB * MiB);
    expect(hash.digest('hex')).toBe(bigDigest());
    const appendAnswer = await append;
    expect(appendAnswer.status).toBe(204);
    expect(appendAnswer.headers.get('upload-offset')).toBe(String(9 * 64 * 1024));
    expect((await first.server.done).code).toBe(0);

    // The next instance on the same data: the upload is where the append left it, and finishes from there.
    const second = await start();
    const state = await fetch(`${second.url}${uploadPath}`, { method: 'HEAD', headers: { authorization } });
    expect(state.status).toBe(204);
    expect(state.headers.get('upload-offset')).toBe(String(9 * 64 * 1024));
    const last = await fetch(`${second.url}${uploadPath}`, {
      method: 'PATCH',
      headers: {
        authorization,
        'content-type': 'application/partial-upload',
        'upload-offset': String(9 * 64 * 1024),
        'upload-complete': '?1',
      },
      body: new Uint8Array(10).fill(9),
    });
    expect(last.status).toBe(201);
    const file = new Uint8Array(
      await (await fetch(`${second.url}/${target}/file`, { headers: { authorization } })).arrayBuffer(),
    );
    expect(file.byteLength).toBe(9 * 64 * 1024 + 10);
    for (let chunk = 0; chunk < 9; chunk++) expect(file[chunk * 64 * 1024]).toBe(chunk);
    expect(file[9 * 64 * 1024]).toBe(9);
    second.server.kill('SIGTERM');
    expect((await second.server.done).code).toBe(0);
  }, 600_000);
});
