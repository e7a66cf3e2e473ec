// backup:load throughput, measured by bench/backup-load.ts in its own process (with its own PostgreSQL server).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { type Bench, ROOT, type Settings } from '../lib/context.js';
import { failedRow } from '../lib/measure.js';

export const backupLoadName = (settings: Settings) => `backup:load ${settings.quick ? '20k' : '1M'} elements`;

/** Runs bench/backup-load.ts; resolves to its exit code and what it printed on stdout. */
function runBackupLoad(elements: number): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'bench/backup-load.ts'), '--elements', String(elements), '--backend', 'postgres'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    // Its progress lines are ours too.
    child.stderr.setEncoding('utf8').on('data', (d: string) => process.stderr.write(d));
    child.on('error', reject);
    child.on('close', (c) => resolve({ code: c ?? 1, stdout: out }));
  });
}

export async function backupLoadScenario(bench: Bench) {
  const name = backupLoadName(bench.settings);
  const elements = bench.settings.quick ? 20_000 : 1_000_000;
  bench.log(`${name}: running bench/backup-load.ts`);
  const target = '>= 5,000 elements/s';
  const { code, stdout } = await runBackupLoad(elements);
  const result = ((): { loadRate?: number; loadSeconds?: number } | null => {
    try {
      return JSON.parse(stdout) as { loadRate?: number; loadSeconds?: number };
    } catch {
      return null; // reported below
    }
  })();
  if (code !== 0 || typeof result?.loadRate !== 'number') {
    bench.rows.push(failedRow(bench, name, 'postgres', `bench/backup-load.ts exited with ${code}`, target));
    return;
  }
  bench.rows.push({
    scenario: name,
    backend: 'postgres',
    status: 'measured',
    target,
    elementsPerSecond: result.loadRate,
    met: result.loadRate >= 5000,
    note: `${result.loadSeconds!.toFixed(1)} s`,
  });
}
