// The embedded backend (src/storage/pglite.ts): opening PGlite in memory and in a folder, its session settings, the
// Db on it, following the access epoch, what an operator is told when it does not start, and the page cache for
// 'auto'. test/storage/embedded-cache.test.ts opens the database with the configured cache through open.ts.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GiB, MiB } from '../../../src/config/schema.js';
import { SESSION_SETTINGS } from '../../../src/storage/db.js';
import {
  createPglite,
  databaseBytes,
  EmbeddedStartFailed,
  embeddedCacheMiB,
  embeddedFailureReport,
  openPglite,
  pgliteDb,
  pglitePool,
  prepareSession,
  resolveEmbeddedCacheMiB,
} from '../../../src/storage/pglite.js';
import { localWire } from '../../../src/storage/pglite-wire.js';

const setting = async (pglite: PGlite, name: string) =>
  (await pglite.query<{ value: string }>(`SELECT current_setting('${name}') AS value`)).rows[0]!.value;

/** The data folder of a new database, from the in-memory one (initdb on disk takes several times longer). */
let newDatabase: Blob;

describe('in memory', () => {
  let pglite: PGlite;
  beforeAll(async () => {
    pglite = await createPglite(undefined, 48);
    newDatabase = await pglite.dumpDataDir('none');
  });
  afterAll(async () => {
    if (!pglite.closed) await pglite.close();
  });

  it('opens with the page cache asked for, and the extensions the schema needs', async () => {
    expect(await setting(pglite, 'shared_buffers')).toBe('48MB');
    await pglite.exec('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    expect((await pglite.query<{ s: number }>(`SELECT similarity('trellis', 'trellis') AS s`)).rows).toEqual([
      { s: 1 },
    ]);
  });

  it('prepares the session: our settings, and auto_explain loaded for the statement budget', async () => {
    await prepareSession(pglite);
    for (const [key, value] of Object.entries(SESSION_SETTINGS))
      expect([key, await setting(pglite, key)]).toEqual([key, value]);
    expect(await setting(pglite, 'auto_explain.log_min_duration')).toBe('-1');
  });

  it('a pool of one connection: statements on it share the one session, one at a time', async () => {
    const pool = pglitePool(localWire(pglite));
    try {
      expect(pool.options.max).toBe(1);
      await pool.query('CREATE TEMP TABLE seen (n int)');
      await Promise.all([1, 2, 3].map((n) => pool.query('INSERT INTO seen VALUES ($1)', [n])));
      // The temporary table is the session's: the pool's statements and PGlite's own see the same one.
      expect((await pglite.query<{ n: number }>('SELECT n FROM seen ORDER BY n')).rows).toEqual([
        { n: 1 },
        { n: 2 },
        { n: 3 },
      ]);
    } finally {
      await pool.end();
    }
  });

  it('a Db that follows the access epoch from the notifications in its replies, and leaves a PGlite it does not own open', async () => {
    const db = await pgliteDb(pglite, false);
    expect(db.kind).toBe('pglite');
    // Nothing seen yet on the new connection.
    expect(db.sessionEpoch?.current).toBeNull();
    await db.query(`NOTIFY trellis_access_epoch, '7'`);
    expect(db.sessionEpoch?.current).toBe('7');
    // Epochs only grow: an older one read late does not replace it.
    await db.query(`NOTIFY trellis_access_epoch, '5'`);
    await db.query(`NOTIFY another_channel, '9'`);
    expect(db.sessionEpoch?.current).toBe('7');
    await db.close();
    expect(pglite.closed).toBe(false);
    expect((await pglite.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
  });

  it('closes a PGlite it owns with the Db', async () => {
    const db = await pgliteDb(pglite);
    expect((await db.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    await db.close();
    expect(pglite.closed).toBe(true);
  });
});

describe('in a folder (DATA_DIR/db)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trellis-pglite-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('opens the database in its folder, keeps what was written across a restart, and resolves its cache setting', async () => {
    const data = join(dir, 'db');
    await (await PGlite.create({ dataDir: data, loadDataDir: newDatabase })).close();
    const first = await openPglite(data, 32);
    await first.query('CREATE TABLE kept (word text)');
    await first.query(`INSERT INTO kept VALUES ('persisted')`);
    expect((await first.query<{ value: string }>(`SELECT current_setting('shared_buffers') AS value`)).rows).toEqual([
      { value: '32MB' },
    ]);
    await first.close();
    const again = await createPglite(data);
    try {
      expect((await again.query('SELECT word FROM kept')).rows).toEqual([{ word: 'persisted' }]);
    } finally {
      await again.close();
    }
    expect(await resolveEmbeddedCacheMiB(data, 200)).toBe(200);
    // A small database gets the default cache under auto.
    expect(await resolveEmbeddedCacheMiB(data, 'auto')).toBe(128);
  });

  it("fails to start on a damaged folder with PostgreSQL's reason, and tells the operator what to do", async () => {
    const data = join(dir, 'db');
    await writeFile(join(data, 'global', 'pg_control'), 'garbage');
    const error = await createPglite(data).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmbeddedStartFailed);
    const failed = error as EmbeddedStartFailed;
    expect(failed.dataDir).toBe(data);
    expect(failed.postgresSaid).toMatch(/^PANIC: could not read file "global\/pg_control"/);
    expect(failed.message).toBe(`the embedded database in ${data} did not start: ${failed.postgresSaid}`);
    // The disk has room: not a full disk, exit code EX_SOFTWARE.
    expect(await embeddedFailureReport(failed, data, 0)).toEqual({
      message: `the embedded database in ${data} did not start (PostgreSQL: ${failed.postgresSaid}); start the service again`,
      exitCode: 70,
    });
  });

  it('reports a full disk with what to free, exit code EX_IOERR', async () => {
    const said = 'PANIC: could not write to file "pg_wal/xlogtemp.1": No space left on device';
    const failed = new EmbeddedStartFailed(dir, said, new Error('aborted'));
    const report = await embeddedFailureReport(failed, dir, 0);
    expect(report.exitCode).toBe(74);
    expect(report.message).toMatch(
      new RegExp(
        `^the embedded database in ${dir} did not start: its disk is full \\(PostgreSQL: ${said.replace(/[().]/g, '\\$&')}\\); ` +
          '\\d+\\.\\d MiB free there\\. Make at least 16\\.0 MiB free \\(one WAL segment\\) and start the service again$',
      ),
    );
    const withMinimum = await embeddedFailureReport(failed, dir, 4 * 1024 * 1024);
    expect(withMinimum.message).toMatch(
      /Make at least 20\.0 MiB free \(one WAL segment, and storage\.minFreeSpaceInBytes for writes\) and start/,
    );
    // A folder that cannot be measured is left out of the message.
    const gone = await embeddedFailureReport(failed, join(dir, 'missing'), 0);
    expect(gone.message).not.toMatch(/free there/);
    expect(gone.exitCode).toBe(74);
  });
});

