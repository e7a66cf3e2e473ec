// Element files in the domain (src/domain/files/files.ts), wired as the service wires them (services.ts) on an
// in-memory PGlite with the real schema and a disk blob store in a temporary folder: what a direct upload stores and
// refuses, downloads with ranges and conditions, removal, and the sweep's questions to the database.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../src/clock.js';
import { validateSettings } from '../../../../src/config/load.js';
import type { Config } from '../../../../src/config/schema.js';
import type { Caller } from '../../../../src/domain/accounts/types.js';
import { blobTag, checkFileTarget, type DirectUpload } from '../../../../src/domain/files/files.js';
import { Problem } from '../../../../src/errors.js';
import { createServices, type Services } from '../../../../src/services.js';
import type { Db } from '../../../../src/storage/db.js';
import { migrate } from '../../../../src/storage/migrate.js';
import { pgliteDb } from '../../../../src/storage/pglite.js';
import { type ElementId, parseElementId } from '../../../../src/values.js';
import { newPglite } from '../../../helpers/pglite-template.js';

const MAX = 1000;
let db: Db;
let dataDir: string;
let services: Services;

beforeAll(async () => {
  db = await pgliteDb(await newPglite('migrated'), true);
  await migrate(db);
  dataDir = mkdtempSync(join(tmpdir(), 'trellis-files-unit-'));
  const config: Config = {
    settings: validateSettings({ file: { maxFileSizeInBytes: MAX } }),
    runtime: {
      s3Credentials: null,
      port: 0,
      host: '127.0.0.1',
      dataDir,
      databaseUrl: null,
      anonymousUserId: null,
      logLevel: 'silent',
      configPath: null,
    },
  };
  services = await createServices(config, db, new ManualClock());
}, 60_000);

afterAll(async () => {
  await db.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const at = new Date('2026-03-01T12:00:00Z');

async function node(type: string, data: Record<string, unknown> = {}, start?: string, end?: string) {
  const id = randomUUID();
  await db.query(
    'INSERT INTO elements (id, type, data, start_id, end_id, created, updated) VALUES ($1, $2, $3, $4, $5, $6, $6)',
    [id, type, data, start ?? null, end ?? null, at],
  );
  return parseElementId(id)!;
}

/** A user and a document the user owns (and so may update). */
async function ownedDoc(data: Record<string, unknown> = {}): Promise<{ caller: Caller; doc: ElementId }> {
  const identifier = `u-${randomUUID()}`;
  const userId = await node('User', { identifier });
  await db.query('INSERT INTO users (id, identifier) VALUES ($1, $2)', [userId, identifier]);
  const doc = await node('Doc', data);
  await node('OWNS', {}, userId, doc);
  return { caller: { userId, tokenId: null }, doc };
}

/** A body that records whether anyone read it. */
function body(bytes: Buffer) {
  const seen = { read: false };
  return {
    seen,
    source: {
      async *[Symbol.asyncIterator]() {
        seen.read = true;
        yield bytes;
      },
    },
  };
}

const fields = (bytes: Buffer, more: Partial<DirectUpload> = {}): DirectUpload => ({
  announced: bytes.length,
  expected: createHash('sha256').update(bytes).digest(),
  extension: 'txt',
  ...more,
});

async function problemOf(work: Promise<unknown>): Promise<Problem> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Problem);
  return error as Problem;
}

const fileOf = async (id: string) =>
  (await db.query<{ file: unknown }>('SELECT file FROM elements WHERE id = $1', [id])).rows[0]!.file;

const temporaryFiles = () => readdirSync(join(dataDir, 'files', 'tmp'));

