// backup:load checks an element file as it reads it: one larger than any element within the element.* settings is
// refused from its size, unread; property names follow the API's rules (what POST / and PATCH refuse). Each refusal
// names the file (and the element, once its id is read) and loads nothing.
import { randomUUID } from 'node:crypto';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { maxElementFileBytes } from '../../src/backup/element-file.js';
import { BackupError } from '../../src/backup/format.js';
import { describeBackends, type Harness } from '../helpers/harness.js';
import { counts, loadInto, writeBackup } from './helpers.js';

async function expectRefused(h: Harness, dir: string, file: string, message: RegExp) {
  const error = await loadInto(h, dir).catch((e: unknown) => e);
  expect(error, file).toBeInstanceOf(BackupError);
  expect((error as BackupError).file).toBe(file);
  expect((error as BackupError).message).toMatch(message);
  expect((error as BackupError).message).not.toContain('\n');
  expect(await counts(h.db)).toEqual({ elements: 0, users: 0, tokens: 0 });
}

/** `value` as JSON indented by two spaces, every non-ASCII character written as a \u escape. */
const spreadOut = (value: unknown) =>
  JSON.stringify(value, null, 2).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

/** Bytes of `value` as checkDataLimits counts them: compact JSON with a space after each ',' and ':'. */
const storedBytes = (value: unknown) =>
  Buffer.byteLength(JSON.stringify(value, null, 1).replace(/\n */g, (m) => (m.length > 1 ? ' ' : '')));

