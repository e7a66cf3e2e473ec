// The commands as the CLI runs them (`main` in-process): exit codes, messages, progress output; and the progress
// bar itself.
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { lineProgress } from '../../src/backup/progress.js';
import { main } from '../../src/cli/main.js';
import { backendsUnderTest } from '../helpers/harness.js';
import { type Finished, type Instance, serveInstance, spawnCli } from '../helpers/process.js';
import { captureIO, NOT_REGULAR, namedPipe, REFERENCE, tempDir, writeBackup } from './helpers.js';

// A backup:load that opened a named pipe waited for a writer, for ever. The pipes of these tests get one after
// WRITER_DELAY_SECONDS; a command still running after KILL_AFTER_MS (before that writer) is killed and fails the
// test. The bound covers the start of a CLI process on a loaded machine, which opens its database too.
const WRITER_DELAY_SECONDS = 120;
const KILL_AFTER_MS = 100_000;

/** The CLI in a child process, killed after KILL_AFTER_MS; with the time it took. */
async function runBounded(args: string[], env: Record<string, string>): Promise<Finished & { ms: number }> {
  const began = performance.now();
  const child = spawnCli(args, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
  const finished = await child.done;
  clearTimeout(timer);
  return { ...finished, ms: performance.now() - began };
}

/** A backup with a valid node and a named pipe among the element files. */
async function backupWithPipe(): Promise<string> {
  const dir = await writeBackup({ 'node/a.json': { type: 'Data', id: randomUUID(), data: {} } }, { version: 'dev' });
  await mkdir(join(dir, 'node/bb'));
  namedPipe(join(dir, 'node/bb/pipe.json'), WRITER_DELAY_SECONDS);
  return dir;
}

/** An element file far beyond the limits, below the largest string (which a read used to be bounded by only). */
const SPARSE_BYTES = 500 * 1024 * 1024;
/** Preloaded into a CLI process: writes its peak resident memory (KiB) to TRELLIS_TEST_MAX_RSS_FILE as it exits. */
const MAX_RSS_HOOK = `data:text/javascript;base64,${Buffer.from(
  "import { writeFileSync } from 'node:fs'; process.on('exit', () => writeFileSync(process.env.TRELLIS_TEST_MAX_RSS_FILE, String(process.resourceUsage().maxRSS)));",
).toString('base64')}`;

const PIPE_REFUSED = `backup:load: invalid backup, nothing was loaded: node/bb/pipe.json: is a named pipe (FIFO); ${NOT_REGULAR}`;

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

    // On PGlite the command creates its database first: on a busy machine that and the load took over a minute.
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
    }, 300_000);

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

    it('backup:load refuses an element nested 20,000 levels deep in one line, with exit 1', async () => {
      const id = randomUUID();
      // Serializing this for the database overflowed the stack: a RangeError and its trace.
      const dir = await writeBackup({
        'node/x.json': `{"type": "Data", "id": "${id}", "data": {"x": ${'['.repeat(20_000)}${']'.repeat(20_000)}}}`,
      });
      const io = captureIO();
      expect(await main(['backup:load', dir, '--force'], env, io)).toBe(1);
      expect(io.stderr).toEqual([
        `backup:load: invalid backup, nothing was loaded: node/x.json: element ${id}: 'data' nests objects and arrays more than 32 levels deep (the element.* settings)`,
      ]);
      expect(io.stdout).toEqual([]);
    });

    it(
      'backup:load refuses a named pipe at once and an element file of 500 MiB unread: exit 1, one line, no memory for it',
      async () => {
        /** The command in a child process, with its peak resident memory. */
        const measured = async (dir: string) => {
          const rssFile = join(await tempDir(), 'max-rss');
          const res = await runBounded(['backup:load', dir, '--force'], {
            ...env,
            NODE_OPTIONS: `--import=${MAX_RSS_HOOK}`,
            TRELLIS_TEST_MAX_RSS_FILE: rssFile,
          });
          return { ...res, maxRssBytes: 1024 * Number(await readFile(rssFile, 'utf8')) };
        };
        const pipe = await measured(await backupWithPipe());
        expect([pipe.code, pipe.stderr.trim(), pipe.stdout]).toEqual([1, PIPE_REFUSED, '']);

        // Sparse, and below the largest string: read, it took its size in memory twice over (bytes and text).
        const dir = await writeBackup({ 'node/x.json': '' }, { version: 'dev' });
        await truncate(join(dir, 'node/x.json'), SPARSE_BYTES);
        const big = await measured(dir);
        expect([big.code, big.stderr.trim(), big.stdout]).toEqual([
          1,
          expect.stringMatching(
            new RegExp(
              `^backup:load: invalid backup, nothing was loaded: node/x.json: is ${SPARSE_BYTES} bytes; an element file within the element.\\* settings is at most \\d+ bytes$`,
            ),
          ),
          '',
        ]);
        // A small element file refused at the same step (its transaction open) and the pipe are what the process
        // takes anyway; their peaks vary by about 100 MiB between runs on Node 24. Reading the big file would take
        // its size at least once more.
        const small = await measured(await writeBackup({ 'node/x.json': 'not json' }, { version: 'dev' }));
        expect([small.code, small.stderr.trim()]).toEqual([
          1,
          expect.stringMatching(/^backup:load: invalid backup, nothing was loaded: node\/x\.json: not valid JSON/),
        ]);
        const baseline = Math.max(pipe.maxRssBytes, small.maxRssBytes);
        expect(big.maxRssBytes - baseline).toBeLessThan(SPARSE_BYTES / 2);
      },
      3 * KILL_AFTER_MS + 20_000,
    );

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

