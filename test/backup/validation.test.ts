// backup:load refuses a broken backup before writing anything, and refuses a non-empty database without --force.

import { createHash, randomUUID } from 'node:crypto';
import { beforeEach, expect, it } from 'vitest';
import { BackupError } from '../../src/backup/format.js';
import { DatabaseNotEmptyError, type LoadOptions } from '../../src/backup/load.js';
import { elementBytes, storedNames } from '../helpers/blobs.js';
import { describeBackends, type Harness } from '../helpers/harness.js';
import { counts, loadInto, writeBackup } from './helpers.js';

const id = () => randomUUID();

function graph() {
  const user = id();
  const token = id();
  const data = id();
  const owns = id();
  const ownsToken = id();
  const secret = 'secret-token:AbCdEfGhIjKlMnOpQrStUv';
  return {
    ids: { user, token, data, owns, ownsToken },
    files: {
      'node/user.json': {
        type: 'User',
        id: user,
        data: { email: 'a@example.dev', name: 'A', created: '2021-02-03T04:05:06+00:00' },
      },
      'node/token.json': {
        type: 'Token',
        id: token,
        data: { token: secret, hash: createHash('sha3-256').update(secret).digest('hex'), state: 'ACTIVE' },
      },
      'node/data.json': { type: 'Data', id: data, data: { name: 'D' } },
      'relation/owns.json': { type: 'OWNS', id: owns, start: user, end: data, data: {} },
      'relation/owns-token.json': { type: 'OWNS', id: ownsToken, start: user, end: token, data: {} },
    } as Record<string, unknown>,
    secret,
  };
}

const CHAIN_LENGTH = 12_000;
let chain: Promise<string> | null = null;

/**
 * The small graph and a chain of relations, each attached to the one before, whose file names sort in the opposite
 * order: every relation is read before the one it attaches to. Written once for every backend and blob store (its
 * 12,000 files take seconds to write); each loads it into a database of its own.
 */
function chainBackup(): Promise<string> {
  chain ??= (() => {
    const g = graph();
    const ids = Array.from({ length: CHAIN_LENGTH }, () => id());
    const files: Record<string, unknown> = { ...g.files };
    ids.forEach((rid, i) => {
      const on = i === 0 ? g.ids.owns : ids[i - 1]!;
      files[`relation/chain/${String(ids.length - i).padStart(6, '0')}.json`] = {
        type: 'NEXT',
        id: rid,
        start: on,
        end: g.ids.data,
        data: {},
      };
    });
    return writeBackup(files);
  })();
  return chain;
}

async function expectRejected(
  h: Harness,
  dir: string,
  file: string,
  message: RegExp | string,
  options: LoadOptions = {},
) {
  const error = await loadInto(h, dir, options).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BackupError);
  expect((error as BackupError).file).toBe(file);
  expect((error as BackupError).message).toMatch(message);
  expect(await counts(h.db)).toEqual({ elements: 0, users: 0, tokens: 0 });
}

