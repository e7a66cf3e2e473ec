// Installs Debian packages that the tests need (the PostgreSQL server, Chromium for browser tests), the way CI's
// fresh machine gets them: only as root, only where apt-get exists, and `apt-get update` at most once per process.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

export type Log = (msg: string) => void;

export const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

let updated: Promise<void> | null = null;

function run(cmd: string, args: string[], label: string): Promise<void> {
  // Child output goes to our stderr so stdout stays clean for callers (bench JSON).
  return new Promise((resolve, reject) => {
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const child = spawn(cmd, args, { stdio: ['ignore', 2, 2], env });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${label} failed (${signal ? `signal ${signal}` : `exit code ${code}`})`));
    });
  });
}

/** True when this process may install packages (root on a Debian-like system). */
export function canInstallPackages(): boolean {
  return isRoot() && (existsSync('/usr/bin/apt-get') || existsSync('/bin/apt-get'));
}

/** `apt-get install -y <packages>` (without recommended ones unless asked), after one `apt-get update`. */
export async function installDebianPackages(
  packages: string[],
  log: Log,
  { recommends = false }: { recommends?: boolean } = {},
): Promise<void> {
  if (!canInstallPackages())
    throw new Error(`cannot install ${packages.join(' ')}: needs root and apt-get (install them yourself)`);
  log(`installing Debian package(s) ${packages.join(' ')} with apt-get...`);
  const started = Date.now();
  updated ??= run('apt-get', ['update'], 'apt-get update').catch((err: unknown) => {
    updated = null;
    throw err;
  });
  await updated;
  const flags = recommends ? ['-y'] : ['-y', '--no-install-recommends'];
  await run('apt-get', ['install', ...flags, ...packages], `apt-get install ${packages.join(' ')}`);
  log(`installed ${packages.join(' ')} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
}
