// Spawning the real CLI as a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The CLI as installed: dist/, which the global setup brings up to date with src/ (scripts/build.js). */
const ENTRY = join(ROOT, 'bin', 'trellis.js');

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function spawnCli(
  args: string[],
  env: Record<string, string>,
  input?: string,
  cwd = ROOT,
): ChildProcess & { done: Promise<Finished> } {
  const child = spawn(process.execPath, [ENTRY, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => (stdout += c));
  child.stderr!.on('data', (c) => (stderr += c));
  if (input !== undefined) child.stdin!.end(input);
  else child.stdin!.end();
  const done = new Promise<Finished>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return Object.assign(child, { done });
}

export const runCli = (args: string[], env: Record<string, string>, input?: string, cwd?: string) =>
  spawnCli(args, env, input, cwd).done;

/** Waits until `url` answers (any status). */
export async function waitForHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const start = Date.now();
  for (;;) {
    try {
      await fetch(url);
      return;
    } catch {
      if (Date.now() - start > timeoutMs) throw new Error(`${url} did not come up`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export type Instance = ChildProcess & { done: Promise<Finished>; url: string };

/**
 * `trellis serve` in a child process on DATA_DIR `dataDir` with `settings` (written to a file there as the
 * configuration), resolved once it answers; killed when it does not answer within `timeoutMs` (a new embedded
 * database takes long on a loaded machine). `env` adds DATABASE_URL, credentials and the like.
 */
export async function serveInstance(
  dataDir: string,
  settings: Record<string, unknown>,
  env: Record<string, string> = {},
  timeoutMs = 150_000,
): Promise<Instance> {
  const config = join(dataDir, 'test-settings.json'); // JSON is YAML
  await writeFile(config, JSON.stringify(settings));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawnCli(['serve'], { DATA_DIR: dataDir, PORT: String(port), TRELLIS_CONFIG: config, ...env });
  const exited = child.done.then((end) => {
    throw new Error(`trellis serve exited with ${end.code} before answering: ${end.stderr}`);
  });
  try {
    await Promise.race([waitForHttp(`${url}/error/404/not-found`, timeoutMs), exited]);
  } catch (error) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await child.done;
    throw error;
  }
  return Object.assign(child, { url });
}
