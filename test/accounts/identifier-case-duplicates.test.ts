// A database holding two spellings of one e-mail address (a backup may bring them): both accounts are kept, each
// logs in with its exact spelling, the smallest id with any other spelling, and a third spelling cannot register.
import { describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/domain/accounts/passwords.js';
import { userByIdentifier } from '../../src/storage/queries/accounts.js';
import { insertUserRows } from '../../src/storage/queries/backup.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

for (const backend of backendsUnderTest()) {
  describe(`identifiers with case duplicates [${backend}]`, () => {
    it('keeps both accounts and keeps the address unique', async () => {
      const { db, dispose } = await freshDatabase(backend);
      try {
        const hash = await hashPassword('whatever-secret');
        const users = [
          { id: B, identifier: 'Twice@Example.dev', password_hash: hash },
          { id: A, identifier: 'twice@example.dev', password_hash: hash },
        ];
        for (const { id, identifier } of users)
          await db.query(
            `INSERT INTO elements (id, type, data, created, updated) VALUES ($1, 'User', $2, now(), now())`,
            [id, { email: identifier }],
          );
        await insertUserRows(db, users);
        expect((await userByIdentifier(db, 'Twice@Example.dev'))?.id).toBe(B);
        expect((await userByIdentifier(db, 'twice@example.dev'))?.id).toBe(A);
        expect((await userByIdentifier(db, 'TWICE@EXAMPLE.DEV'))?.id).toBe(A);
        await expect(
          db.query(`INSERT INTO users (id, identifier) VALUES ($1, 'TWICE@example.dev')`, [B]),
        ).rejects.toMatchObject({ code: '23505' });
      } finally {
        await dispose();
      }
    });
  });
}
