// Small process and network helpers shared by the throw-away servers (pg-cluster.ts, ceph-cluster.ts).

import { type SpawnOptions, spawn } from 'node:child_process';
import { accessSync, constants as fsConstants, readFileSync, realpathSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `cmd` in `dirs`, in their order. */
export function which(cmd: string, dirs: string[]): string | null {
  for (const dir of dirs) if (dir && isExecutable(join(dir, cmd))) return join(dir, cmd);
  return null;
}

export interface Captured {
  code: number;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `cmd` and captures its output; resolves whatever its exit code. */
export function capture(cmd: string, args: string[], opts: SpawnOptions = {}): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), signal, stdout, stderr }));
  });
}

/** A TCP port that is free on 127.0.0.1 right now (bind port 0, read, close). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export function tcpAccepts(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/** The last `lines` lines of a log file, or `missing` when it cannot be read. */
export function tail(file: string, lines: number, missing: string): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return missing;
  }
}

/** True when the module at `moduleUrl` is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/** Keeps the process alive until a signal ends it (the servers' own handlers stop them). */
export function waitForever(): Promise<never> {
  return new Promise(() => {
    setInterval(() => {}, 1 << 30);
  });
}
