// An in-memory PGlite with the real schema, for unit tests of modules that run SQL (no PostgreSQL server).
import { randomUUID } from 'node:crypto';
import type { Db } from '../../../src/storage/db.js';
import { migrate } from '../../../src/storage/migrate.js';
import { pgliteDb } from '../../../src/storage/pglite.js';
import { newPglite } from '../../helpers/pglite-template.js';

/** A fresh, migrated in-memory database of its own (its PGlite closes with it). */
export async function migratedDb(): Promise<Db> {
  const db = await pgliteDb(await newPglite('migrated'), true);
  await migrate(db);
  return db;
}

const at = new Date('2026-01-01T00:00:00Z');

/** Inserts a node of `type` (with `data`) and returns its id. */
export async function addNode(db: Db, type: string, data: Record<string, unknown> = {}): Promise<string> {
  const id = randomUUID();
  await db.query('INSERT INTO elements (id, type, data, created, updated) VALUES ($1, $2, $3, $4, $4)', [
    id,
    type,
    data,
    at,
  ]);
  return id;
}

/** Inserts a relation of `type` from `start` to `end` and returns its id. */
export async function addRelation(db: Db, type: string, start: string, end: string): Promise<string> {
  const id = randomUUID();
  await db.query(
    'INSERT INTO elements (id, type, start_id, end_id, created, updated) VALUES ($1, $2, $3, $4, $5, $5)',
    [id, type, start, end, at],
  );
  return id;
}

/** A User node with its users row (no password) and returns its id. */
export async function addUser(db: Db, identifier: string): Promise<string> {
  const id = await addNode(db, 'User', { identifier });
  await db.query('INSERT INTO users (id, identifier) VALUES ($1, $2)', [id, identifier]);
  return id;
}
