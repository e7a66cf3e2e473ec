// The commands as the CLI runs them (`main` in-process): exit codes, messages, progress output; and the progress
// bar itself.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lineProgress } from '../../src/backup/progress.js';
import { main } from '../../src/cli/main.js';
import { backendsUnderTest } from '../helpers/harness.js';
import { captureIO, REFERENCE, tempDir, writeBackup } from './helpers.js';

for (const backend of backendsUnderTest()) {
  describe(`backup commands through the CLI [${backend}]`, () => {
    const env: Record<string, string> = { LOG_LEVEL: 'silent' };
    let dataDir: string;
    let dropDatabase = async () => {};

    beforeAll(async () => {
      dataDir = await tempDir('trellis-backup-cli-');
      env.DATA_DIR = dataDir;
      if (backend === 'postgres') {
        const admin = inject('pgUrl')!;
        const name = `trellis_backup_cli_${randomBytes(6).toString('hex')}`;
        const client = new pg.Client({ connectionString: admin });
        await client.connect();
        await client.query(`CREATE DATABASE ${name}`);
        await client.end();
        const url = new URL(admin);
        url.pathname = `/${name}`;
        env.DATABASE_URL = url.toString();
        dropDatabase = async () => {
          const c = new pg.Client({ connectionString: admin });
          await c.connect();
          await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          await c.end();
        };
      }
    });
    afterAll(async () => {
      await dropDatabase();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('backup:load loads the reference dataset, reporting progress and warnings on stderr', async () => {
      const io = captureIO();
      expect(await main(['backup:load', REFERENCE], env, io)).toBe(0);
      expect(io.stdout.join('\n')).toMatch(
        /^Loaded 782 nodes, 1606 relations, 0 files, 82 users and 89 tokens in [\d.]+ s \(\d+ elements\/s\), with 4 warning\(s\)\.$/,
      );
      const stderr = io.stderr.join('\n');
      expect(stderr).toMatch(/^loading: 2,388 elements in [\d.]+ s/m);
      expect(stderr).toContain('warning: node/security/edgeCase/tokenWithNoOwner/token.json: token has no owning user');
      expect(stderr).not.toContain('\x1b['); // no terminal: plain lines
    });

    it('backup:load refuses the now non-empty database without --force, and a broken backup even with it', async () => {
      const io = captureIO();
      expect(await main(['backup:load', REFERENCE], env, io)).toBe(1);
      expect(io.stderr.join('\n')).toContain('the database already holds elements; use --force');

      const broken = await writeBackup({ 'node/data.json': '{"type": "Data",' });
      const forced = captureIO();
      expect(await main(['backup:load', broken, '--force'], env, forced)).toBe(1);
      expect(forced.stderr.join('\n')).toContain(
        'backup:load: invalid backup, nothing was loaded: node/data.json: not valid JSON',
      );

      const usage = captureIO();
      expect(await main(['backup:load'], env, usage)).toBe(2);
      expect(usage.stderr.join('\n')).toContain('usage: trellis backup:load <dir> [--force]');
    });

    it('backup:create writes the backup, and refuses to write into a folder that is not empty', async () => {
      const out = join(await tempDir(), 'backup');
      const io = captureIO();
      expect(await main(['backup:create', out], env, io)).toBe(0);
      expect(io.stdout.join('\n')).toMatch(/^Wrote 782 nodes, 1606 relations and 0 files to .* in [\d.]+ s\.$/);
      expect(io.stderr.join('\n')).toMatch(/^backing up: 2,388 elements in/m);
      expect(existsSync(join(out, 'summary.json'))).toBe(true);
      const again = captureIO();
      expect(await main(['backup:create', out], env, again)).toBe(1);
      expect(again.stderr.join('\n')).toContain('is not empty');
    });
  });
}

describe('progress output', () => {
  it('redraws one bar line in place on a terminal, keeping notes visible', () => {
    const lines: string[] = [];
    const progress = lineProgress((l) => lines.push(l), { tty: true, intervalMs: 0 });
    progress.start('loading', 10);
    progress.tick(5);
    progress.note('warning: something');
    progress.tick(5);
    progress.done();
    expect(lines[0]).toMatch(/^loading \[-{24}\] {3}0% 0\/10 elements/);
    expect(lines[1]).toMatch(/^\x1b\[1A\x1b\[2Kloading \[#{12}-{12}\] {2}50% 5\/10 elements, [\d,]+\/s$/);
    expect(lines[2]).toBe('warning: something');
    expect(lines[3]).toMatch(/^loading \[#{24}\] 100% 10\/10/); // after a note: a new line, not over the note
    expect(lines[4]).toMatch(/^\x1b\[1A\x1b\[2Kloading: 10 elements in [\d.]+ s/);
  });

  it('writes plain lines without escape codes otherwise', () => {
    const lines: string[] = [];
    const progress = lineProgress((l) => lines.push(l), { tty: false, intervalMs: 0 });
    progress.start('validating', 4);
    progress.tick(2);
    progress.done();
    expect(lines).toEqual([
      expect.stringMatching(/^validating: 2\/4 elements, [\d,]+\/s \(50%\)$/),
      expect.stringMatching(/^validating: 2 elements in/),
    ]);
  });
});
