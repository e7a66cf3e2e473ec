// backup:load on its own (src/backup/load.ts): an in-memory PGlite with the real schema and a disk blob store in a
// temporary folder, backup folders written by hand. What the pass indexes (ids, users' identifiers, tokens, relations
// that wait for the end), the files it copies, its warnings, and that a violation leaves nothing behind.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BackupError } from '../../../src/backup/format.js';
import { DatabaseNotEmptyError, type LoadOptions, loadBackup } from '../../../src/backup/load.js';
import { FsBlobStore } from '../../../src/blob/fs-blob-store.js';
import { validateSettings } from '../../../src/config/load.js';
import type { Db } from '../../../src/storage/db.js';
import { migrate } from '../../../src/storage/migrate.js';
import { pgliteDb } from '../../../src/storage/pglite.js';
import { counts, writeBackup } from '../../backup/helpers.js';
import { newPglite } from '../../helpers/pglite-template.js';

let db: Db;
let filesDir: string;
let blobs: FsBlobStore;
const settings = validateSettings({});
const now = new Date('2026-03-01T12:00:00Z');

const load = (dir: string, options: LoadOptions = {}) =>
  loadBackup(
    { db, blobs, identifierKey: settings.register.uniqueIdentifier, limits: settings.element, now },
    dir,
    options,
  );

async function rejection(work: Promise<unknown>): Promise<unknown> {
  return await work.then(
    () => null,
    (e: unknown) => e,
  );
}

beforeAll(async () => {
  db = await pgliteDb(await newPglite('migrated'), true);
  await migrate(db);
  filesDir = mkdtempSync(join(tmpdir(), 'trellis-load-unit-'));
  blobs = new FsBlobStore(filesDir);
}, 60_000);

afterAll(async () => {
  await db.close();
  rmSync(filesDir, { recursive: true, force: true });
});

beforeEach(async () => {
  await db.query('DELETE FROM elements');
});

const id = () => randomUUID();
const key = settings.register.uniqueIdentifier;

/** Two users with the same identifier, a token one of them owns, a document with a file, a relation on a relation. */
function graph() {
  const [low, high] = [id(), id()].sort() as [string, string];
  const ids = { low, high, token: id(), doc: id(), owns: id(), ownsToken: id(), note: id(), onRelation: id() };
  const secret = `secret-${randomUUID()}`;
  const bytes = Buffer.from('file bytes');
  const files: Record<string, unknown> = {
    'node/a.json': { type: 'User', id: ids.high, data: { [key]: 'same@example.dev' } },
    'node/b.json': { type: 'User', id: ids.low, data: { [key]: 'same@example.dev' } },
    'node/c.json': {
      type: 'Token',
      id: ids.token,
      data: { token: secret, hash: createHash('sha3-256').update(secret).digest('hex'), state: 'ACTIVE' },
    },
    'node/d.json': {
      type: 'Doc',
      id: ids.doc,
      data: {
        name: 'D',
        file: {
          contentLength: bytes.length,
          extension: 'txt',
          mimeType: 'text/plain',
          hash: { sha256: createHash('sha256').update(bytes).digest('hex') },
        },
      },
    },
    'node/e.json': { type: 'Note', id: ids.note, data: {} },
    // Read before the relation it is attached to: it waits for the end of the pass.
    'relation/a.json': { type: 'ABOUT', id: ids.onRelation, start: ids.note, end: ids.owns, data: {} },
    'relation/b.json': { type: 'OWNS', id: ids.owns, start: ids.high, end: ids.doc, data: {} },
    'relation/c.json': { type: 'OWNS', id: ids.ownsToken, start: ids.low, end: ids.token, data: {} },
    [`file/${ids.doc}.txt`]: bytes,
  };
  return { ids, files, bytes, summary: { nodeCount: 5, relationCount: 3, fileCount: 1, version: 'dev' } };
}

