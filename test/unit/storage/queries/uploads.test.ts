// The SQL of resumable uploads (src/storage/queries/uploads.ts) on an in-memory PGlite with the real schema: who
// sees an upload, the lease that lets one request append at a time, what a commit records, and the cleanup's
// batches.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../../src/storage/db.js';
import { migrate } from '../../../../src/storage/migrate.js';
import { pgliteDb } from '../../../../src/storage/pglite.js';
import * as sql from '../../../../src/storage/queries/uploads.js';
import { newPglite } from '../../../helpers/pglite-template.js';

const at = new Date('2026-03-01T12:00:00Z');
const later = (seconds: number) => new Date(at.getTime() + seconds * 1000);

let db: Db;

async function node(type: string, data: Record<string, unknown> = {}): Promise<string> {
  const id = randomUUID();
  await db.query('INSERT INTO elements (id, type, data, created, updated) VALUES ($1, $2, $3, $4, $4)', [
    id,
    type,
    data,
    at,
  ]);
  return id;
}

async function relation(type: string, start: string, end: string): Promise<string> {
  const id = randomUUID();
  await db.query(
    'INSERT INTO elements (id, type, start_id, end_id, created, updated) VALUES ($1, $2, $3, $4, $5, $5)',
    [id, type, start, end, at],
  );
  return id;
}

async function user(): Promise<string> {
  const identifier = `u-${randomUUID()}`;
  const id = await node('User', { identifier });
  await db.query('INSERT INTO users (id, identifier) VALUES ($1, $2)', [id, identifier]);
  return id;
}

/** A user, a document the user owns, and an upload of the user to it (lease `token`, expiring in an hour). */
async function scene(overrides: Partial<sql.NewUpload> = {}) {
  const owner = await user();
  const doc = await node('Doc');
  const owns = await relation('OWNS', owner, doc);
  const token = randomUUID();
  const upload = await sql.insertUpload(db, {
    id: randomUUID(),
    elementId: doc,
    userId: owner,
    length: null,
    extension: 'pdf',
    expectedSha256: null,
    leaseToken: token,
    leaseUntil: later(60),
    created: at,
    expires: later(3600),
    ifMatch: '"abc"',
    ifNoneMatch: null,
    ...overrides,
  });
  return { owner, doc, owns, token, upload };
}

beforeAll(async () => {
  db = await pgliteDb(await newPglite('migrated'), true);
  await migrate(db);
}, 60_000);

afterAll(async () => {
  await db.close();
});

beforeEach(async () => {
  await db.query('DELETE FROM uploads');
});

describe('an upload and who sees it', () => {
  it('is stored as given, and answers its creator only', async () => {
    const { owner, doc, token, upload } = await scene({ length: 10, expectedSha256: Buffer.from('ab', 'hex') });
    expect(upload).toMatchObject({
      element_id: doc,
      user_id: owner,
      offset: 0,
      length: 10,
      chunks: 0,
      extension: 'pdf',
      lease_token: token,
      if_match: '"abc"',
      if_none_match: null,
      generation: null,
    });
    expect(upload.expected_sha256?.toString('hex')).toBe('ab');
    expect(await sql.uploadOf(db, upload.id, owner)).toMatchObject({ id: upload.id, permitted: true });
    expect(await sql.uploadOf(db, upload.id, await user())).toBeNull();
  });

  it('is no longer permitted when its creator loses UPDATE on the target, or the target goes', async () => {
    const { owner, doc, owns, upload } = await scene();
    await db.query('DELETE FROM elements WHERE id = $1', [owns]);
    expect(await sql.uploadOf(db, upload.id, owner)).toMatchObject({ permitted: false, element_id: doc });
    await db.query('DELETE FROM elements WHERE id = $1', [doc]);
    expect(await sql.uploadOf(db, upload.id, owner)).toMatchObject({ permitted: false, element_id: null });
  });

  it('cannot be made for an element that does not exist (a foreign key violation)', async () => {
    const owner = await user();
    const insert = sql.insertUpload(db, {
      id: randomUUID(),
      elementId: randomUUID(),
      userId: owner,
      length: null,
      extension: 'bin',
      expectedSha256: null,
      leaseToken: randomUUID(),
      leaseUntil: later(60),
      created: at,
      expires: later(3600),
      ifMatch: null,
      ifNoneMatch: null,
    });
    await expect(insert).rejects.toMatchObject({ code: '23503' });
  });
});

