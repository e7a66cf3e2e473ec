// Migration 020 on a database that already holds two spellings of one e-mail address: both accounts are kept, each
// logs in with its exact spelling, the smallest id with any other spelling, and a third spelling cannot register.
import { describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/domain/accounts/passwords.js';
import { userByIdentifier } from '../../src/storage/queries/accounts.js';
import { migrate } from '../../src/storage/migrate.js';
import { migrations } from '../../src/storage/migrations/index.js';
import { backendsUnderTest, freshDatabase } from '../helpers/harness.js';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

for (const backend of backendsUnderTest()) {
  describe(`migration 020 with case duplicates [${backend}]`, () => {
    it('keeps both accounts and makes the address unique from then on', async () => {
      const { db, dispose } = await freshDatabase(backend);
      try {
        await db.query('DROP SCHEMA public CASCADE');
        await db.query('CREATE SCHEMA public');
        await migrate(db, migrations.filter((m) => m.version < 20));
        const hash = await hashPassword('whatever-secret');
        for (const [id, identifier] of [[B, 'Twice@Example.dev'], [A, 'twice@example.dev']] as const) {
          await db.query(`INSERT INTO elements (id, type, data, created, updated) VALUES ($1, 'User', $2, now(), now())`, [id, { email: identifier }]);
          await db.query('INSERT INTO users (id, identifier, password_hash) VALUES ($1, $2, $3)', [id, identifier, hash]);
        }
        expect(await migrate(db)).toContain(20);
        expect((await userByIdentifier(db, 'Twice@Example.dev'))?.id).toBe(B);
        expect((await userByIdentifier(db, 'twice@example.dev'))?.id).toBe(A);
        expect((await userByIdentifier(db, 'TWICE@EXAMPLE.DEV'))?.id).toBe(A);
        await expect(db.query(`INSERT INTO users (id, identifier) VALUES ($1, 'TWICE@example.dev')`, [B])).rejects.toMatchObject({ code: '23505' });
      } finally {
        await dispose();
      }
    });
  });
}
