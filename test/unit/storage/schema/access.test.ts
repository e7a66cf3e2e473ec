// The access model's schema (src/storage/schema/access.ts) on an in-memory PGlite: the closures and search keys its
// triggers keep, the drift check that compares them with the relations, the rebuild, and the access epoch.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../../src/storage/db.js';
import { ACCESS_EPOCH, ACCESS_INDEX, ACCESS_KEYS, ACCESS_RULES } from '../../../../src/storage/schema/access.js';
import { migrations } from '../../../../src/storage/schema/index.js';
import { addNode, addRelation, addUser, migratedDb } from '../../helpers/database.js';

let db: Db;
beforeAll(async () => {
  db = await migratedDb();
});
afterAll(() => db.close());

/** Owners of `id` in the access index. */
async function ownersOf(id: string): Promise<string[]> {
  const { rows } = await db.query<{ owner_id: string }>('SELECT owner_id FROM element_owners WHERE element_id = $1', [
    id,
  ]);
  return rows.map((r) => r.owner_id).sort();
}

async function groupsOf(id: string): Promise<string[]> {
  const { rows } = await db.query<{ group_id: string }>('SELECT group_id FROM group_memberships WHERE member_id = $1', [
    id,
  ]);
  return rows.map((r) => r.group_id).sort();
}

async function keysOf(id: string): Promise<string[]> {
  const { rows } = await db.query<{ access_keys: string[] }>('SELECT access_keys FROM elements WHERE id = $1', [id]);
  return [...rows[0]!.access_keys].sort();
}

const drift = async () =>
  (
    await db.query<{ closure: string; a: string; b: string; problem: string }>(
      'SELECT * FROM trellis_access_index_drift()',
    )
  ).rows;

const epoch = async () => (await db.query<{ epoch: number }>('SELECT epoch FROM access_epoch')).rows[0]!.epoch;

const sorted = (...ids: string[]) => [...ids].sort();

describe('the baseline holds the access SQL', () => {
  it('in dependency order: the index, the rules, the keys, the epoch', () => {
    const baseline = migrations.find((m) => m.version === 1)!.sql;
    const at = (part: string) => baseline.indexOf(part);
    for (const part of [ACCESS_INDEX, ACCESS_RULES, ACCESS_KEYS, ACCESS_EPOCH]) expect(at(part)).toBeGreaterThan(-1);
    expect(at(ACCESS_INDEX)).toBeLessThan(at(ACCESS_RULES));
    expect(at(ACCESS_RULES)).toBeLessThan(at(ACCESS_KEYS));
    expect(at(ACCESS_KEYS)).toBeLessThan(at(ACCESS_EPOCH));
  });
});

