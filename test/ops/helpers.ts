// What the SIGTERM tests share: a request body that trickles in, and the environment of a `trellis serve` child on
// either backend with a settings file of the test's own.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BackendName, scratchPostgresDatabase } from '../helpers/harness.js';

/** `chunks` of 64 KiB (the n-th filled with n), one every `everyMs`; `firstSent` once the first has gone. */
export function trickle(chunks: number, everyMs: number) {
  let sent = 0;
  let first = () => {};
  const firstSent = new Promise<void>((resolve) => (first = resolve));
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent > 0) await new Promise((resolve) => setTimeout(resolve, everyMs));
      if (sent === chunks) return controller.close();
      controller.enqueue(new Uint8Array(64 * 1024).fill(sent + 1));
      sent++;
      if (sent === 1) first();
    },
  });
  return { body, firstSent };
}

/**
 * A new DATA_DIR with `settingsYaml` as its configuration file, and the environment that serves it on `backend` (a
 * scratch PostgreSQL database for 'postgres'); what to remove afterwards goes into `cleanups`.
 */
export async function serveEnvironment(
  backend: BackendName,
  settingsYaml: string,
  cleanups: Array<() => Promise<void>>,
): Promise<{ dataDir: string; env: Record<string, string> }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'trellis-sigterm-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const configPath = join(dataDir, 'trellis.yaml');
  await writeFile(configPath, settingsYaml);
  const env: Record<string, string> = { DATA_DIR: dataDir, TRELLIS_CONFIG: configPath };
  if (backend === 'postgres') {
    const scratch = await scratchPostgresDatabase();
    cleanups.push(() => scratch.drop());
    env.DATABASE_URL = scratch.url;
  }
  return { dataDir, env };
}
