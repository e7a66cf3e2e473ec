import { describe, expect, it } from 'vitest';
import { splitStatements } from '../../../src/storage/migrate.js';

describe('splitStatements', () => {
  it('splits at semicolons outside quotes, dollar quotes and comments', () => {
    const sql = `-- a comment; with a semicolon
CREATE TABLE a (x text DEFAULT ';');
CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN 1;
END $fn$;
SELECT 'it''s; fine' -- trailing; comment
;`;
    expect(splitStatements(sql)).toEqual([
      `CREATE TABLE a (x text DEFAULT ';')`,
      `CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $fn$\nBEGIN\n  RETURN 1;\nEND $fn$`,
      `SELECT 'it''s; fine'`,
    ]);
  });
});