describe('the page cache under auto', () => {
  it("sizes 'auto' to the database, in steps of 64 MiB, between 128 MiB and the smaller of 1 GiB and an eighth of memory", () => {
    expect(embeddedCacheMiB(0, 24 * GiB)).toBe(128);
    expect(embeddedCacheMiB(50 * MiB, 24 * GiB)).toBe(128);
    // 413 MiB (the benchmark's 100k nodes) and a quarter more: 516.25 MiB, rounded up to 576.
    expect(embeddedCacheMiB(413 * MiB, 24 * GiB)).toBe(576);
    expect(embeddedCacheMiB(512 * MiB, 24 * GiB)).toBe(640);
    expect(embeddedCacheMiB(4 * GiB, 24 * GiB)).toBe(1024);
    // An eighth of 2 GiB is 256 MiB; an eighth of 512 MiB is below the floor, which wins.
    expect(embeddedCacheMiB(413 * MiB, 2 * GiB)).toBe(256);
    expect(embeddedCacheMiB(413 * MiB, 512 * MiB)).toBe(128);
  });

  it('counts the relation files under base/, and not an entry that is gone by the time it is looked at', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-cache-'));
    await mkdir(join(dir, 'base', '5'), { recursive: true });
    await writeFile(join(dir, 'base', '5', '1259'), Buffer.alloc(8192));
    await writeFile(join(dir, 'base', '5', '1259_fsm'), Buffer.alloc(1000));
    await writeFile(join(dir, 'postmaster.opts'), 'not a relation file');
    // A dangling link stats as ENOENT, as a file dropped between the listing and its stat would.
    await symlink(join(dir, 'base', '5', 'dropped'), join(dir, 'base', '5', '16384'));
    expect(await databaseBytes(dir)).toBe(9192);
    expect(await databaseBytes(join(dir, 'missing'))).toBe(0);
    await rm(dir, { recursive: true, force: true });
  });
});
