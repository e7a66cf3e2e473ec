// backup:create on its own (src/backup/create.ts): an in-memory PGlite with the real schema and a disk blob store in
// a temporary folder. The folder it writes (sharded element files, file bytes, the summary, owner-only modes), what
// it warns of, and a target it refuses or a failure that leaves no folder behind.
import { createHash, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BackupTargetError, createBackup } from '../../../src/backup/create.js';
import { elementPath, filePath, SUMMARY_FILE } from '../../../src/backup/format.js';
import { FsBlobStore } from '../../../src/blob/fs-blob-store.js';
import type { Db } from '../../../src/storage/db.js';
import { migrate } from '../../../src/storage/migrate.js';
import { pgliteDb } from '../../../src/storage/pglite.js';
import { newPglite } from '../../helpers/pglite-template.js';

let db: Db;
let scratch: string;
let blobs: FsBlobStore;
const now = new Date('2026-03-01T12:00:00Z');
const at = new Date('2025-01-02T03:04:05Z');

beforeAll(async () => {
  db = await pgliteDb(await newPglite('migrated'), true);
  await migrate(db);
  scratch = mkdtempSync(join(tmpdir(), 'trellis-create-unit-'));
  blobs = new FsBlobStore(join(scratch, 'files'));
}, 60_000);

afterAll(async () => {
  await db.close();
  rmSync(scratch, { recursive: true, force: true });
});

beforeEach(async () => {
  await db.query('DELETE FROM elements');
});

async function element(type: string, data: Record<string, unknown>, start?: string, end?: string): Promise<string> {
  const id = randomUUID();
  await db.query(
    'INSERT INTO elements (id, type, data, start_id, end_id, created, updated) VALUES ($1, $2, $3, $4, $5, $6, $6)',
    [id, type, data, start ?? null, end ?? null, at],
  );
  return id;
}

/** Gives element `id` a file of `bytes`, its metadata and its blob. */
async function attach(id: string, bytes: Buffer, stored = bytes): Promise<void> {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const file = { contentLength: bytes.length, extension: 'txt', mimeType: 'text/plain', hash: { sha256 } };
  await db.query('UPDATE elements SET file = $2 WHERE id = $1', [id, file]);
  const temp = await blobs.write(Readable.from([stored]), { maxBytes: 1024 });
  await (await blobs.replace(id, temp, { previous: 'none', next: sha256 })).finish();
}

const target = () => join(scratch, `backup-${randomUUID()}`);
const create = (dir: string, pageSize?: number) =>
  createBackup({ db, blobs, now }, dir, pageSize === undefined ? {} : { pageSize });

describe('a backup folder', () => {
  it('holds every element in its shard, the file bytes, and a summary that counts them', async () => {
    const a = await element('Doc', { name: 'A' });
    const b = await element('Doc', { name: 'B' });
    const rel = await element('LINKS', {}, a, b);
    await attach(a, Buffer.from('bytes of a'));
    const dir = target();
    // Pages of one element: the next page is read while this one is written.
    const report = await create(dir, 1);
    expect(report).toMatchObject({ nodes: 2, relations: 1, files: 1, warnings: [] });
    const node = JSON.parse(readFileSync(join(dir, elementPath(false, a)), 'utf8'));
    expect(node).toMatchObject({
      type: 'Doc',
      id: a,
      data: { name: 'A', created: '2025-01-02T03:04:05+00:00', hasFile: true, file: { contentLength: 10 } },
    });
    expect(JSON.parse(readFileSync(join(dir, elementPath(true, rel)), 'utf8'))).toMatchObject({ start: a, end: b });
    expect(readFileSync(join(dir, filePath(a))).toString()).toBe('bytes of a');
    expect(JSON.parse(readFileSync(join(dir, SUMMARY_FILE), 'utf8'))).toMatchObject({
      backupCreated: expect.stringMatching(/^2026-03-01/),
      nodeCount: 2,
      relationCount: 1,
      fileCount: 1,
    });
    // Password and token hashes are in it: only the owner may read.
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, SUMMARY_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, filePath(a))).mode & 0o777).toBe(0o600);
    expect(readdirSync(scratch).filter((name) => name.includes('.partial-'))).toEqual([]);
  });

  it('warns of a file whose bytes are gone and of one whose length changed, and writes the rest', async () => {
    const gone = await element('Doc', {});
    const changed = await element('Doc', {});
    await attach(changed, Buffer.from('ten bytes!'), Buffer.from('eleven byte'));
    const sha256 = 'ab'.repeat(32);
    await db.query('UPDATE elements SET file = $2 WHERE id = $1', [
      gone,
      { contentLength: 3, extension: 'bin', mimeType: 'x/y', hash: { sha256 } },
    ]);
    const report = await create(target());
    expect(report.files).toBe(1);
    expect(report.warnings).toEqual(
      expect.arrayContaining([
        `element ${gone} has file metadata but the blob store holds no bytes for it; its file is missing from the backup`,
        `the file of element ${changed} changed while the backup ran (11 bytes, metadata says 10)`,
      ]),
    );
  });
});

describe('the target', () => {
  it('may be a new or an empty folder, never one that holds something', async () => {
    await element('Doc', {});
    const empty = target();
    mkdirSync(empty);
    expect((await create(empty)).nodes).toBe(1);
    const full = target();
    mkdirSync(full);
    writeFileSync(join(full, 'x'), 'x');
    await expect(create(full)).rejects.toBeInstanceOf(BackupTargetError);
  });

  it('is never left half written: a failure removes the folder being assembled', async () => {
    await element('Doc', {});
    const dir = target();
    // A page size the database refuses: the query fails after the folder was begun.
    await expect(create(dir, -1)).rejects.toThrow(/LIMIT/);
    expect(existsSync(dir)).toBe(false);
    expect(readdirSync(scratch).filter((name) => name.includes('.partial-'))).toEqual([]);
  });
});