describe('the access index (element_owners, group_memberships)', () => {
  beforeEach(async () => {
    expect(await drift()).toEqual([]);
  });

  it('records a new node below its parent with the parent and the parent’s owners', async () => {
    const user = await addNode(db, 'User');
    const top = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', user, top);
    const child = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', top, child);
    expect(await ownersOf(top)).toEqual([user]);
    expect(await ownersOf(child)).toEqual(sorted(user, top));
    expect(await drift()).toEqual([]);
  });

  it('attaching a subtree below another owner gives everything in it the new owners; detaching takes them away', async () => {
    const a = await addNode(db, 'User');
    const b = await addNode(db, 'User');
    const subtree = await addNode(db, 'Note');
    const leaf = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', a, subtree);
    await addRelation(db, 'OWNS', subtree, leaf);
    const second = await addRelation(db, 'OWNS', b, subtree);
    expect(await ownersOf(leaf)).toEqual(sorted(a, b, subtree));
    await db.query('DELETE FROM elements WHERE id = $1', [second]);
    expect(await ownersOf(leaf)).toEqual(sorted(a, subtree));
    expect(await drift()).toEqual([]);
  });

  it('re-pointing an OWNS relation moves the owners; deleting an owned node removes its rows', async () => {
    const a = await addNode(db, 'User');
    const b = await addNode(db, 'User');
    const node = await addNode(db, 'Note');
    const below = await addNode(db, 'Note');
    const owns = await addRelation(db, 'OWNS', a, node);
    await addRelation(db, 'OWNS', node, below);
    await db.query('UPDATE elements SET start_id = $2 WHERE id = $1', [owns, b]);
    expect(await ownersOf(below)).toEqual(sorted(b, node));
    await db.query('DELETE FROM elements WHERE id = $1', [node]);
    expect(await ownersOf(node)).toEqual([]);
    expect(await ownersOf(below)).toEqual([]);
    expect(await drift()).toEqual([]);
  });

  it('an ownership cycle lists no element as its own owner', async () => {
    const x = await addNode(db, 'Note');
    const y = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', x, y);
    await addRelation(db, 'OWNS', y, x);
    expect(await ownersOf(x)).toEqual([y]);
    expect(await ownersOf(y)).toEqual([x]);
    expect(await drift()).toEqual([]);
  });

  it('keeps group memberships transitive as IS_IN_GROUP relations come and go', async () => {
    const user = await addNode(db, 'User');
    const team = await addNode(db, 'Group');
    const company = await addNode(db, 'Group');
    await addRelation(db, 'IS_IN_GROUP', user, team);
    const up = await addRelation(db, 'IS_IN_GROUP', team, company);
    expect(await groupsOf(user)).toEqual(sorted(team, company));
    await db.query('DELETE FROM elements WHERE id = $1', [up]);
    expect(await groupsOf(user)).toEqual([team]);
    expect(await groupsOf(team)).toEqual([]);
    expect(await drift()).toEqual([]);
  });
});

describe('the search keys (access_keys)', () => {
  it('are a node’s owners and creators, kept as CREATED and OWNS relations change', async () => {
    const owner = await addNode(db, 'User');
    const creator = await addNode(db, 'User');
    const node = await addNode(db, 'Note');
    const owns = await addRelation(db, 'OWNS', owner, node);
    expect(await keysOf(node)).toEqual([owner]);
    const created = await addRelation(db, 'CREATED', creator, node);
    expect(await keysOf(node)).toEqual(sorted(owner, creator));
    await db.query('DELETE FROM elements WHERE id = $1', [created]);
    expect(await keysOf(node)).toEqual([owner]);
    await db.query('DELETE FROM elements WHERE id = $1', [owns]);
    expect(await keysOf(node)).toEqual([]);
    expect(await drift()).toEqual([]);
  });

  it('of everything below a node follow an owner added above it', async () => {
    const first = await addNode(db, 'User');
    const second = await addNode(db, 'User');
    const top = await addNode(db, 'Note');
    const below = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', first, top);
    await addRelation(db, 'OWNS', top, below);
    await addRelation(db, 'OWNS', second, top);
    expect(await keysOf(below)).toEqual(sorted(first, second, top));
    expect(await drift()).toEqual([]);
  });
});