describe('a direct upload', () => {
  it('stores the bytes and their metadata, detected type and digest included, and leaves no temporary file', async () => {
    const { caller, doc } = await ownedDoc();
    const bytes = Buffer.from('plain words\n');
    await services.files.upload(caller, doc, 'create', body(bytes).source, fields(bytes));
    expect(await fileOf(doc)).toEqual({
      contentLength: bytes.length,
      extension: 'txt',
      mimeType: 'text/plain',
      hash: { sha256: createHash('sha256').update(bytes).digest('hex') },
    });
    const download = await services.files.download(caller, doc, { range: null, conditions: {}, bodyless: false });
    expect(download.status).toBe(200);
    expect((await buffer(download.stream!)).equals(bytes)).toBe(true);
    expect(temporaryFiles()).toEqual([]);
  });

  it('refuses before reading the body: too large, a file already there (create), no UPDATE', async () => {
    const { caller, doc } = await ownedDoc();
    const big = body(Buffer.alloc(10));
    const tooLarge = await problemOf(
      services.files.upload(caller, doc, 'create', big.source, fields(Buffer.alloc(10), { announced: MAX + 1 })),
    );
    expect(tooLarge.detail).toMatch(/larger than the maximum of 1000 bytes/);
    const stranger = { userId: (await ownedDoc()).caller.userId, tokenId: null };
    expect(
      (await problemOf(services.files.upload(stranger, doc, 'create', big.source, fields(Buffer.alloc(10))))).status,
    ).toBe(404);
    await services.files.upload(caller, doc, 'create', body(Buffer.from('a')).source, fields(Buffer.from('a')));
    const again = await problemOf(services.files.upload(caller, doc, 'create', big.source, fields(Buffer.alloc(10))));
    expect(again.slug).toBe('conflict');
    expect(big.seen.read).toBe(false);
  });

  it('stores nothing when the body differs from its digest or its announced size, or passes the maximum', async () => {
    const { caller, doc } = await ownedDoc();
    const bytes = Buffer.from('0123456789');
    const wrongDigest = fields(bytes, { expected: Buffer.alloc(32) });
    expect(
      (await problemOf(services.files.upload(caller, doc, 'replace', body(bytes).source, wrongDigest))).detail,
    ).toMatch(/does not match the digest/);
    const shorter = fields(bytes, { announced: 11 });
    expect(
      (await problemOf(services.files.upload(caller, doc, 'replace', body(bytes).source, shorter))).detail,
    ).toMatch(/has 10 bytes, but 11 were announced/);
    const longer = fields(bytes, { announced: 9 });
    expect((await problemOf(services.files.upload(caller, doc, 'replace', body(bytes).source, longer))).detail).toMatch(
      /longer than the 9 bytes announced/,
    );
    const unannounced = fields(Buffer.alloc(MAX + 1), { announced: undefined, expected: undefined });
    expect(
      (await problemOf(services.files.upload(caller, doc, 'replace', body(Buffer.alloc(MAX + 1)).source, unannounced)))
        .detail,
    ).toMatch(/larger than the maximum/);
    expect(await fileOf(doc)).toBeNull();
    expect(temporaryFiles()).toEqual([]);
  });
});

describe('a download', () => {
  const bytes = Buffer.from('abcdefghij');
  let caller: Caller;
  let doc: ElementId;
  let etag: string;

  beforeAll(async () => {
    ({ caller, doc } = await ownedDoc({ name: 'report\u202Egpj.exe' }));
    await services.files.upload(caller, doc, 'create', body(bytes).source, fields(bytes, { extension: 'txt' }));
    etag = (await services.files.download(caller, doc, { range: null, conditions: {}, bodyless: true })).etag;
  });

  it('is named after the element, without the characters that disguise a name, and has a strong ETag', async () => {
    const head = await services.files.download(caller, doc, { range: null, conditions: {}, bodyless: true });
    expect(head).toMatchObject({ status: 200, filename: 'reportgpj.exe.txt', stream: null, range: null });
    expect(etag).toMatch(/^"sha256-[A-Za-z0-9_-]{27}"$/);
  });

  it('sends one range (206), clamped at the end; a suffix; the whole file when If-Range does not match', async () => {
    const part = await services.files.download(caller, doc, {
      range: { first: 2, last: 100 },
      conditions: {},
      bodyless: false,
    });
    expect(part).toMatchObject({ status: 206, range: { start: 2, end: 9 } });
    expect((await buffer(part.stream!)).toString()).toBe('cdefghij');
    const suffix = await services.files.download(caller, doc, {
      range: { suffix: 3 },
      conditions: {},
      bodyless: false,
    });
    expect((await buffer(suffix.stream!)).toString()).toBe('hij');
    const stale = await services.files.download(caller, doc, {
      range: { first: 2, last: 3 },
      ifRange: '"other"',
      conditions: {},
      bodyless: true,
    });
    expect(stale).toMatchObject({ status: 200, range: null });
  });

  it('answers the problem of a Range only when If-Range lets it apply; 416 past the end', async () => {
    const bad = new Problem('bad-content', 'The range ends before it starts.');
    const ignored = await services.files.download(caller, doc, {
      range: bad,
      ifRange: 'W/"weak"',
      conditions: {},
      bodyless: true,
    });
    expect(ignored.status).toBe(200);
    expect(
      await problemOf(
        services.files.download(caller, doc, { range: bad, ifRange: etag, conditions: {}, bodyless: true }),
      ),
    ).toBe(bad);
    const beyond = await problemOf(
      services.files.download(caller, doc, { range: { first: 10, last: null }, conditions: {}, bodyless: true }),
    );
    expect(beyond).toMatchObject({
      status: 416,
      extensions: { 'requested-start': 10, 'total-length': 10 },
      headers: { 'content-range': 'bytes */10' },
    });
    const zero = await problemOf(
      services.files.download(caller, doc, { range: { suffix: 0 }, conditions: {}, bodyless: true }),
    );
    expect(zero.status).toBe(416);
  });

  it('is 304 for a matching If-None-Match and 412 for another If-Match, before any range', async () => {
    const range = new Problem('bad-content', 'never looked at');
    const notModified = await services.files.download(caller, doc, {
      range,
      conditions: { ifNoneMatch: etag },
      bodyless: false,
    });
    expect(notModified).toMatchObject({ status: 304, stream: null });
    const failed = await problemOf(
      services.files.download(caller, doc, { range, conditions: { ifMatch: '"x"' }, bodyless: false }),
    );
    expect(failed.status).toBe(412);
  });

  it('is 404 for an element without a file and for a caller who may not read it', async () => {
    const empty = await ownedDoc();
    expect(
      (
        await problemOf(
          services.files.download(empty.caller, empty.doc, { range: null, conditions: {}, bodyless: true }),
        )
      ).status,
    ).toBe(404);
    expect(
      (await problemOf(services.files.download(empty.caller, doc, { range: null, conditions: {}, bodyless: true })))
        .status,
    ).toBe(404);
  });
});

