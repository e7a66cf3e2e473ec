import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readReport, slowestFiles } from '../../../scripts/slowest-files.js';

describe('slowestFiles', () => {
  it('lists the slowest files first, at most `count`, with the sum over all of them', () => {
    const results = [
      { name: '/r/test/a.test.ts', startTime: 0, endTime: 1_500 },
      { name: '/r/test/b.test.ts', startTime: 1_000, endTime: 31_000 },
      { name: '/r/test/c.test.ts', startTime: 0, endTime: 4_000 },
    ];
    expect(slowestFiles(results, '/r', 2)).toEqual([
      'the 2 slowest of 3 test files (36s of file time in all):',
      '     30.0s  test/b.test.ts',
      '      4.0s  test/c.test.ts',
    ]);
  });

  it('reads the JSON report vitest wrote, and null when there is none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-slowest-'));
    try {
      const file = join(dir, 'report.json');
      await writeFile(file, JSON.stringify({ testResults: [{ name: 'x', startTime: 1, endTime: 2 }] }));
      expect(await readReport(file)).toEqual([{ name: 'x', startTime: 1, endTime: 2 }]);
      expect(await readReport(join(dir, 'missing.json'))).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