describe('backup:load handed to a running embedded server over its admin socket', () => {
  let dataDir: string;
  let server: Instance;
  beforeAll(async () => {
    dataDir = await tempDir('trellis-backup-serve-');
    server = await serveInstance(dataDir, {}, { LOG_LEVEL: 'silent' });
  }, 180_000);
  afterAll(async () => {
    if (server && server.exitCode === null) server.kill('SIGKILL');
    await server?.done;
  });

  it(
    'refuses a named pipe at once, and the server answers requests while the command runs',
    async () => {
      const began = performance.now();
      const cli = spawnCli(['backup:load', await backupWithPipe()], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
      const timer = setTimeout(() => cli.kill('SIGKILL'), KILL_AFTER_MS);
      let running = true;
      const done = cli.done.finally(() => {
        running = false;
        clearTimeout(timer);
      });
      // A server reading the pipe answered nothing until the pipe got a writer; each GET here has a bound.
      let answered = 0;
      try {
        while (running) {
          const res = await fetch(`${server.url}/instance-configuration`, { signal: AbortSignal.timeout(10_000) });
          expect(res.status).toBe(200);
          expect(res.headers.get('content-type')).toMatch(/^application\/json/);
          expect(await res.json()).toHaveProperty('pageSize');
          answered++;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      } finally {
        if (running) cli.kill('SIGKILL');
      }
      const res = await done;
      expect([res.code, res.stderr.trim(), res.stdout]).toEqual([1, PIPE_REFUSED, '']);
      expect(performance.now() - began).toBeLessThan(KILL_AFTER_MS);
      expect(answered).toBeGreaterThan(0);
      // The server goes on: the backup without the pipe loads through it.
      const clean = await writeBackup({ 'node/a.json': { type: 'Data', id: randomUUID(), data: {} } });
      const loaded = await runBounded(['backup:load', clean], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
      expect([loaded.code, loaded.stdout]).toEqual([0, expect.stringMatching(/^Loaded 1 nodes, 0 relations/)]);
    },
    2 * KILL_AFTER_MS + 20_000,
  );
});

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
