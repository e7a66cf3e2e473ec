// `node --import tsx bench/start-time.ts [--dir DIR] [--runs N] [-- COMMAND...]`: how long a start takes, from
// spawning COMMAND (default `npm start`) in DIR (default this checkout) to the first 200 of GET /health/ready.
//
// The first run starts on a DATA_DIR that does not exist yet (what the first `npm start` of a fresh clone meets),
// the later runs on the one the first left (a later start). Each run is stopped with SIGTERM to its process group
// once ready. The service listens on a free port, its metrics listener on another; one line per run goes to stdout.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, sleep } from '../scripts/process-tools.js';

/** A start that has not answered by then is reported as hung. */
const GIVE_UP_MS = 180_000;

function options(argv: string[]) {
  const split = argv.indexOf('--');
  const own = split === -1 ? argv : argv.slice(0, split);
  const command = split === -1 ? ['npm', 'start'] : argv.slice(split + 1);
  const value = (name: string) => {
    const at = own.indexOf(name);
    return at === -1 ? undefined : own[at + 1];
  };
  return {
    dir: resolve(value('--dir') ?? '.'),
    runs: Number(value('--runs') ?? 3),
    command,
  };
}

async function ready(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** Starts `command`, returns the milliseconds to the first ready answer, and stops it. */
async function timeStart(command: string[], dir: string, env: NodeJS.ProcessEnv): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: dir,
    env: { ...env, PORT: String(port) },
    detached: true,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  try {
    while (!(await ready(`http://127.0.0.1:${port}/health/ready`))) {
      if (exitCode !== undefined) throw new Error(`${command.join(' ')} exited with ${exitCode} before it was ready`);
      if (performance.now() - started > GIVE_UP_MS) throw new Error(`${command.join(' ')} not ready in time`);
      await sleep(20);
    }
    return performance.now() - started;
  } finally {
    if (exitCode === undefined) process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
}

const { dir, runs, command } = options(process.argv.slice(2));
const scratch = await mkdtemp(join(tmpdir(), 'trellis-start-'));
try {
  const config = join(scratch, 'settings.yaml');
  // The metrics listener on any free port: a fixed one may be taken by another server on the machine.
  await writeFile(config, 'metrics:\n  port: 0\nhealth:\n  shutdownDelayInSeconds: 0\n');
  const env = { ...process.env, DATA_DIR: join(scratch, 'data'), TRELLIS_CONFIG: config, LOG_LEVEL: 'warn' };
  for (let run = 1; run <= runs; run++) {
    const ms = await timeStart(command, dir, env);
    const what = run === 1 ? 'new DATA_DIR' : 'existing DATA_DIR';
    process.stdout.write(`run ${run} (${what}): ready after ${(ms / 1000).toFixed(2)} s\n`);
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
