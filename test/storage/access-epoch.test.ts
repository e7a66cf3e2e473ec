// The access epoch (schema/access.ts): it moves, once per transaction and only when it commits, exactly on the
// changes that can take a permission away or invalidate a token, and stays put on everything else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/db.js';
import { insertToken } from '../../src/storage/queries/accounts.js';
import { insertElement } from '../../src/storage/queries/elements.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

for (const backend of backendsUnderTest()) {
  describe(`access epoch [${backend}]`, () => {
    let db: Db;
    let dispose: () => Promise<void>;
    const at = new Date('2026-11-24T12:00:00Z');
    const ids = () => Array.from({ length: 4 }, () => crypto.randomUUID());
    const node = (q: Db, id: string) => insertElement(q, { id, type: 'Doc', data: {}, at });
    const relation = (q: Db, id: string, type: string, start: string, end: string) =>
      insertElement(q, { id, type, start, end, data: {}, at });
    const epoch = async () =>
      BigInt((await db.query<{ e: string }>('SELECT epoch::text AS e FROM access_epoch')).rows[0]!.e);
    /** How far `change` moves the epoch. */
    const moves = async (change: () => Promise<unknown>) => {
      const before = await epoch();
      await change();
      return Number((await epoch()) - before);
    };

    beforeAll(async () => {
      ({ db, dispose } = await freshDatabase(backend));
    });
    afterAll(async () => {
      await dispose();
    });

    it('stays put on inserts and on changes of data, files and passwords', async () => {
      const [a, b, r] = ids() as [string, string, string];
      expect(await moves(() => node(db, a))).toBe(0);
      expect(await moves(() => node(db, b))).toBe(0);
      expect(await moves(() => relation(db, r, 'OWNS', a, b))).toBe(0);
      expect(
        await moves(() =>
          db.query(`UPDATE elements SET data = '{"x": 1}', updated = now() WHERE id = ANY($1::uuid[])`, [[a, b, r]]),
        ),
      ).toBe(0);
      // An UPDATE naming the columns without changing them.
      expect(
        await moves(() =>
          db.query('UPDATE elements SET type = type, start_id = start_id, end_id = end_id WHERE id = $1', [r]),
        ),
      ).toBe(0);
    });

    it('moves once per transaction that deletes elements or changes a relation, and not when it rolls back', async () => {
      const [a, b, c, r] = ids() as [string, string, string, string];
      await node(db, a);
      await node(db, b);
      await node(db, c);
      await relation(db, r, 'HAS_TAG', a, b);
      expect(await moves(() => db.query('UPDATE elements SET end_id = $2 WHERE id = $1', [r, c]))).toBe(1);
      expect(await moves(() => db.query(`UPDATE elements SET type = 'OWNS' WHERE id = $1`, [r]))).toBe(1);
      const rollback = new Error('rollback');
      expect(
        await moves(() =>
          db
            .transaction(async (tx) => {
              await tx.query('DELETE FROM elements WHERE id = $1', [c]);
              throw rollback;
            })
            .catch((e: unknown) => {
              if (e !== rollback) throw e;
            }),
        ),
      ).toBe(0);
      // Deleting a node deletes its relations too (cascade): still one step for the transaction.
      expect(
        await moves(() =>
          db.transaction(async (tx) => {
            await tx.query('DELETE FROM elements WHERE id = $1', [c]);
            await tx.query('DELETE FROM elements WHERE id = $1', [b]);
          }),
        ),
      ).toBe(1);
      expect(await moves(() => db.query('DELETE FROM elements WHERE id = $1', [a]))).toBe(1);
      expect(await moves(() => db.query('DELETE FROM elements WHERE id = $1', [a]))).toBe(0);
    });

    it('moves when a token is changed or deleted, or a user deleted, and when the access index is rebuilt', async () => {
      const [user, token] = ids() as [string, string];
      await insertElement(db, { id: user, type: 'User', data: {}, at });
      await db.query('INSERT INTO users (id, identifier, password_hash) VALUES ($1, $2, NULL)', [
        user,
        `${user}@epoch.dev`,
      ]);
      await insertElement(db, { id: token, type: 'Token', data: {}, at });
      expect(
        await moves(() =>
          insertToken(db, { id: token, hash: token, userId: user, state: 'ACTIVE', issued: at, expires: null }),
        ),
      ).toBe(0);
      expect(await moves(() => db.query(`UPDATE tokens SET state = 'REVOKED' WHERE id = $1`, [token]))).toBe(1);
      expect(await moves(() => db.query('DELETE FROM tokens WHERE id = $1', [token]))).toBe(1);
      expect(await moves(() => db.query('UPDATE users SET password_hash = $2 WHERE id = $1', [user, 'x']))).toBe(0);
      expect(await moves(() => db.query('DELETE FROM users WHERE id = $1', [user]))).toBe(1);
      expect(await moves(() => db.query('SELECT trellis_rebuild_access_index()'))).toBe(1);
    });
  });
}
