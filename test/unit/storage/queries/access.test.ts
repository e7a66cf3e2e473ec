// The access module's SQL (src/storage/queries/access.ts), on an in-memory PGlite with the real schema: the rules
// as the functions decide them (permittedIds), and every inlined or set-wise form of them, on one small graph with
// every kind of grant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Permission } from '../../../../src/domain/elements/types.js';
import type { Db } from '../../../../src/storage/db.js';
import {
  accessSetsCtes,
  deferAccessIndex,
  grantedSql,
  inlineCheck,
  inlineReadCheck,
  owns,
  permittedIds,
  principalsSql,
  readableSetwise,
  rebuildAccessIndex,
  searchableIndexed,
} from '../../../../src/storage/queries/access.js';
import { addNode, addRelation, addUser, migratedDb } from '../../helpers/database.js';

const PERMISSIONS: Permission[] = ['READ', 'SEARCH', 'CREATE', 'UPDATE', 'DELETE'];

let db: Db;
/** The graph: every element by name. */
const g: Record<string, string> = {};
let everything: string[];

// ann owns a folder holding a note and a sub-folder holding a deep note; bob is in team, team in company;
// company may read the folder, team may search a loose node, bob may update and delete his own draft's sibling,
// carl created a node ann owns. dave is in no group and has nothing.
beforeAll(async () => {
  db = await migratedDb();
  for (const user of ['ann', 'bob', 'carl', 'dave']) g[user] = await addUser(db, `${user}@access.org`);
  for (const node of ['team', 'company', 'folder', 'note', 'sub', 'deep', 'loose', 'draft', 'sibling', 'gift'])
    g[node] = await addNode(db, node === 'team' || node === 'company' ? 'Group' : 'Note');
  const rel = async (name: string, type: string, start: string, end: string) => {
    g[name] = await addRelation(db, type, g[start]!, g[end]!);
  };
  await rel('bobInTeam', 'IS_IN_GROUP', 'bob', 'team');
  await rel('teamInCompany', 'IS_IN_GROUP', 'team', 'company');
  await rel('annOwnsFolder', 'OWNS', 'ann', 'folder');
  await rel('folderOwnsNote', 'OWNS', 'folder', 'note');
  await rel('folderOwnsSub', 'OWNS', 'folder', 'sub');
  await rel('subOwnsDeep', 'OWNS', 'sub', 'deep');
  await rel('companyReads', 'HAS_READ_ACCESS', 'company', 'folder');
  await rel('teamSearches', 'HAS_SEARCH_ACCESS', 'team', 'loose');
  await rel('bobOwnsDraft', 'OWNS', 'bob', 'draft');
  await rel('bobUpdates', 'HAS_UPDATE_ACCESS', 'bob', 'sibling');
  await rel('bobDeletes', 'HAS_DELETE_ACCESS', 'bob', 'sibling');
  await rel('annCreates', 'HAS_CREATE_ACCESS', 'ann', 'sibling');
  await rel('annOwnsGift', 'OWNS', 'ann', 'gift');
  await rel('carlCreatedGift', 'CREATED', 'carl', 'gift');
  await rel('noteLinksDraft', 'LINKS', 'note', 'draft');
  await rel('deepLinksNote', 'LINKS', 'deep', 'note');
  await rel('looseLinksGift', 'LINKS', 'loose', 'gift');
  everything = Object.values(g);
});
afterAll(() => db.close());

const named = (ids: Iterable<string>) =>
  [...ids].map((id) => Object.keys(g).find((name) => g[name] === id) ?? id).sort();

/** The elements `user` may do `permission` on, by the SQL functions of the schema. */
const byFunctions = async (user: string, permission: Permission) =>
  named(await permittedIds(db, g[user]!, permission, everything));

/** The same, by a boolean SQL expression over the row alias `e` (with `$1` the user), after `ctes`. */
async function byExpression(user: string, expression: string, ctes = ''): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `${ctes ? `WITH ${ctes} ` : ''}SELECT e.id FROM elements e WHERE e.id = ANY($2::uuid[]) AND (${expression})`,
    [g[user], everything],
  );
  return named(rows.map((r) => r.id));
}

describe('the rules (permittedIds)', () => {
  it('owners may do everything on what they own, transitively', async () => {
    const ann = await byFunctions('ann', 'DELETE');
    expect(ann).toEqual(expect.arrayContaining(['folder', 'note', 'sub', 'deep', 'gift']));
    expect(ann).not.toContain('draft');
  });

  it('a READ grant to a group reaches its members, the element and what it owns, for READ and SEARCH only', async () => {
    for (const permission of ['READ', 'SEARCH'] as const)
      expect(await byFunctions('bob', permission)).toEqual(
        expect.arrayContaining(['folder', 'note', 'sub', 'deep', 'team', 'company']),
      );
    expect(await byFunctions('bob', 'UPDATE')).not.toContain('folder');
  });

  it('SEARCH access allows searching but not reading', async () => {
    expect(await byFunctions('bob', 'SEARCH')).toContain('loose');
    expect(await byFunctions('bob', 'READ')).not.toContain('loose');
  });

  it('grants give exactly their permission; the creator may read what it created', async () => {
    expect(await byFunctions('bob', 'UPDATE')).toContain('sibling');
    expect(await byFunctions('bob', 'DELETE')).toContain('sibling');
    expect(await byFunctions('bob', 'CREATE')).not.toContain('sibling');
    expect(await byFunctions('ann', 'CREATE')).toContain('sibling');
    expect(await byFunctions('carl', 'READ')).toContain('gift');
    expect(await byFunctions('carl', 'UPDATE')).not.toContain('gift');
  });

  it('a user reads, searches and creates in itself and its groups, and changes them only as an owner', async () => {
    for (const permission of ['READ', 'SEARCH', 'CREATE'] as const)
      expect(await byFunctions('bob', permission)).toEqual(expect.arrayContaining(['bob', 'team', 'company']));
    expect(await byFunctions('bob', 'UPDATE')).not.toContain('team');
  });

  it('a relation is readable with READ on both ends; an access relation by its start and the owners of its end', async () => {
    expect(await byFunctions('bob', 'READ')).toEqual(expect.arrayContaining(['noteLinksDraft', 'deepLinksNote']));
    expect(await byFunctions('dave', 'READ')).toEqual(['dave']);
    expect(await byFunctions('bob', 'DELETE')).toEqual(expect.arrayContaining(['bobUpdates', 'bobInTeam']));
    expect(await byFunctions('ann', 'DELETE')).toContain('companyReads');
    expect(await byFunctions('bob', 'DELETE')).not.toContain('companyReads');
  });

  it('answers nothing for no ids and for ids that do not exist', async () => {
    expect(await permittedIds(db, g.ann!, 'READ', [])).toEqual(new Set());
    expect(await permittedIds(db, g.ann!, 'READ', ['00000000-0000-4000-8000-000000000001'])).toEqual(new Set());
  });
});