describe('removal and the sweep', () => {
  it('removes the bytes and the metadata; 412 on a stale If-Match; 404 once gone', async () => {
    const { caller, doc } = await ownedDoc();
    const bytes = Buffer.from('to go');
    await services.files.upload(caller, doc, 'create', body(bytes).source, fields(bytes));
    expect((await problemOf(services.files.remove(caller, doc, { ifMatch: '"stale"' }))).status).toBe(412);
    await services.files.remove(caller, doc);
    expect(await fileOf(doc)).toBeNull();
    expect(await services.blobs.open(doc, undefined, 'none')).toBeNull();
    expect((await problemOf(services.files.remove(caller, doc))).status).toBe(404);
  });

  it('removes bytes no element refers to and temporary files, and leaves names that are no element id alone', async () => {
    const { caller, doc } = await ownedDoc();
    const bytes = Buffer.from('kept');
    await services.files.upload(caller, doc, 'create', body(bytes).source, fields(bytes));
    const orphan = randomUUID();
    await services.blobs
      .replace(orphan, await services.blobs.write(body(Buffer.from('x')).source, { maxBytes: 10 }), {
        previous: 'none',
        next: 'unhashed',
      })
      .then((r) => r.finish());
    writeFileSync(join(dataDir, 'files', 'tmp', 'leftover'), 'x');
    const foreign = join(dataDir, 'files', 'not-an-id');
    writeFileSync(foreign, 'x');
    const report = await services.files.sweep(0);
    expect(report).toMatchObject({ orphans: 1, temporary: 1 });
    expect(await services.blobs.open(orphan)).toBeNull();
    expect(readdirSync(join(dataDir, 'files'))).toContain('not-an-id');
    const kept = await services.files.download(caller, doc, { range: null, conditions: {}, bodyless: false });
    expect((await buffer(kept.stream!)).equals(bytes)).toBe(true);
  });
});

describe('checkFileTarget and blobTag', () => {
  const file = { contentLength: 1, extension: 'bin', mimeType: 'x/y', hash: { sha256: 'ab'.repeat(32) } };
  const target = { id: randomUUID(), data: {}, file, updated: at };

  it('POST creates only; PUT replaces; preconditions compare the file ETag', () => {
    expect(() => checkFileTarget(target, 'create', {})).toThrow(/already has a file/);
    expect(() => checkFileTarget(target, 'replace', {})).not.toThrow();
    expect(() => checkFileTarget({ ...target, file: null }, 'create', {})).not.toThrow();
    expect(() => checkFileTarget(target, 'replace', { ifNoneMatch: '*' })).toThrow(Problem);
  });

  it('tags bytes by their SHA-256: none, unhashed, or the digest', () => {
    expect(blobTag(null)).toBe('none');
    expect(blobTag({ ...file, hash: { sha256: null } })).toBe('unhashed');
    expect(blobTag(file)).toBe(file.hash.sha256);
  });
});
