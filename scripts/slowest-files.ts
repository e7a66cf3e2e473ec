// The ten slowest test files of a vitest run, from its JSON report: where the suite's time goes, printed at the end
// of `npm test` so that a file growing slow is seen the day it does.
import { readFile } from 'node:fs/promises';
import { relative } from 'node:path';

interface FileResult {
  name: string;
  startTime: number;
  endTime: number;
}

/** The lines to print: the `count` files that took longest, slowest first, and the sum over all files. */
export function slowestFiles(results: FileResult[], root: string, count = 10): string[] {
  const timed = results
    .map((r) => ({ file: relative(root, r.name), seconds: (r.endTime - r.startTime) / 1000 }))
    .filter((r) => Number.isFinite(r.seconds))
    .sort((a, b) => b.seconds - a.seconds);
  const total = timed.reduce((sum, r) => sum + r.seconds, 0);
  return [
    `the ${Math.min(count, timed.length)} slowest of ${timed.length} test files (${total.toFixed(0)}s of file time in all):`,
    ...timed.slice(0, count).map((r) => `  ${r.seconds.toFixed(1).padStart(7)}s  ${r.file}`),
  ];
}

/** Reads vitest's JSON report; null when the run wrote none (interrupted before the end). */
export async function readReport(file: string): Promise<FileResult[] | null> {
  try {
    return (JSON.parse(await readFile(file, 'utf8')) as { testResults: FileResult[] }).testResults;
  } catch {
    return null;
  }
}
