// The SQL of elements (src/storage/queries/elements.ts), on an in-memory PGlite with the real schema.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileMeta } from '../../../../src/domain/files/types.js';
import { AccessDecisions } from '../../../../src/storage/access-decisions.js';
import type { Db } from '../../../../src/storage/db.js';
import { insertToken } from '../../../../src/storage/queries/accounts.js';
import {
  deleteElement,
  type ElementRow,
  elementBodyById,
  elementById,
  elementTypes,
  elementWithPermission,
  insertElement,
  insertNodeAs,
  readableElement,
  replaceData,
  setFile,
  updateDataAs,
} from '../../../../src/storage/queries/elements.js';
import { addNode, addRelation, addUser, migratedDb } from '../../helpers/database.js';

const at = new Date('2026-02-03T04:05:06.789Z');
const now = new Date('2026-02-03T12:00:00Z');
const file: FileMeta = { contentLength: 3, extension: 'txt', mimeType: 'text/plain', hash: { sha256: 'abc' } };

let db: Db;
/** A user with an active token, and its credentials. */
let alice: { id: string; credentials: { tokenHash: string } };
let bob: { id: string; credentials: { tokenHash: string } };

async function userWithToken(identifier: string) {
  const id = await addUser(db, identifier);
  const tokenId = await addNode(db, 'Token');
  const hash = `hash-of-${identifier}`;
  await insertToken(db, { id: tokenId, hash, userId: id, state: 'ACTIVE', issued: at, expires: null });
  return { id, credentials: { tokenHash: hash } };
}

/** A node `owner` OWNS, as POST would leave it. */
async function ownedNode(owner: string, data: Record<string, unknown> = {}): Promise<string> {
  const id = await addNode(db, 'Note', data);
  await addRelation(db, 'OWNS', owner, id);
  return id;
}

const dataOf = async (id: string) => (await elementById(db, id))?.data;

beforeAll(async () => {
  db = await migratedDb();
  alice = await userWithToken('alice@elements.org');
  bob = await userWithToken('bob@elements.org');
});
afterAll(() => db.close());

describe('insert and read', () => {
  it('inserts an element once, and reads its row back by id', async () => {
    const id = randomUUID();
    const node = { id, type: 'Note', data: { title: 'one' }, internal: { _legacy: 1 }, at };
    expect(await insertElement(db, node)).toBe(true);
    expect(await insertElement(db, { ...node, data: { title: 'two' } })).toBe(false);
    const row = await elementById(db, id);
    expect(row).toEqual<ElementRow>({
      id,
      type: 'Note',
      start_id: null,
      end_id: null,
      data: { title: 'one' },
      file: null,
      created: at,
      updated: at,
    });
    expect(await elementById(db, id, true)).toEqual(row);
    expect(await elementById(db, randomUUID())).toBeNull();
    const { rows } = await db.query<{ internal: unknown }>('SELECT internal FROM elements WHERE id = $1', [id]);
    expect(rows).toEqual([{ internal: { _legacy: 1 } }]);
  });

  it('inserts a relation between two elements, and refuses one to a missing element (23503)', async () => {
    const a = await addNode(db, 'Note');
    const b = await addNode(db, 'Note');
    const id = randomUUID();
    expect(await insertElement(db, { id, type: 'LINKS', start: a, end: b, data: {}, at })).toBe(true);
    expect(await elementById(db, id)).toMatchObject({ start_id: a, end_id: b, type: 'LINKS' });
    const error = await insertElement(db, {
      id: randomUUID(),
      type: 'LINKS',
      start: a,
      end: randomUUID(),
      data: {},
      at,
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: '23503' });
  });

  it('renders the body as clients see it, with the file and whole seconds', async () => {
    const id = randomUUID();
    await insertElement(db, { id, type: 'Note', data: { b: 1.5, a: 'x' }, at });
    expect(JSON.parse((await elementBodyById(db, id))!)).toEqual({
      type: 'Note',
      id,
      data: { a: 'x', b: 1.5, created: '2026-02-03T04:05:06+00:00', updated: '2026-02-03T04:05:06+00:00' },
    });
    await setFile(db, id, file, now);
    expect(JSON.parse((await elementBodyById(db, id))!)).toEqual({
      type: 'Note',
      id,
      data: {
        a: 'x',
        b: 1.5,
        created: '2026-02-03T04:05:06+00:00',
        updated: '2026-02-03T12:00:00+00:00',
        hasFile: true,
        file,
      },
      file,
    });
    expect(await elementBodyById(db, randomUUID())).toBeNull();
  });

  it('replaces data and sets or clears the file, each with the time of the change', async () => {
    const id = await addNode(db, 'Note', { old: true });
    await replaceData(db, id, { fresh: 1 }, now);
    expect(await elementById(db, id)).toMatchObject({ data: { fresh: 1 }, updated: now });
    await setFile(db, id, file, at);
    expect(await elementById(db, id)).toMatchObject({ file, updated: at });
    await setFile(db, id, null, now);
    expect(await elementById(db, id)).toMatchObject({ file: null, updated: now });
  });
});

