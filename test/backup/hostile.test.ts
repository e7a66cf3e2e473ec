// A crafted backup: backup:load reads only regular files inside the backup folder (no symbolic links, named pipes,
// sockets or devices), only valid UTF-8, and only elements within the API's limits (the element.* settings). Each
// refusal names the path, loads nothing and stores no file bytes.
import { constants as bufferConstants } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, rename, symlink, truncate, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { BackupError } from '../../src/backup/format.js';
import { elementBytes, storedNames } from '../helpers/blobs.js';
import { describeBackends, type Harness } from '../helpers/harness.js';
import { counts, loadInto, NOT_REGULAR, namedPipe, REFUSED_WITHIN_MS, tempDir, writeBackup } from './helpers.js';

const SECRET = 'the secret outside the backup folder\n';

/** A folder beside the backup, with a secret file and an element file a link could point to. */
async function outside(dataId: string): Promise<string> {
  const dir = await tempDir('trellis-outside-');
  await writeFile(join(dir, 'secret.txt'), SECRET);
  await writeFile(join(dir, 'x.json'), JSON.stringify({ type: 'Data', id: dataId, data: { name: 'outside' } }));
  await mkdir(join(dir, 'folder'));
  await writeFile(join(dir, 'folder', 'y.json'), JSON.stringify({ type: 'Data', id: randomUUID(), data: {} }));
  return dir;
}

/** A small backup: one node that owns a file (its bytes are added by each case), one relation. */
function small() {
  const data = randomUUID();
  const other = randomUUID();
  return {
    data,
    files: {
      'node/aa/data.json': { type: 'Data', id: data, data: { name: 'Zoë', hasFile: true } },
      'node/bb/other.json': { type: 'Data', id: other, data: {} },
      'relation/r.json': { type: 'LINKS', id: randomUUID(), start: data, end: other, data: {} },
    } as Record<string, unknown>,
  };
}

// No counts: a loader that does not refuse what it lists would find them matching, and load.
const SUMMARY = { version: 'dev' };

async function refusal(h: Harness, dir: string): Promise<{ error: unknown; ms: number }> {
  const began = performance.now();
  const error = await loadInto(h, dir).then(
    () => null,
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - began };
}

async function expectRefused(h: Harness, dir: string, file: string, message: RegExp, stored: string[] = []) {
  const { error, ms } = await refusal(h, dir);
  expect(error).toBeInstanceOf(BackupError);
  expect((error as BackupError).file).toBe(file);
  expect((error as BackupError).message).toMatch(message);
  expect((error as BackupError).message).not.toContain('\n');
  expect(ms).toBeLessThan(REFUSED_WITHIN_MS);
  expect(await counts(h.db)).toEqual({ elements: 0, users: 0, tokens: 0 });
  for (const id of stored) expect(await storedNames(h, id)).toEqual([]);
}