describe('the lease', () => {
  it('is taken at the current offset when free or run out; a holder whose lease ran out is taken over', async () => {
    const { owner, token, upload } = await scene();
    const next = randomUUID();
    // Held (until +60 s): nobody else gets it.
    expect(await sql.takeLease(db, upload.id, owner, 0, next, later(30), later(90))).toBeNull();
    // Run out: taken over from a holder who never gave it back.
    const taken = await sql.takeLease(db, upload.id, owner, 0, next, later(61), later(121));
    expect(taken).toMatchObject({ lease_token: next, taken_over: true });
    expect(await sql.renewLease(db, upload.id, token, later(200))).toBe(false);
    expect(await sql.renewLease(db, upload.id, next, later(200))).toBe(true);
    await sql.releaseLease(db, upload.id, next);
    // Given back: taken again without a takeover, but only at the right offset and by the creator.
    expect(await sql.takeLease(db, upload.id, owner, 5, token, later(62), later(122))).toBeNull();
    expect(await sql.takeLease(db, upload.id, await user(), 0, token, later(62), later(122))).toBeNull();
    expect(await sql.takeLease(db, upload.id, owner, 0, token, later(62), later(122))).toMatchObject({
      taken_over: false,
    });
  });

  it('a commit records the bytes, counts a chunk only when there are some, keeps the first length, and lets go', async () => {
    const { owner, token, upload } = await scene();
    expect(await sql.commitAppend(db, upload.id, randomUUID(), 5, 5)).toBeNull();
    const first = await sql.commitAppend(db, upload.id, token, 5, 5, 20);
    expect(first).toMatchObject({ offset: 5, chunks: 1, length: 20, lease_token: null, lease_until: null });
    const again = randomUUID();
    await sql.takeLease(db, upload.id, owner, 5, again, later(1), later(61));
    expect(await sql.commitAppend(db, upload.id, again, 5, 0, 30)).toMatchObject({ offset: 5, chunks: 1, length: 20 });
  });

  it('names a new generation, resets the offset, and deletes the row only under the lease', async () => {
    const { owner, token, upload } = await scene();
    await sql.commitAppend(db, upload.id, token, 7, 7);
    const lease = randomUUID();
    await sql.takeLease(db, upload.id, owner, 7, lease, later(1), later(61));
    const generation = randomUUID();
    expect(await sql.setGeneration(db, upload.id, token, generation)).toBeNull();
    expect(await sql.setGeneration(db, upload.id, lease, generation)).toMatchObject({ generation });
    expect(await sql.resetUpload(db, upload.id, token)).toBe(false);
    expect(await sql.resetUpload(db, upload.id, lease)).toBe(true);
    expect(await sql.uploadOf(db, upload.id, owner)).toMatchObject({ offset: 0, chunks: 0, lease_token: lease });
    expect(await sql.deleteLeasedUpload(db, upload.id, token)).toBe(false);
    expect(await sql.deleteLeasedUpload(db, upload.id, lease)).toBe(true);
    expect(await sql.uploadOf(db, upload.id, owner)).toBeNull();
  });

  it('every lease ends at once at the start of an embedded server', async () => {
    await scene();
    await scene();
    const { token, upload } = await scene();
    await sql.releaseLease(db, upload.id, token);
    expect(await sql.releaseAllLeases(db)).toBe(2);
    expect(await sql.releaseAllLeases(db)).toBe(0);
  });
});

describe('removal', () => {
  it('deletes an upload whatever its state, or only the given user’s', async () => {
    const { owner, upload } = await scene();
    expect(await sql.deleteUpload(db, upload.id, await user())).toBe(false);
    expect(await sql.deleteUpload(db, upload.id, owner)).toBe(true);
    expect(await sql.deleteUpload(db, upload.id)).toBe(false);
    const other = await scene();
    expect(await sql.deleteUpload(db, other.upload.id)).toBe(true);
  });

  it('the cleanup takes expired and orphaned uploads in batches, saying which were cancelled', async () => {
    const expired = await Promise.all([1, 2, 3].map(() => scene({ expires: later(10) })));
    const live = await scene({ expires: later(10_000) });
    const orphaned = await scene({ expires: later(10_000) });
    await db.query('DELETE FROM elements WHERE id = $1', [orphaned.doc]);
    const first = await sql.deleteExpiredOrOrphaned(db, later(100), 2);
    const second = await sql.deleteExpiredOrOrphaned(db, later(100), 2);
    expect(first).toHaveLength(2);
    expect(await sql.deleteExpiredOrOrphaned(db, later(100), 2)).toEqual([]);
    const removed = [...first, ...second];
    expect(removed.map((r) => r.id).sort()).toEqual([...expired.map((s) => s.upload.id), orphaned.upload.id].sort());
    expect(removed.find((r) => r.id === orphaned.upload.id)?.cancelled).toBe(true);
    expect(removed.filter((r) => r.cancelled)).toHaveLength(1);
    expect(await sql.uploadOf(db, live.upload.id, live.owner)).not.toBeNull();
  });

  it('finds, in id order and batches, uploads whose creator lost UPDATE, and deletes those still without it', async () => {
    const scenes = await Promise.all([1, 2, 3, 4, 5].map(() => scene()));
    const denied = scenes.slice(0, 3);
    for (const s of denied) await db.query('DELETE FROM elements WHERE id = $1', [s.owns]);
    const found: string[] = [];
    let after: string | null = null;
    let batches = 0;
    do {
      const batch = await sql.uploadsWithoutAccess(db, after, 2);
      found.push(...batch.denied);
      after = batch.last;
      batches++;
    } while (after !== null);
    expect(batches).toBe(3);
    expect(found.sort()).toEqual(denied.map((s) => s.upload.id).sort());
    // One got its access back meanwhile: it stays.
    await relation('OWNS', denied[0]!.owner, denied[0]!.doc);
    expect((await sql.deleteWithoutAccess(db, found)).sort()).toEqual(
      denied
        .slice(1)
        .map((s) => s.upload.id)
        .sort(),
    );
    expect(await sql.deleteWithoutAccess(db, [])).toEqual([]);
    expect(await sql.uploadOf(db, denied[0]!.upload.id, denied[0]!.owner)).toMatchObject({ permitted: true });
  });
});