describe('permissions', () => {
  it('reads an element with whether the user may do a permission on it, optionally rendered', async () => {
    const note = await ownedNode(alice.id, { n: 1 });
    const mine = await elementWithPermission(db, note, alice.id, 'UPDATE');
    expect(mine).toMatchObject({ allowed: true, row: { id: note, data: { n: 1 } } });
    expect(mine!.row).not.toHaveProperty('body');
    expect(await elementWithPermission(db, note, bob.id, 'READ')).toMatchObject({ allowed: false, row: { id: note } });
    const rendered = await elementWithPermission(db, note, alice.id, 'DELETE', { lock: true, render: true });
    expect(rendered?.allowed).toBe(true);
    expect(JSON.parse(rendered!.row.body!)).toMatchObject({ type: 'Note', id: note, data: { n: 1 } });
    expect(await elementWithPermission(db, randomUUID(), alice.id, 'READ')).toBeNull();
  });

  it('a grant gives its permission on the element and on what it owns', async () => {
    const folder = await ownedNode(alice.id);
    const inside = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', folder, inside);
    expect((await elementWithPermission(db, inside, bob.id, 'READ'))?.allowed).toBe(false);
    await addRelation(db, 'HAS_READ_ACCESS', bob.id, folder);
    expect((await elementWithPermission(db, inside, bob.id, 'READ'))?.allowed).toBe(true);
    expect((await elementWithPermission(db, inside, bob.id, 'SEARCH'))?.allowed).toBe(true);
    expect((await elementWithPermission(db, inside, bob.id, 'UPDATE'))?.allowed).toBe(false);
  });
});

describe('readableElement (GET /<id>)', () => {
  it('tells an unknown caller (401), an element missing or not readable (null), and a readable one apart', async () => {
    const note = await ownedNode(alice.id, { t: 'read me' });
    const read = (credentials: { tokenHash: string }, id: string) => readableElement(db, credentials, now, id);
    expect(await read({ tokenHash: 'nobody' }, note)).toMatchObject({ authenticated: false, body: null });
    expect(await read(bob.credentials, note)).toMatchObject({ authenticated: true, body: null });
    expect(await read(alice.credentials, randomUUID())).toMatchObject({ authenticated: true, body: null });
    const mine = await read(alice.credentials, note);
    expect(mine.authenticated).toBe(true);
    // The owner may also change and delete it (GET's Allow).
    expect(mine.writes).toEqual({ update: true, delete: true });
    expect(JSON.parse(mine.body!)).toMatchObject({ id: note, data: { t: 'read me' } });
  });

  it('remembers an allowed READ under the access epoch, and decides again once the epoch has moved', async () => {
    const note = await ownedNode(alice.id, { t: 'shared' });
    const grant = await addRelation(db, 'HAS_READ_ACCESS', bob.id, note);
    const decisions = new AccessDecisions({ sessionEpoch: db.sessionEpoch });
    const read = () => readableElement(db, bob.credentials, now, note, decisions);
    const first = await read();
    expect(JSON.parse(first.body!)).toMatchObject({ id: note });
    expect(first.writes).toEqual({ update: false, delete: false });
    expect(decisions.size).toBe(1);
    // Remembered: the element is read without deciding, and changes to it show.
    await replaceData(db, note, { t: 'changed' }, now);
    expect(JSON.parse((await read()).body!)).toMatchObject({ data: { t: 'changed' } });
    // Deleting the grant moves the epoch: the READ is decided again, and denied.
    await deleteElement(db, grant);
    expect(await read()).toMatchObject({ authenticated: true, body: null });
    expect(decisions.size).toBe(0);
  });
});