describeBackends(
  'backup:load reads only regular files inside the backup folder',
  (h) => {
    beforeEach(async () => {
      await h().db.query('DELETE FROM elements');
    });

    it('refuses a symbolic link anywhere in the folder, naming it, and never reads what it points to', async () => {
      const g = small();
      const out = await outside(g.data);
      const fileName = `file/${g.data}.txt`;
      const cases: Array<{ link: string; to: string }> = [
        // The finding: the secret became the element's file.
        { link: fileName, to: join(out, 'secret.txt') },
        // An element file outside the folder.
        { link: 'node/x.json', to: join(out, 'x.json') },
        // A link to a file inside the folder is refused all the same.
        { link: 'node/copy.json', to: 'aa/data.json' },
        // A folder below node/, node/ itself, and summary.json.
        { link: 'node/cc', to: join(out, 'folder') },
        { link: 'summary.json', to: join(out, 'x.json') },
      ];
      for (const c of cases) {
        const dir = await writeBackup(g.files, SUMMARY);
        if (c.link === 'summary.json') await rename(join(dir, 'summary.json'), join(dir, 'summary.moved'));
        await mkdir(join(dir, 'file'), { recursive: true });
        await symlink(c.to, join(dir, c.link));
        await expectRefused(h(), dir, c.link, new RegExp(`^${c.link}: is a symbolic link; ${NOT_REGULAR}$`), [g.data]);
      }
      const topLevel = await writeBackup({}, SUMMARY);
      await symlink(join(out, 'folder'), join(topLevel, 'node'));
      await expectRefused(h(), topLevel, 'node', /^node: is a symbolic link;/);
    });

    it('refuses a named pipe at once (no writer needed), in node/, file/ and as summary.json', async () => {
      const g = small();
      for (const path of ['node/aa/zz-pipe.json', `file/${g.data}.txt`, 'summary.json']) {
        const dir = await writeBackup(g.files, SUMMARY);
        await mkdir(join(dir, 'file'), { recursive: true });
        if (path === 'summary.json') await rename(join(dir, 'summary.json'), join(dir, 'summary.moved'));
        namedPipe(join(dir, path));
        await expectRefused(h(), dir, path, new RegExp(`is a named pipe \\(FIFO\\); ${NOT_REGULAR}$`), [g.data]);
      }
    });

    it('refuses a socket and a device', async () => {
      const g = small();
      const dir = await writeBackup(g.files, SUMMARY);
      const server = createServer().listen(join(dir, 'node/sock.json'));
      await new Promise((resolve) => server.once('listening', resolve));
      try {
        await expectRefused(h(), dir, 'node/sock.json', /is a socket;/);
      } finally {
        server.close();
      }
      if (process.getuid?.() !== 0) return; // mknod needs root
      const devices = await writeBackup(g.files, SUMMARY);
      execFileSync('mknod', [join(devices, 'node/null.json'), 'c', '1', '3']);
      await expectRefused(h(), devices, 'node/null.json', /is a device;/);
    });

    it('follows the backup folder named on the command line when it is itself a link, and loads it', async () => {
      const g = small();
      const dir = await writeBackup({ ...g.files, [`file/${g.data}.txt`]: 'bytes' }, SUMMARY);
      const link = join(await tempDir(), 'link-to-backup');
      await symlink(dir, link);
      const report = await loadInto(h(), link);
      expect(report).toMatchObject({ nodes: 2, relations: 1, files: 1 });
      expect((await elementBytes(h(), g.data))?.toString()).toBe('bytes');
      const { rows } = await h().db.query<{ data: unknown }>('SELECT data FROM elements WHERE id = $1', [g.data]);
      expect(rows[0]!.data).toEqual({ name: 'Zoë' });
    });

    it('refuses a file that is not valid UTF-8 instead of loading U+FFFD in its place, and one too large to read', async () => {
      const g = small();
      const broken = Buffer.concat([
        Buffer.from(`{"type": "Data", "id": "${g.data}", "data": {"name": "Zo`),
        Buffer.from([0xeb]), // the first byte of 'ë' in Latin-1: not UTF-8
        Buffer.from('"}}'),
      ]);
      await expectRefused(
        h(),
        await writeBackup({ ...g.files, 'node/aa/data.json': broken }, SUMMARY),
        'node/aa/data.json',
        /^node\/aa\/data.json: is not valid UTF-8$/,
      );
      // Bytes that no string holds: refused before they are read (an element file far sooner: checked-on-read.test.ts).
      const huge = await writeBackup(g.files, SUMMARY);
      await truncate(join(huge, 'summary.json'), bufferConstants.MAX_STRING_LENGTH + 1);
      await expectRefused(h(), huge, 'summary.json', /^summary.json: is too large to be read as text \(\d+ bytes\)$/);
      const summaryDir = await writeBackup(g.files);
      await writeFile(join(summaryDir, 'summary.json'), Buffer.from([0x7b, 0xff, 0x7d]));
      await expectRefused(h(), summaryDir, 'summary.json', /^summary.json: is not valid UTF-8$/);
    });
  },
  { blobs: true },
);

