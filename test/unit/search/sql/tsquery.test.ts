// Conditions, tsqueries and scores of the DSL compiler (src/search/sql/tsquery.ts), rendered and run on an in-memory
// PGlite over a table of search documents: what each combination matches, the scores, and the 400s of a tsquery
// beyond PostgreSQL's limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem } from '../../../../src/errors.js';
import { TSQUERY_MAX_OPERAND_BYTES, TSQUERY_MAX_TOTAL_BYTES } from '../../../../src/search/index/lexemes.js';
import { Binder } from '../../../../src/search/sql/binder.js';
import {
  and,
  type Cond,
  constScore,
  lex,
  lexCond,
  not,
  or,
  renderCond,
  renderScore,
  type Score,
} from '../../../../src/search/sql/tsquery.js';
import type { Db } from '../../../../src/storage/db.js';
import { migratedDb } from '../../helpers/database.js';

describe('tsquery conditions', () => {
  let db: Db;
  beforeAll(async () => {
    db = await migratedDb();
    await db.query(`CREATE TABLE docs (name text, search tsvector)`);
    await db.query(`INSERT INTO docs VALUES
      ('both', array_to_tsvector(ARRAY['talpha', 'tbeta'])),
      ('alpha', array_to_tsvector(ARRAY['talpha'])),
      ('gamma', array_to_tsvector(ARRAY['tgamma'])),
      ('odd', array_to_tsvector(ARRAY[E't''q\\\\u:x']))`);
  });
  afterAll(async () => {
    await db?.close();
  });

  const matches = async (cond: Cond): Promise<string[]> => {
    const params = new Binder([], { unstorable: () => new Error('unstorable') });
    const sql = `SELECT name FROM docs e WHERE ${renderCond(cond, params)} ORDER BY name`;
    return (await db.query<{ name: string }>(sql, params.values)).rows.map((r) => r.name);
  };
  const scores = async (score: Score): Promise<Record<string, number>> => {
    const params = new Binder([], { unstorable: () => new Error('unstorable') });
    const sql = `SELECT name, (${renderScore(score, params)})::float8 AS score FROM docs e ORDER BY name`;
    const { rows } = await db.query<{ name: string; score: number }>(sql, params.values);
    return Object.fromEntries(rows.map((r) => [r.name, r.score]));
  };

  it('combines lexemes with and, or and not', async () => {
    expect(await matches(and([lexCond('talpha'), lexCond('tbeta')]))).toEqual(['both']);
    expect(await matches(or([lexCond('tbeta'), lexCond('tgamma')]))).toEqual(['both', 'gamma']);
    expect(await matches(not(lexCond('talpha')))).toEqual(['gamma', 'odd']);
    expect(await matches(and([lexCond('talpha'), not(lexCond('tbeta'))]))).toEqual(['alpha']);
  });

  it('matches prefixes, and lexemes holding quotes and backslashes as they are', async () => {
    expect(await matches(lexCond('tal', true))).toEqual(['alpha', 'both']);
    expect(await matches(lexCond("t'q\\u:x"))).toEqual(['odd']);
    expect(await matches(lexCond("t'q", true))).toEqual(['odd']);
  });

  it('needs at least n of the items for atLeast, and mixes SQL conditions with lexemes', async () => {
    const items = [lexCond('talpha'), lexCond('tbeta'), lexCond('tgamma')];
    expect(await matches({ k: 'atLeast', n: 2, items })).toEqual(['both']);
    expect(await matches({ k: 'atLeast', n: 1, items })).toEqual(['alpha', 'both', 'gamma']);
    const named: Cond = { k: 'sql', sql: () => "e.name = 'odd'" };
    expect(await matches(or([lexCond('tgamma'), named]))).toEqual(['gamma', 'odd']);
  });

  it('folds constants: false in an and, true in an or', async () => {
    const never = lexCond('t'.repeat(TSQUERY_MAX_OPERAND_BYTES * 2));
    expect(never).toEqual({ k: 'const', value: false });
    expect(await matches(and([lexCond('talpha'), never]))).toEqual([]);
    expect(await matches(or([lexCond('tgamma'), never]))).toEqual(['gamma']);
    expect(await matches(not(never))).toEqual(['alpha', 'both', 'gamma', 'odd']);
  });

  it('runs an or of thousands of lexemes (a balanced tree, not a chain)', async () => {
    const many = Array.from({ length: 3000 }, (_, i) => lexCond(`tw${i}`));
    expect(await matches(or([...many, lexCond('tgamma')]))).toEqual(['gamma']);
    const parts = Array.from({ length: 3000 }, () => ({ when: lexCond('talpha'), score: constScore(1) }));
    expect((await scores({ k: 'sum', parts })).both).toBe(3000);
  });

  it('scores sums of parts, when their condition holds, times a factor', async () => {
    const score: Score = {
      k: 'times',
      factor: 2,
      score: {
        k: 'sum',
        parts: [
          { when: lexCond('talpha'), score: constScore(1) },
          { when: lexCond('tbeta'), score: constScore(0.25) },
          { when: null, score: constScore(0.5) },
        ],
      },
    };
    expect(await scores(score)).toEqual({ both: 3.5, alpha: 3, gamma: 1, odd: 1 });
  });

  it('refuses a tsquery beyond what PostgreSQL takes with a 400', () => {
    const params = new Binder([], { unstorable: () => new Error('unstorable') });
    const long: Cond = { k: 'ts', q: lex('x'.repeat(TSQUERY_MAX_OPERAND_BYTES + 1)) };
    expect(() => renderCond(long, params)).toThrow(Problem);
    expect(() => renderCond(long, params)).toThrow(/too long to search for/);
    const count = Math.ceil(TSQUERY_MAX_TOTAL_BYTES / 1000) + 1;
    const wide: Cond = {
      k: 'ts',
      q: { op: 'or', items: Array.from({ length: count }, (_, i) => lex(`${i}`.padEnd(999, 'x'))) },
    };
    expect(() => renderCond(wide, params)).toThrow(/add up to more than PostgreSQL takes in one search/);
  });
});