describe('insertNodeAs (POST)', () => {
  const ids = () => ({ id: randomUUID(), ownsId: randomUUID(), createdId: randomUUID() });

  it('inserts a node owned by its creator, with its OWNS and CREATED relations and its search keys', async () => {
    const node = ids();
    const result = await insertNodeAs(db, alice.credentials, now, {
      ...node,
      type: 'Note',
      data: { t: 'new' },
      parentId: null,
    });
    expect(result).toEqual({ authenticated: true, allowed: true, inserted: true });
    expect(await elementById(db, node.id)).toMatchObject({ type: 'Note', data: { t: 'new' }, created: now });
    expect(await elementById(db, node.ownsId)).toMatchObject({ type: 'OWNS', start_id: alice.id, end_id: node.id });
    expect(await elementById(db, node.createdId)).toMatchObject({
      type: 'CREATED',
      start_id: alice.id,
      end_id: node.id,
    });
    const { rows } = await db.query<{ access_keys: string[] }>('SELECT access_keys FROM elements WHERE id = $1', [
      node.id,
    ]);
    expect(rows[0]!.access_keys).toContain(alice.id);
    expect((await db.query('SELECT * FROM trellis_access_index_drift()')).rows).toEqual([]);
  });

  it('inserts below a parent the caller may create in, owned by the parent', async () => {
    const parent = await ownedNode(alice.id);
    const node = ids();
    expect(
      await insertNodeAs(db, alice.credentials, now, { ...node, type: 'Note', data: {}, parentId: parent }),
    ).toEqual({ authenticated: true, allowed: true, inserted: true });
    expect(await elementById(db, node.ownsId)).toMatchObject({ type: 'OWNS', start_id: parent, end_id: node.id });
  });

  it('reports no caller, a parent missing or not permitted, a relation as parent, and a taken id, inserting nothing', async () => {
    const parent = await ownedNode(alice.id);
    const relation = await addRelation(db, 'LINKS', parent, await ownedNode(alice.id));
    const count = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM elements')).rows[0]!.n;
    const before = await count();
    const post = (credentials: { tokenHash: string }, parentId: string | null, id: string = randomUUID()) =>
      insertNodeAs(db, credentials, now, { ...ids(), id, type: 'Note', data: {}, parentId });
    expect(await post({ tokenHash: 'nobody' }, null)).toEqual({
      authenticated: false,
      allowed: false,
      inserted: false,
    });
    expect(await post(bob.credentials, parent)).toEqual({ authenticated: true, allowed: false, inserted: false });
    expect(await post(alice.credentials, randomUUID())).toEqual({
      authenticated: true,
      allowed: false,
      inserted: false,
    });
    expect(await post(alice.credentials, relation)).toEqual({ authenticated: true, allowed: false, inserted: false });
    expect(await post(alice.credentials, null, parent)).toEqual({
      authenticated: true,
      allowed: true,
      inserted: false,
    });
    expect(await count()).toBe(before);
  });
});

