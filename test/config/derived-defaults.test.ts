// Defaults bounded by other settings follow them: a setting given alone is never refused because a default of
// another key contradicts it (the default moves into the range the given settings allow). Only settings given
// explicitly can contradict each other; that is still refused, naming the key and the value it contradicts.
// Here the real CLI; the rules themselves are tested in test/unit/config/load.test.ts.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, serveInstance } from '../helpers/process.js';

const MiB = 1024 * 1024;

describe('derived defaults', () => {
  describe('the real CLI', () => {
    it('starts with a lone file.maxFileSizeInBytes and publishes the chunk limits that follow it', async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'trellis-derived-'));
      try {
        const server = await serveInstance(dataDir, { file: { maxFileSizeInBytes: MiB } });
        try {
          const res = await fetch(`${server.url}/instance-configuration`);
          expect(res.status).toBe(200);
          expect(((await res.json()) as { file: unknown }).file).toMatchObject({
            maxFileSizeInBytes: MiB,
            uploadMinChunkSizeInBytes: MiB,
            uploadMaxChunkSizeInBytes: MiB,
          });
        } finally {
          server.kill('SIGTERM');
          expect((await server.done).code).toBe(0);
        }
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    }, 180_000);

    it('config:check refuses explicit contradictions with exit 78 and one line', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'trellis-derived-'));
      try {
        const path = join(dir, 'trellis.yaml');
        await writeFile(path, 'file:\n  maxFileSizeInBytes: 1048576\n  uploadMaxChunkSizeInBytes: 2097152\n');
        const bad = await runCli(['config:check'], { TRELLIS_CONFIG: path });
        expect(bad.code).toBe(78);
        expect(bad.stderr.trim()).toBe(
          'trellis: invalid configuration: file.uploadMaxChunkSizeInBytes: 2097152 exceeds file.maxFileSizeInBytes (1048576)',
        );
        await writeFile(path, 'file:\n  maxFileSizeInBytes: 1048576\n');
        const good = await runCli(['config:check'], { TRELLIS_CONFIG: path });
        expect(good.code).toBe(0);
        expect(JSON.parse(good.stdout.slice(0, good.stdout.lastIndexOf('}') + 1)).file).toMatchObject({
          maxFileSizeInBytes: MiB,
          uploadMinChunkSizeInBytes: MiB,
          uploadMaxChunkSizeInBytes: MiB,
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 60_000);
  });
});