describeBackends('backup:load checks element files as it reads them', (h) => {
  beforeEach(async () => {
    await h().db.query('TRUNCATE elements CASCADE');
  });

  it('refuses an element file larger than any element within the element.* settings from its size', async () => {
    const max = maxElementFileBytes(h().config.settings.element);
    const dir = await writeBackup({ 'node/a.json': { type: 'Data', id: randomUUID(), data: {} } }, { version: 'dev' });
    // Sparse: a read would find only zero bytes, not valid JSON; the refusal is of the size alone.
    await writeFile(join(dir, 'node/b.json'), '');
    await truncate(join(dir, 'node/b.json'), max + 1);
    await expectRefused(
      h(),
      dir,
      'node/b.json',
      new RegExp(
        `^node/b.json: is ${max + 1} bytes; an element file within the element.\\* settings is at most ${max} bytes$`,
      ),
    );
  });

  it('loads an element at every limit at once, its data and internal properties written escaped and indented', async () => {
    const limits = h().config.settings.element;
    const id = randomUUID();
    // x: maxNestingDepth - 1 arrays (data is level 1), the innermost full of items up to maxValues in all.
    const part = (prefix: string) => {
      const items = limits.maxValues - 2 - (limits.maxNestingDepth - 2);
      let x: unknown = new Array(items).fill(0);
      for (let level = 1; level < limits.maxNestingDepth - 1; level++) x = [x];
      const value: Record<string, unknown> = { [`${prefix}x`]: x, [`${prefix}s`]: '' };
      // 'é' is two bytes as stored and six as a \u escape.
      value[`${prefix}s`] = 'é'.repeat(Math.floor((limits.maxDataSizeInBytes - storedBytes(value)) / 2));
      expect(storedBytes(value)).toBeGreaterThan(limits.maxDataSizeInBytes - 2);
      return value;
    };
    const data = part('');
    const internal = part('_');
    const text = spreadOut({ type: 'Data', id, data: { ...data, ...internal, created: '2021-02-03T04:05:06+00:00' } });
    expect(text.length).toBeLessThanOrEqual(maxElementFileBytes(limits));
    expect((await loadInto(h(), await writeBackup({ 'node/full.json': text }))).nodes).toBe(1);
    const { rows } = await h().db.query<{ data: unknown; internal: unknown }>(
      'SELECT data, internal FROM elements WHERE id = $1',
      [id],
    );
    expect(rows).toEqual([{ data, internal }]);
  });

  it('refuses each property name the API refuses, naming the file and the element', async () => {
    const id = randomUUID();
    const node = (data: Record<string, unknown>, type = 'Data') => ({ type, id, data });
    const relation = (data: Record<string, unknown>, type: string) => ({ type, id, start: id, end: id, data });
    const rules = "\\(the API's rules for property names\\)$";
    const reserved = (key: string) =>
      new RegExp(`element ${id}: the property '${key}' is reserved and cannot be set ${rules}`);
    const invalid = (shown: string) =>
      new RegExp(
        `element ${id}: the property name '${shown}' is not valid \\(1 to 256 printable characters\\) ${rules}`,
      );
    const prototype = new RegExp(
      `element ${id}: holds a '__proto__' key or a 'constructor' with a 'prototype', which the API refuses ${rules}`,
    );
    const cases: Array<[string, unknown, RegExp]> = [
      ['node/x.json', node({ id }), reserved('id')],
      ['relation/x.json', relation({ id }, 'LINKS'), reserved('id')],
      // A relation is no user or token: what only those carry is reserved on it, as PATCH refuses it.
      ['relation/x.json', relation({ email: 'a@example.dev' }, 'User'), reserved('email')],
      ['relation/x.json', relation({ hash: 'a'.repeat(64) }, 'Token'), reserved('hash')],
      ['node/x.json', node({ '': 1 }), invalid('')],
      ['node/x.json', node({ ['k'.repeat(257)]: 1 }), invalid('k{64}')],
      ['node/x.json', node({ 'a\nb': 1 }), invalid('a\\\\u000ab')],
      ['node/x.json', node({ '_a\u0001': 1 }), invalid('_a\\\\u0001')],
      ['node/x.json', node({ ['_'.repeat(257)]: 1 }), invalid('_{64}')],
      ['node/x.json', node({ name: 5 }), new RegExp(`element ${id}: the property 'name' must be a string ${rules}`)],
      ['node/x.json', `{"type": "Data", "id": "${id}", "data": {"__proto__": {"email": "a@example.dev"}}}`, prototype],
      ['node/x.json', `{"type": "Data", "id": "${id}", "data": {"a": [{"b": {"\\u005f_proto__": 1}}]}}`, prototype],
      ['node/x.json', `{"type": "Data", "id": "${id}", "data": {"a": {"constructor": {"prototype": {}}}}}`, prototype],
    ];
    for (const [path, content, message] of cases) {
      const dir = await writeBackup({ [path]: content });
      await expectRefused(h(), dir, path, new RegExp(`^${path}: ${message.source}`));
    }
  });

  it('loads the names the API takes, and what a backup carries besides a client’s properties', async () => {
    const [user, token, data, owns] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const longest = 'k'.repeat(256);
    const dir = await writeBackup({
      'node/user.json': {
        type: 'User',
        id: user,
        data: {
          email: 'a@example.dev',
          _passwordHash: null,
          created: '2021-02-03T04:05:06+00:00',
          updated: '2021-02-03T04:05:06+00:00',
        },
      },
      'node/token.json': {
        type: 'Token',
        id: token,
        data: { hash: 'a'.repeat(64), state: 'REVOKED', expirationDate: '2031-02-03T04:05:06+00:00' },
      },
      'node/data.json': {
        type: 'Data',
        id: data,
        data: { [longest]: 1, name: null, constructor: 'a string', nested: { id: 1, created: 2 }, _internal: 3 },
      },
      'relation/owns.json': { type: 'OWNS', id: owns, start: user, end: token, data: { hasFile: false } },
    });
    expect(await loadInto(h(), dir)).toMatchObject({ nodes: 3, relations: 1, users: 1, tokens: 1 });
    const { rows } = await h().db.query<{ data: unknown; internal: unknown }>(
      'SELECT data, internal FROM elements WHERE id = $1',
      [data],
    );
    expect(rows).toEqual([
      {
        data: { [longest]: 1, name: null, constructor: 'a string', nested: { id: 1, created: 2 } },
        internal: { _internal: 3 },
      },
    ]);
  });
});