describeBackends(
  'backup:load validation',
  (h) => {
    beforeEach(async () => {
      // Each case starts from an empty database. TRUNCATE, not DELETE: deleting the 12,000 relations of the chain
      // below row by row, through the triggers of the access index, took longer than loading them.
      await h().db.query('TRUNCATE elements CASCADE');
    });

    it('loads a small valid backup: users, tokens, relations, timestamps', async () => {
      const g = graph();
      const report = await loadInto(h(), await writeBackup(g.files));
      expect(report).toMatchObject({ nodes: 3, relations: 2, users: 1, tokens: 1, files: 0, warnings: [] });
      expect(await counts(h().db)).toEqual({ elements: 5, users: 1, tokens: 1 });
      const me = await h().request('GET', '/me', { token: g.secret });
      expect(me.status).toBe(200);
      expect(me.json.id).toBe(g.ids.user);
      expect(me.json.data).toMatchObject({
        email: 'a@example.dev',
        name: 'A',
        created: '2021-02-03T04:05:06+00:00',
        updated: '2021-02-03T04:05:06+00:00',
      });
    });

    it('rejects a file that is not valid JSON, naming it', async () => {
      const g = graph();
      await expectRejected(
        h(),
        await writeBackup({ ...g.files, 'node/data.json': '{"type": "Data", "id": ' }),
        'node/data.json',
        /not valid JSON/,
      );
    });

    it('rejects missing or malformed fields', async () => {
      const g = graph();
      const cases: Array<[string, unknown, RegExp]> = [
        ['node/data.json', { type: 'Data', data: {} }, /'id' is missing/],
        ['node/data.json', { id: g.ids.data, data: {} }, /'type' is missing/],
        ['node/data.json', { type: '_Hidden', id: g.ids.data, data: {} }, /starts with '_', which marks it internal/],
        [
          'relation/owns.json',
          { type: '_OWNS', id: g.ids.owns, start: g.ids.user, end: g.ids.data, data: {} },
          /starts with '_'/,
        ],
        ['node/data.json', { type: 'Data', id: g.ids.data }, /'data' is missing/],
        ['node/data.json', { type: 'Data', id: 'not-a-uuid', data: {} }, /not a UUID/],
        [
          'node/data.json',
          { type: 'Data', id: g.ids.data, data: { created: 'yesterday' } },
          /'created' must be an ISO 8601 timestamp/,
        ],
        [
          'node/data.json',
          { type: 'Data', id: g.ids.data, data: { updated: '2020-01-01T00:00:00' } },
          /with an offset/,
        ],
        ['node/data.json', { type: 'Data', id: g.ids.data, data: { name: 'a\u0000b' } }, /U\+0000/],
        [
          'node/data.json',
          { type: 'Data', id: g.ids.data, start: g.ids.user, end: g.ids.user, data: {} },
          /relations belong below relation/,
        ],
        [
          'relation/owns.json',
          { type: 'OWNS', id: g.ids.owns, start: g.ids.user, data: {} },
          /needs 'start' and 'end'/,
        ],
        ['node/user.json', { type: 'User', id: g.ids.user, data: { name: 'no email' } }, /identifier property 'email'/],
        ['node/token.json', { type: 'Token', id: g.ids.token, data: { hash: 'abc' } }, /64 hex digits/],
        [
          'node/token.json',
          { type: 'Token', id: g.ids.token, data: { hash: 'a'.repeat(64), state: 'PAUSED' } },
          /'state' must be one of/,
        ],
        [
          'node/token.json',
          { type: 'Token', id: g.ids.token, data: { state: 'ACTIVE' } },
          /a token with an owner needs its 'hash'/,
        ],
      ];
      for (const [file, content, message] of cases) {
        const dir = await writeBackup({ ...g.files, [file]: content });
        await expectRejected(h(), dir, file, message);
        // One element per INSERT: the files read before the broken one are written by then, and rolled back.
        await expectRejected(h(), dir, file, message, { batchSize: 1 });
      }
    });

    it('rolls back what it wrote before a violation, file bytes included', async () => {
      const g = graph();
      const bytes = Buffer.from('some bytes');
      const withFile = {
        ...g.files,
        'node/data.json': { type: 'Data', id: g.ids.data, data: { name: 'D', hasFile: true } },
        [`file/${g.ids.data}.txt`]: bytes,
      };
      const summary = (nodes: number, relations: number) => ({
        nodeCount: nodes,
        relationCount: relations,
        fileCount: 1,
      });
      // Found while reading: the last node file.
      const lateNode = await writeBackup({ ...withFile, 'node/zz.json': '{"type": "Data"' }, summary(4, 2));
      await expectRejected(h(), lateNode, 'node/zz.json', /not valid JSON/, { batchSize: 1 });
      expect(await storedNames(h(), g.ids.data)).toEqual([]);
      // Found after reading every file: a relation attached to nothing.
      const dangling = await writeBackup(
        { ...withFile, 'relation/zz.json': { type: 'OWNS', id: id(), start: g.ids.user, end: id(), data: {} } },
        summary(3, 3),
      );
      await expectRejected(h(), dangling, 'relation/zz.json', /exists neither in the backup nor in the database/, {
        batchSize: 1,
      });
      expect(await storedNames(h(), g.ids.data)).toEqual([]);
      // The same backup without the violation loads.
      expect((await loadInto(h(), await writeBackup(withFile, summary(3, 2)), { batchSize: 1 })).files).toBe(1);
      expect(await counts(h().db)).toEqual({ elements: 5, users: 1, tokens: 1 });
    });

    it('rejects a relation whose start or end exists neither in the backup nor in the database', async () => {
      const g = graph();
      const missing = id();
      await expectRejected(
        h(),
        await writeBackup({
          ...g.files,
          'relation/owns.json': { type: 'OWNS', id: g.ids.owns, start: g.ids.user, end: missing, data: {} },
        }),
        'relation/owns.json',
        `its end ${missing} exists neither in the backup nor in the database`,
      );
    });

    it('rejects a duplicate id, naming both files', async () => {
      const g = graph();
      await expectRejected(
        h(),
        await writeBackup({ ...g.files, 'node/zz-copy.json': { type: 'Data', id: g.ids.data, data: {} } }),
        'node/zz-copy.json',
        /duplicate id .* \(also in node\/data.json\)/,
      );
    });

    it('rejects a summary whose counts do not match (an incomplete copy) and a folder without summary.json', async () => {
      const g = graph();
      await expectRejected(
        h(),
        await writeBackup(g.files, { nodeCount: 4, relationCount: 2 }),
        'summary.json',
        /'nodeCount' is 4 but the backup holds 3/,
      );
      const dir = await writeBackup(g.files);
      const { rm } = await import('node:fs/promises');
      await rm(`${dir}/summary.json`);
      await expectRejected(h(), dir, 'summary.json', /missing/);
    });

    it('inserts relations attached to relations after them, and rejects a cycle of relations', async () => {
      const g = graph();
      const [r1, r2, r3] = [id(), id(), id()];
      // Walk order is by file name: a-on-b comes before b, which attaches to the OWNS relation.
      const chained = await writeBackup({
        ...g.files,
        'relation/a-on-b.json': { type: 'COMMENTS', id: r1, start: g.ids.data, end: r2, data: {} },
        'relation/b-on-owns.json': { type: 'COMMENTS', id: r2, start: g.ids.owns, end: g.ids.data, data: {} },
        'relation/c-on-a.json': { type: 'COMMENTS', id: r3, start: r1, end: r2, data: {} },
      });
      expect((await loadInto(h(), chained)).relations).toBe(5);
      expect((await counts(h().db)).elements).toBe(8);

      await h().db.query('DELETE FROM elements');
      const cycle = await writeBackup({
        ...g.files,
        'relation/x.json': { type: 'COMMENTS', id: r1, start: g.ids.data, end: r2, data: {} },
        'relation/y.json': { type: 'COMMENTS', id: r2, start: r1, end: g.ids.data, data: {} },
      });
      await expectRejected(h(), cycle, 'relation/x.json', /cycle of relations/);
    });

    it('orders a chain of 12,000 relations, each attached to the one before, read in reverse order', async () => {
      const report = await loadInto(h(), await chainBackup());
      expect(report.relations).toBe(2 + CHAIN_LENGTH);
      expect((await counts(h().db)).elements).toBe(5 + CHAIN_LENGTH);
    });

    it('loads tokens without exactly one owning user, but they never authenticate', async () => {
      const g = graph();
      const second = id();
      const dir = await writeBackup({
        ...g.files,
        'node/user2.json': { type: 'User', id: second, data: { email: 'b@example.dev' } },
        'relation/owns-token2.json': { type: 'OWNS', id: id(), start: second, end: g.ids.token, data: {} },
      });
      const report = await loadInto(h(), dir);
      expect(report.tokens).toBe(0);
      expect(report.warnings).toEqual([
        'node/token.json: token has 2 owning users; loaded, but it will not authenticate',
      ]);
      expect((await h().request('GET', '/me', { token: g.secret })).status).toBe(401);
    });

    it('refuses a database that is not empty unless forced; forced, it merges and still rejects colliding ids', async () => {
      const g = graph();
      await loadInto(h(), await writeBackup(g.files));
      const other = await writeBackup({ 'node/x.json': { type: 'Data', id: id(), data: {} } });
      await expect(loadInto(h(), other)).rejects.toBeInstanceOf(DatabaseNotEmptyError);
      expect((await counts(h().db)).elements).toBe(5);

      // A relation may attach to an element that is already in the database.
      const attached = await writeBackup({
        'node/x.json': { type: 'Data', id: id(), data: {} },
        'relation/r.json': { type: 'OWNS', id: id(), start: g.ids.user, end: g.ids.data, data: {} },
      });
      expect((await loadInto(h(), attached, { force: true })).relations).toBe(1);
      expect((await counts(h().db)).elements).toBe(7);

      const colliding = await writeBackup({
        'node/a.json': { type: 'Data', id: id(), data: {} },
        'node/b.json': { type: 'Data', id: g.ids.data, data: {} },
      });
      for (const batchSize of [1000, 1]) {
        // batchSize 1: node/a.json is written before node/b.json collides, and rolled back.
        const error = await loadInto(h(), colliding, { force: true, batchSize }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BackupError);
        expect((error as BackupError).file).toBe('node/b.json');
        expect((error as BackupError).message).toMatch(/already exists in the database/);
        expect((await counts(h().db)).elements).toBe(7);
      }
      const sameUser = await writeBackup({
        'node/u.json': { type: 'User', id: id(), data: { email: 'a@example.dev' } },
      });
      await expect(loadInto(h(), sameUser, { force: true })).rejects.toThrow(
        /node\/u.json: a user with the identifier "a@example.dev" already exists/,
      );
      expect((await counts(h().db)).elements).toBe(7);
    });

    it('copies file bytes into the blob store, and rejects bytes that do not match their metadata without leaving any', async () => {
      const g = graph();
      const bytes = Buffer.from('%PDF-1.4 not really a pdf\n');
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const meta = { contentLength: bytes.length, extension: 'pdf', mimeType: 'application/pdf', hash: { sha256 } };
      const withFile = (m: unknown) => ({
        ...g.files,
        'node/data.json': { type: 'Data', id: g.ids.data, data: { name: 'D', hasFile: true, file: m } },
        [`file/${g.ids.data}.pdf`]: bytes,
      });
      const summary = { nodeCount: 3, relationCount: 2, fileCount: 1 };

      const wrong = await writeBackup(withFile({ ...meta, hash: { sha256: 'f'.repeat(64) } }), summary);
      await expectRejected(h(), wrong, `file/${g.ids.data}.pdf`, /does not match the metadata/);
      expect(await storedNames(h(), g.ids.data)).toEqual([]);

      const short = await writeBackup(withFile({ ...meta, contentLength: 3 }), summary);
      await expectRejected(h(), short, `file/${g.ids.data}.pdf`, /says contentLength 3/);

      const report = await loadInto(h(), await writeBackup(withFile(meta), summary));
      expect(report.files).toBe(1);
      const { rows } = await h().db.query<{ file: unknown; data: unknown }>(
        'SELECT file, data FROM elements WHERE id = $1',
        [g.ids.data],
      );
      expect(rows[0]).toEqual({ file: meta, data: { name: 'D' } });
      expect(await elementBytes(h(), g.ids.data)).toEqual(bytes);
    });

    it('derives file metadata from the bytes when the backup has none, and drops metadata without bytes', async () => {
      const g = graph();
      const png = Buffer.from(
        '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201ffa3c2f7a30000000049454e44ae426082',
        'hex',
      );
      const dir = await writeBackup(
        {
          ...g.files,
          [`file/${g.ids.data}.png`]: png,
          'node/user.json': {
            type: 'User',
            id: g.ids.user,
            data: {
              email: 'a@example.dev',
              hasFile: true,
              file: { contentLength: 1, extension: 'txt', mimeType: 'text/plain' },
            },
          },
        },
        { nodeCount: 3, relationCount: 2, fileCount: 1 },
      );
      const report = await loadInto(h(), dir);
      expect(report.warnings).toEqual([
        `node/user.json: has file metadata but file/ holds no bytes for ${g.ids.user}; loaded without a file`,
      ]);
      const { rows } = await h().db.query<{ id: string; file: unknown }>(
        'SELECT id, file FROM elements WHERE id = ANY($1::uuid[]) ORDER BY id',
        [[g.ids.data, g.ids.user]],
      );
      const byId = Object.fromEntries(rows.map((r) => [r.id, r.file]));
      expect(byId[g.ids.data]).toEqual({
        contentLength: png.length,
        extension: 'png',
        mimeType: 'image/png',
        hash: { sha256: createHash('sha256').update(png).digest('hex') },
      });
      expect(byId[g.ids.user]).toBeNull();
    });
  },
  { blobs: true },
);