describe('a valid backup', () => {
  it('loads elements, users, tokens and file bytes, the relation on a relation included', async () => {
    const g = graph();
    const report = await load(await writeBackup(g.files, g.summary), { batchSize: 2 });
    expect(report).toMatchObject({ nodes: 5, relations: 3, files: 1, users: 2, tokens: 1 });
    expect(await counts(db)).toEqual({ elements: 8, users: 2, tokens: 1 });
    const stored = await blobs.open(g.ids.doc, undefined, createHash('sha256').update(g.bytes).digest('hex'));
    expect((await buffer(stored!.stream)).equals(g.bytes)).toBe(true);
    const { rows } = await db.query<{ id: string }>('SELECT id FROM elements WHERE start_id = $1', [g.ids.note]);
    expect(rows.map((r) => r.id)).toEqual([g.ids.onRelation]);
  });

  it('gives a repeated identifier to the smaller id; the other user logs in under a substitute, with a warning', async () => {
    const g = graph();
    const report = await load(await writeBackup(g.files, g.summary));
    const { rows } = await db.query<{ id: string; identifier: string }>('SELECT id, identifier FROM users');
    const byId = new Map(rows.map((r) => [r.id, r.identifier]));
    expect(byId.get(g.ids.low)).toBe('same@example.dev');
    expect(byId.get(g.ids.high)).toBe(`duplicate-identifier:${g.ids.high}:same@example.dev`);
    expect(report.warnings).toEqual([
      expect.stringMatching(/^node\/(a|b)\.json: identifier "same@example.dev" is also used/),
    ]);
  });

  it('warns of file metadata without bytes and of bytes without an element, and loads the rest', async () => {
    const g = graph();
    const stray = id();
    const { [`file/${g.ids.doc}.txt`]: _, ...withoutBytes } = g.files;
    const dir = await writeBackup({ ...withoutBytes, [`file/${stray}.bin`]: 'x' }, g.summary);
    const report = await load(dir);
    expect(report.files).toBe(0);
    expect(report.warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/node\/d\.json: has file metadata but file\/ holds no bytes/),
        expect.stringMatching(new RegExp(`file/${stray}.bin: ignored \\(no element ${stray}`)),
      ]),
    );
  });
});

describe('a backup that breaks a rule', () => {
  it.each([
    [
      'a duplicate id',
      (g: ReturnType<typeof graph>) => ({ 'node/e.json': { type: 'Note', id: g.ids.doc, data: {} } }),
      'node/e.json',
      /duplicate id/,
    ],
    [
      'the same token hash twice',
      (g: ReturnType<typeof graph>) => ({ 'node/e.json': { ...(g.files['node/c.json'] as object), id: g.ids.note } }),
      'node/e.json',
      /the same token hash as node\/c\.json/,
    ],
    [
      'bytes of another length than the metadata says',
      (g: ReturnType<typeof graph>) => ({ [`file/${g.ids.doc}.txt`]: 'short' }),
      (g: ReturnType<typeof graph>) => `file/${g.ids.doc}.txt`,
      /holds 5 bytes but node\/d\.json says contentLength 10/,
    ],
  ])('%s: a BackupError naming the file, and nothing stored', async (_name, change, file, message) => {
    const g = graph();
    const dir = await writeBackup({ ...g.files, ...change(g) }, g.summary);
    const error = await rejection(load(dir, { batchSize: 1 }));
    expect(error).toBeInstanceOf(BackupError);
    expect((error as BackupError).file).toBe(typeof file === 'string' ? file : file(g));
    expect((error as BackupError).message).toMatch(message);
    expect(await counts(db)).toEqual({ elements: 0, users: 0, tokens: 0 });
    expect(await blobs.open(g.ids.doc)).toBeNull();
  });

  it('is not loaded into a database that holds elements, unless forced', async () => {
    const g = graph();
    await load(await writeBackup(g.files, g.summary));
    const other = graph();
    expect(await rejection(load(await writeBackup(other.files, other.summary)))).toBeInstanceOf(DatabaseNotEmptyError);
    const { [`file/${other.ids.doc}.txt`]: _, ...rest } = other.files;
    const renamed = {
      ...rest,
      'node/a.json': { type: 'User', id: other.ids.high, data: { [key]: 'other@example.dev' } },
    };
    const noFile = {
      ...renamed,
      'node/b.json': { type: 'User', id: other.ids.low, data: { [key]: 'third@example.dev' } },
    };
    const report = await load(await writeBackup(noFile, { ...other.summary, fileCount: 0 }), { force: true });
    expect(report).toMatchObject({ nodes: 5, relations: 3, users: 2 });
    expect(await counts(db)).toEqual({ elements: 16, users: 4, tokens: 2 });
  });
});
