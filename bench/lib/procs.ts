// Child processes of the benchmark (servers under test, baselines): started with their output in a log file,
// ready once an HTTP probe answers, stopped with SIGTERM (SIGKILL after a grace period), and killed on exit.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';

export interface ServerProcess {
  pid: number;
  baseUrl: string;
  logFile: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
let handlersInstalled = false;

function installHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  // Only the processes this benchmark started, by their own handle.
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

export function tailOf(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startServer(options: {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  port: number;
  readyPath: string;
  logFile: string;
  timeoutMs?: number;
}): Promise<ServerProcess> {
  installHandlers();
  const out = openSync(options.logFile, 'a');
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', out, out],
  });
  running.add(child);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = { code, signal };
      running.delete(child);
      resolve();
    }),
  );
  const baseUrl = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    if (exited)
      throw new Error(
        `${options.name} exited during start-up (${JSON.stringify(exited)}):\n${tailOf(options.logFile)}`,
      );
    try {
      const response = await fetch(baseUrl + options.readyPath, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status < 500) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${options.name} did not become ready:\n${tailOf(options.logFile)}`);
    }
    await sleep(100);
  }
  return {
    pid: child.pid!,
    baseUrl,
    logFile: options.logFile,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** Resident set size of a process in bytes (VmRSS of /proc/<pid>/status), or null when unreadable. */
export function rssOf(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Samples a process' RSS every `ms` until stopped; reports the value at the start and the maximum seen. */
export function sampleRss(pid: number, ms = 25): { stop(): { before: number; max: number } | null } {
  const before = rssOf(pid);
  let max = before ?? 0;
  const timer = setInterval(() => {
    const now = rssOf(pid);
    if (now !== null && now > max) max = now;
  }, ms);
  return {
    stop() {
      clearInterval(timer);
      const last = rssOf(pid);
      if (last !== null && last > max) max = last;
      return before === null ? null : { before, max };
    },
  };
}

/**
 * Removes a directory tree with `rm -rf`. fs.promises.rm walks it inside this process: removing a backup folder of
 * 200k files raised the process' peak RSS to 429 MiB (and the 1M backup bench's to about 2.8 GB), against 44 MiB
 * for the child process, in about the same time.
 */
export async function removeTree(path: string): Promise<void> {
  await promisify(execFile)('rm', ['-rf', '--', path]);
}
