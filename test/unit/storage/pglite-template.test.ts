// The template of a new embedded database (src/storage/pglite-template.ts): made once, and copied into a DATA_DIR
// that has no database yet, which then opens, is migrated and keeps its writes, while the template stays as made.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSettings } from '../../../src/config/load.js';
import { migrate } from '../../../src/storage/migrate.js';
import { embeddedDatabaseDir, openDatabase } from '../../../src/storage/open.js';
import { openPglite } from '../../../src/storage/pglite.js';
import { makeTemplate, seedFromTemplate, templateDir } from '../../../src/storage/pglite-template.js';
import { migrations } from '../../../src/storage/schema/index.js';

describe('the template of a new embedded database', () => {
  let dir: string;
  let template: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trellis-template-'));
    template = join(dir, 'cache', 'pglite-test');
    expect(await makeTemplate(template)).toBe(true);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('is made once, whole, beside the installed PGlite and named by its version', async () => {
    expect(existsSync(join(template, 'PG_VERSION'))).toBe(true);
    const made = (await stat(join(template, 'PG_VERSION'))).mtimeMs;
    expect(await makeTemplate(template)).toBe(false);
    expect((await stat(join(template, 'PG_VERSION'))).mtimeMs).toBe(made);
    // Nothing half made is left beside it.
    expect(await readdir(join(dir, 'cache'))).toEqual(['pglite-test']);
    expect(templateDir()).toMatch(/node_modules[/\\]\.cache[/\\]trellis[/\\]pglite-\d+\.\d+\.\d+/);
  });

  it('becomes the database of a DATA_DIR without one, which is migrated and keeps its writes', async () => {
    const dataDir = join(dir, 'first');
    await mkdir(dataDir);
    expect(await seedFromTemplate(embeddedDatabaseDir(dataDir), template)).toBe(true);
    const { database } = validateSettings({});
    const db = await openDatabase({ databaseUrl: null, dataDir }, database);
    try {
      await db.query('CREATE TABLE kept (word text)');
      await db.query(`INSERT INTO kept VALUES ('persisted')`);
    } finally {
      await db.close();
    }
    const again = await openPglite(embeddedDatabaseDir(dataDir));
    try {
      expect((await again.query('SELECT word FROM kept')).rows).toEqual([{ word: 'persisted' }]);
      // Every migration was applied to this database, none again on reopening.
      expect(await migrate(again)).toEqual([]);
    } finally {
      await again.close();
    }
    expect(await readdir(dataDir)).toEqual(['db']);
  });

  it('stays as it was made: the next copy is a new database, migrated from the start', async () => {
    const dataDir = join(dir, 'second');
    expect(await seedFromTemplate(embeddedDatabaseDir(dataDir), template)).toBe(true);
    const db = await openPglite(embeddedDatabaseDir(dataDir));
    try {
      expect(await migrate(db)).toEqual(migrations.map((m) => m.version));
      expect((await db.query(`SELECT to_regclass('kept') AS kept`)).rows).toEqual([{ kept: null }]);
    } finally {
      await db.close();
    }
  });

  it('leaves a folder that exists alone, and does nothing without a template', async () => {
    const existing = join(dir, 'existing', 'db');
    await mkdir(existing, { recursive: true });
    await writeFile(join(existing, 'mine'), 'kept');
    expect(await seedFromTemplate(existing, template)).toBe(false);
    expect(await readdir(existing)).toEqual(['mine']);
    const without = join(dir, 'without', 'db');
    expect(await seedFromTemplate(without, join(dir, 'no-template'))).toBe(false);
    expect(existsSync(without)).toBe(false);
  });

  it('removes a copy an earlier start left unfinished, and leaves nothing when the copy fails', async () => {
    const dataDir = join(dir, 'crashed');
    await mkdir(join(dataDir, 'db.seeding', 'base'), { recursive: true });
    expect(await seedFromTemplate(join(dataDir, 'db'), template)).toBe(true);
    expect((await readdir(dataDir)).sort()).toEqual(['db']);
    // A file where the folder's parent should be: the copy cannot be made, PGlite is left to fail as it would.
    await writeFile(join(dir, 'a-file'), '');
    const impossible = join(dir, 'a-file', 'db');
    expect(await seedFromTemplate(impossible, template)).toBe(false);
    expect(existsSync(`${impossible}.seeding`)).toBe(false);
  });
});