/** An element file whose data holds `x`, nested `levels` arrays deep (data itself is one level more). */
const nestedElement = (id: string, levels: number) =>
  `{"type": "Data", "id": "${id}", "data": {"x": ${'['.repeat(levels)}${']'.repeat(levels)}}}`;

describeBackends('backup:load enforces the API limits on what an element holds', (h) => {
  beforeEach(async () => {
    await h().db.query('DELETE FROM elements');
  });

  it('refuses data beyond the size, nesting, array and value limits, naming the file and the element', async () => {
    const id = randomUUID();
    const limits = h().config.settings.element;
    const relationEnds = { start: randomUUID(), end: randomUUID() };
    const cases: Array<[string, unknown, RegExp]> = [
      [
        'node/big.json',
        { type: 'Data', id, data: { text: 'x'.repeat(limits.maxDataSizeInBytes) } },
        new RegExp(
          `^node/big.json: element ${id}: 'data' is \\d+ bytes as stored; an element holds at most ${limits.maxDataSizeInBytes} bytes \\(the element.\\* settings\\)$`,
        ),
      ],
      [
        'node/internal.json',
        { type: 'Data', id, data: { _blob: 'x'.repeat(limits.maxDataSizeInBytes) } },
        /^node\/internal.json: element .*: 'internal properties' is \d+ bytes as stored/,
      ],
      [
        'node/n33.json',
        nestedElement(id, limits.maxNestingDepth),
        /'data' nests objects and arrays more than 32 levels deep/,
      ],
      ['node/n2000.json', nestedElement(id, 2_000), /more than 32 levels deep/],
      // Serializing this for the database overflowed the stack: a RangeError and its trace.
      ['node/n20000.json', nestedElement(id, 20_000), /more than 32 levels deep/],
      [
        'node/array.json',
        { type: 'Data', id, data: { list: new Array(limits.maxArrayLength + 1).fill(0) } },
        /holds an array of 1001 items; an array holds at most 1000/,
      ],
      [
        'relation/r.json',
        { type: 'LINKS', id, ...relationEnds, data: { text: 'x'.repeat(limits.maxDataSizeInBytes) } },
        /^relation\/r.json: element .*: 'data' is \d+ bytes as stored/,
      ],
    ];
    for (const [path, content, message] of cases) {
      const error = await loadInto(h(), await writeBackup({ [path]: content })).catch((e: unknown) => e);
      expect(error, path).toBeInstanceOf(BackupError);
      expect((error as BackupError).file).toBe(path);
      expect((error as BackupError).message).toMatch(message);
      expect(await counts(h().db)).toEqual({ elements: 0, users: 0, tokens: 0 });
    }
  });

  it('loads an element at the limits', async () => {
    const limits = h().config.settings.element;
    // data is level 1: x holds maxNestingDepth - 1 levels of arrays.
    const deep = randomUUID();
    const large = randomUUID();
    // '{"text": "..."}' is 12 bytes besides the string's characters.
    const dir = await writeBackup({
      'node/deep.json': nestedElement(deep, limits.maxNestingDepth - 1),
      'node/large.json': { type: 'Data', id: large, data: { text: 'x'.repeat(limits.maxDataSizeInBytes - 12) } },
    });
    expect((await loadInto(h(), dir)).nodes).toBe(2);
    const { rows } = await h().db.query<{ id: string; size: number }>(
      "SELECT id, length(data->>'text') AS size FROM elements WHERE id = $1",
      [large],
    );
    expect(rows).toEqual([{ id: large, size: limits.maxDataSizeInBytes - 12 }]);
    expect(await counts(h().db)).toEqual({ elements: 2, users: 0, tokens: 0 });
  });
});