describe('updateDataAs (PATCH and PUT)', () => {
  const change = (id: string, overrides: Partial<Parameters<typeof updateDataAs>[3]> = {}) => ({
    id,
    mode: 'merge' as const,
    set: {},
    remove: [],
    keep: {},
    limits: [10_000, 100] as [number, number],
    ...overrides,
  });

  it('merges, removes and replaces, keeping the properties `keep` names for the type', async () => {
    const id = await ownedNode(alice.id, { a: 1, b: 2, kept: 'k', other: 'o' });
    expect(await updateDataAs(db, alice.credentials, now, change(id, { set: { c: 3 }, remove: ['a'] }))).toEqual({
      authenticated: true,
      updated: true,
    });
    expect(await elementById(db, id)).toMatchObject({ data: { b: 2, c: 3, kept: 'k', other: 'o' }, updated: now });
    await updateDataAs(
      db,
      alice.credentials,
      now,
      change(id, { mode: 'replace', set: { d: 4 }, keep: { Note: ['kept'] } }),
    );
    expect(await dataOf(id)).toEqual({ d: 4, kept: 'k' });
    await updateDataAs(
      db,
      alice.credentials,
      now,
      change(id, { mode: 'replace', set: { e: 5 }, keep: { '*': ['d'] } }),
    );
    expect(await dataOf(id)).toEqual({ e: 5, d: 4 });
  });

  it('changes nothing for a caller without UPDATE, a missing element or unknown credentials', async () => {
    const id = await ownedNode(alice.id, { a: 1 });
    expect(await updateDataAs(db, bob.credentials, now, change(id, { set: { a: 2 } }))).toEqual({
      authenticated: true,
      updated: false,
    });
    expect(await updateDataAs(db, alice.credentials, now, change(randomUUID(), { set: { a: 2 } }))).toEqual({
      authenticated: true,
      updated: false,
    });
    expect(await updateDataAs(db, { tokenHash: 'nobody' }, now, change(id, { set: { a: 2 } }))).toEqual({
      authenticated: false,
      updated: false,
    });
    expect(await dataOf(id)).toEqual({ a: 1 });
  });

  it('refuses a merge whose result exceeds the limits (54000), naming the limit, and keeps the data', async () => {
    const id = await ownedNode(alice.id, { text: 'x'.repeat(50) });
    const tooBig = await updateDataAs(
      db,
      alice.credentials,
      now,
      change(id, { set: { more: 'y'.repeat(50) }, limits: [80, 100] }),
    ).catch((e: unknown) => e);
    expect(tooBig).toMatchObject({ code: '54000', message: 'element data larger than 80 bytes' });
    const tooMany = await updateDataAs(
      db,
      alice.credentials,
      now,
      change(id, { set: { list: [1, 2, 3] }, limits: [10_000, 3] }),
    ).catch((e: unknown) => e);
    expect(tooMany).toMatchObject({ code: '54000', message: 'element data with more than 3 keys and array items' });
    expect(await dataOf(id)).toEqual({ text: 'x'.repeat(50) });
  });

  it('remembers an allowed UPDATE, and does not apply a remembered one once the epoch has moved', async () => {
    const id = await ownedNode(bob.id, { v: 0 });
    const grant = await addRelation(db, 'HAS_UPDATE_ACCESS', alice.id, id);
    const decisions = new AccessDecisions();
    const update = (v: number) => updateDataAs(db, alice.credentials, now, change(id, { set: { v } }), decisions);
    expect(await update(1)).toEqual({ authenticated: true, updated: true });
    expect(decisions.size).toBe(1);
    expect(await update(2)).toEqual({ authenticated: true, updated: true });
    expect(await dataOf(id)).toEqual({ v: 2 });
    await deleteElement(db, grant);
    expect(await update(3)).toEqual({ authenticated: true, updated: false });
    expect(await dataOf(id)).toEqual({ v: 2 });
    expect(decisions.size).toBe(0);
  });
});

describe('deleteElement', () => {
  it('deletes an element with its relations, transitively, and returns those of them that had files', async () => {
    const a = await ownedNode(alice.id);
    const b = await addNode(db, 'Note');
    const ab = await addRelation(db, 'LINKS', a, b);
    const onRelation = await addRelation(db, 'ABOUT', ab, b);
    await setFile(db, a, file, now);
    await setFile(db, onRelation, file, now);
    await setFile(db, b, file, now);
    expect((await deleteElement(db, a)).sort()).toEqual([a, onRelation].sort());
    for (const id of [a, ab, onRelation]) expect(await elementById(db, id)).toBeNull();
    expect(await elementById(db, b)).not.toBeNull();
    expect(await deleteElement(db, randomUUID())).toEqual([]);
  });
});

describe('elementTypes', () => {
  it('lists the node and relation types, each once and sorted, without the internal ones', async () => {
    const x = await addNode(db, 'Zebra');
    const y = await addNode(db, 'Apple');
    await addNode(db, '_Internal');
    await addNode(db, 'Zebra');
    await addRelation(db, 'Apple', y, x);
    await addRelation(db, '_internal_link', y, x);
    const types = await elementTypes(db);
    // What a plain scan of every row finds.
    const { rows } = await db.query<{ type: string; node: boolean }>(
      `SELECT DISTINCT type, start_id IS NULL AS node FROM elements WHERE type NOT LIKE '\\_%' ORDER BY type`,
    );
    expect(types).toEqual({
      nodeTypes: rows.filter((r) => r.node).map((r) => r.type),
      relationTypes: rows.filter((r) => !r.node).map((r) => r.type),
    });
    expect(types.nodeTypes).toEqual(expect.arrayContaining(['Apple', 'Note', 'User', 'Zebra']));
    expect(types.relationTypes).toEqual(expect.arrayContaining(['Apple', 'CREATED', 'OWNS']));
    expect([...types.nodeTypes, ...types.relationTypes].filter((t) => t.startsWith('_'))).toEqual([]);
  });
});