describe('the inlined and set-wise forms decide as the functions do', () => {
  const users = ['ann', 'bob', 'carl', 'dave'];

  it('inlineCheck, for every user and permission', async () => {
    for (const user of users)
      for (const permission of PERMISSIONS)
        expect([user, permission, await byExpression(user, inlineCheck('$1::uuid', permission))]).toEqual([
          user,
          permission,
          await byFunctions(user, permission),
        ]);
  });

  it('inlineReadCheck is the READ check, on any row alias', async () => {
    for (const user of users) {
      const { rows } = await db.query<{ id: string }>(
        `SELECT x.id FROM elements x WHERE x.id = ANY($2::uuid[]) AND ${inlineReadCheck('$1::uuid', 'x')}`,
        [g[user], everything],
      );
      expect(named(rows.map((r) => r.id))).toEqual(await byFunctions(user, 'READ'));
    }
  });

  it('readableSetwise (READ) and searchableIndexed (SEARCH), hashing the grants and per candidate', async () => {
    for (const caps of [undefined, { grants: 0 }])
      for (const user of users) {
        expect(await byExpression(user, readableSetwise('$1::uuid'), accessSetsCtes('READ', caps))).toEqual(
          await byFunctions(user, 'READ'),
        );
        expect(await byExpression(user, searchableIndexed('$1::uuid'), accessSetsCtes('SEARCH', caps))).toEqual(
          await byFunctions(user, 'SEARCH'),
        );
      }
  });

  it('grantedSql and principalsSql: a grant from one of the principals to the target or an owner of it', async () => {
    const granted = async (user: string, target: string, permission: Permission) => {
      const { rows } = await db.query<{ ok: boolean }>(
        `SELECT ${grantedSql(principalsSql('$1::uuid'), '$2::uuid', permission)} AS ok`,
        [g[user], g[target]],
      );
      return rows[0]!.ok;
    };
    expect(await granted('bob', 'deep', 'READ')).toBe(true);
    expect(await granted('bob', 'deep', 'UPDATE')).toBe(false);
    expect(await granted('bob', 'loose', 'SEARCH')).toBe(true);
    expect(await granted('bob', 'loose', 'READ')).toBe(false);
    expect(await granted('ann', 'deep', 'DELETE')).toBe(true);
    // The creator's own right is not a grant.
    expect(await granted('carl', 'gift', 'READ')).toBe(false);
    const { rows } = await db.query<{ ids: string[] }>(`SELECT ${principalsSql('$1::uuid')} AS ids`, [g.bob]);
    expect(named(rows[0]!.ids)).toEqual(['bob', 'company', 'team']);
  });
});

describe('ownership and the access index', () => {
  it('owns: an OWNS path from the user or one of its groups', async () => {
    expect(await owns(db, g.ann!, g.deep!)).toBe(true);
    expect(await owns(db, g.bob!, g.deep!)).toBe(false);
    expect(await owns(db, g.carl!, g.gift!)).toBe(false);
    const teamNote = await addNode(db, 'Note');
    await addRelation(db, 'OWNS', g.company!, teamNote);
    expect(await owns(db, g.bob!, teamNote)).toBe(true);
  });

  it('defers the index in a bulk load, and the rebuild in the same transaction makes it whole', async () => {
    const epoch = async () => (await db.query<{ epoch: number }>('SELECT epoch FROM access_epoch')).rows[0]!.epoch;
    const before = await epoch();
    const [parent, child] = await db.transaction(async (tx) => {
      await deferAccessIndex(tx);
      const parent = await addNode(tx as Db, 'Note');
      const child = await addNode(tx as Db, 'Note');
      await addRelation(tx as Db, 'OWNS', g.dave!, parent);
      await addRelation(tx as Db, 'OWNS', parent, child);
      const { rows } = await tx.query('SELECT * FROM element_owners WHERE element_id = $1', [child]);
      expect(rows).toEqual([]);
      await rebuildAccessIndex(tx);
      return [parent, child];
    });
    const { rows } = await db.query<{ owner_id: string }>(
      'SELECT owner_id FROM element_owners WHERE element_id = $1 ORDER BY owner_id',
      [child],
    );
    expect(rows.map((r) => r.owner_id).sort()).toEqual([g.dave, parent].sort());
    expect(await owns(db, g.dave!, child)).toBe(true);
    expect((await db.query('SELECT * FROM trellis_access_index_drift()')).rows).toEqual([]);
    // A rebuild may take permissions away (it repairs drift): it moves the epoch.
    expect(await epoch()).toBeGreaterThan(before);
  });
});