describe('the drift check and the rebuild', () => {
  it('names rows missing from or stale in the closures and the keys, and the rebuild repairs them', async () => {
    const owner = await addNode(db, 'User');
    const node = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', owner, node);
    const stranger = await addNode(db, 'User');
    // Damage the index behind the triggers' back.
    await db.query('DELETE FROM element_owners WHERE element_id = $1', [node]);
    await db.query('INSERT INTO group_memberships (member_id, group_id) VALUES ($1, $2)', [stranger, owner]);
    await db.query('UPDATE elements SET access_keys = ARRAY[$2::uuid] WHERE id = $1', [node, stranger]);
    const found = await drift();
    expect(found).toEqual(
      expect.arrayContaining([
        { closure: 'element_owners', a: node, b: owner, problem: 'missing' },
        { closure: 'group_memberships', a: stranger, b: owner, problem: 'stale' },
        // The keys are checked against the closure as it stands: with the owner missing there, so is its key.
        { closure: 'access_keys', a: node, b: stranger, problem: 'stale' },
      ]),
    );
    expect(found).toHaveLength(3);
    const before = await epoch();
    await db.query('SELECT trellis_rebuild_access_index()');
    expect(await drift()).toEqual([]);
    expect(await ownersOf(node)).toEqual([owner]);
    expect(await keysOf(node)).toEqual([owner]);
    expect(await epoch()).toBe(before + 1);
  });

  it('while deferred for a bulk load, the triggers stand aside until the rebuild', async () => {
    const owner = await addNode(db, 'User');
    const node = await db.transaction(async (tx) => {
      await tx.query(`SELECT set_config('trellis.defer_access_index', 'on', true)`);
      const node = await addNode(tx as Db, 'Note');
      const owns = await addRelation(tx as Db, 'OWNS', owner, node);
      expect((await tx.query('SELECT * FROM element_owners WHERE element_id = $1', [node])).rows).toEqual([]);
      const drifted = await tx.query('SELECT * FROM trellis_access_index_drift()');
      // The relation was written without its search keys (its end and its start) too.
      expect(new Set(drifted.rows)).toEqual(
        new Set([
          { closure: 'element_owners', a: node, b: owner, problem: 'missing' },
          { closure: 'access_keys', a: owns, b: node, problem: 'missing' },
          { closure: 'access_keys', a: owns, b: owner, problem: 'missing' },
        ]),
      );
      await tx.query('SELECT trellis_rebuild_access_index()');
      return node;
    });
    expect(await ownersOf(node)).toEqual([owner]);
    expect(await drift()).toEqual([]);
  });
});

describe('the access epoch', () => {
  it('moves once per transaction that deletes or re-points, never for inserts or data changes', async () => {
    const start = await epoch();
    const a = await addNode(db, 'Note');
    const b = await addNode(db, 'Note');
    const rel = await addRelation(db, 'LINKS', a, b);
    await db.query(`UPDATE elements SET data = '{"x":1}' WHERE id = $1`, [a]);
    expect(await epoch()).toBe(start);
    await db.query('UPDATE elements SET end_id = $2 WHERE id = $1', [rel, a]);
    expect(await epoch()).toBe(start + 1);
    // Setting the same ends again changes nothing.
    await db.query('UPDATE elements SET end_id = $2 WHERE id = $1', [rel, a]);
    expect(await epoch()).toBe(start + 1);
    await db.transaction(async (tx) => {
      await tx.query('DELETE FROM elements WHERE id = $1', [rel]);
      await tx.query('DELETE FROM elements WHERE id = $1', [b]);
    });
    expect(await epoch()).toBe(start + 2);
  });

  it('moves when a token changes or a user goes, and a rolled-back change leaves it', async () => {
    const user = await addUser(db, 'epoch@access.org');
    const token = await addNode(db, 'Token');
    const start = await epoch();
    await db.query(
      `INSERT INTO tokens (id, hash, user_id, state, issued) VALUES ($1, 'epoch-token', $2, 'ACTIVE', now())`,
      [token, user],
    );
    expect(await epoch()).toBe(start);
    await db.query(`UPDATE tokens SET state = 'REVOKED' WHERE id = $1`, [token]);
    expect(await epoch()).toBe(start + 1);
    const failed = await db
      .transaction(async (tx) => {
        await tx.query('DELETE FROM users WHERE id = $1', [user]);
        throw new Error('changed my mind');
      })
      .catch((e: Error) => e.message);
    expect(failed).toBe('changed my mind');
    expect(await epoch()).toBe(start + 1);
    await db.query('DELETE FROM users WHERE id = $1', [user]);
    expect(await epoch()).toBe(start + 2);
  });

  it('is notified on trellis_access_epoch, which the PGlite session follows', async () => {
    const node = await addNode(db, 'Note');
    await db.query('SELECT epoch FROM access_epoch');
    const before = await epoch();
    await db.query('DELETE FROM elements WHERE id = $1', [node]);
    expect(db.sessionEpoch?.current).toBe(String(before + 1));
  });
});
