// Spawning the real CLI as a child process.
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ENTRY = fileURLToPath(new URL('./cli-entry.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

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
  // tsx is resolved from the repository, whatever the working directory.
  const child = spawn(process.execPath, ['--import', TSX, ENTRY, ...args], {
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
