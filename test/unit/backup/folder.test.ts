// BackupFolder on its own. Opening a file that the listing did not see as it is now (replaced after it was listed): a
// named pipe is refused without waiting for a writer, a link is not followed, a path through a linked folder is caught.
// And a folder where a file belongs, or the other way round.
import { appendFileSync } from 'node:fs';
import { symlink, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BackupFolder } from '../../../src/backup/folder.js';
import { NOT_REGULAR, namedPipe, REFUSED_WITHIN_MS, tempDir, writeBackup } from '../../backup/helpers.js';

const SECRET = 'the secret outside the backup folder\n';

describe('BackupFolder', () => {
  it('opening a file replaced after the listing: refuses a named pipe at once, a link, a path through a linked folder', async () => {
    const dir = await writeBackup({ 'node/a.json': '{}' });
    const out = await tempDir('trellis-outside-');
    await writeFile(join(out, 'secret.txt'), SECRET);
    const folder = await BackupFolder.at(dir);
    expect(folder.readText('node/a.json')).toBe('{}');

    namedPipe(join(dir, 'node/pipe.json'));
    const began = performance.now();
    expect(() => folder.readText('node/pipe.json')).toThrow(`node/pipe.json: is a named pipe (FIFO); ${NOT_REGULAR}`);
    expect(performance.now() - began).toBeLessThan(REFUSED_WITHIN_MS);

    await symlink(join(out, 'secret.txt'), join(dir, 'node/link.json'));
    expect(() => folder.readText('node/link.json')).toThrow(`node/link.json: is a symbolic link; ${NOT_REGULAR}`);
    expect(() => folder.size('node/link.json')).toThrow('is a symbolic link');

    // O_NOFOLLOW sees only the last part of the path; a linked folder on the way is caught by where the file is.
    await symlink(out, join(dir, 'node/linked'));
    expect(() => folder.readText('node/linked/secret.txt')).toThrow(
      'node/linked/secret.txt: leads out of the backup folder',
    );
  });

  it('refuses a file from its size when asked to, before reading it; reads no more than the size it checked', async () => {
    const dir = await writeBackup({ 'node/a.json': '{"a": 1}' });
    const folder = await BackupFolder.at(dir);
    const sizes: number[] = [];
    const refuseOver = (max: number) => (size: number) => {
      sizes.push(size);
      return size > max ? `is ${size} bytes, more than ${max}` : null;
    };
    expect(folder.readText('node/a.json', refuseOver(8))).toBe('{"a": 1}');
    // Zero bytes past the JSON, were they read, would not be valid UTF-8 text of an element: only the size speaks.
    await truncate(join(dir, 'node/a.json'), 400 * 1024 * 1024);
    expect(() => folder.readText('node/a.json', refuseOver(8))).toThrow(
      /^node\/a.json: is 419430400 bytes, more than 8$/,
    );
    expect(sizes).toEqual([8, 400 * 1024 * 1024]);
    await writeFile(join(dir, 'node/a.json'), '{"a": 1}');
    // A file that grows between the check and the read: the read stops at the checked size.
    const growing = (size: number) => {
      appendFileSync(join(dir, 'node/a.json'), ' '.repeat(1000));
      return size > 8 ? 'too large' : null;
    };
    expect(folder.readText('node/a.json', growing)).toBe('{"a": 1}');
  });

  it('refuses a folder where a file belongs and a file where a folder belongs', async () => {
    const dir = await writeBackup({ 'node/a.json': '{}', relation: 'a file' });
    const folder = await BackupFolder.at(dir);
    expect(() => folder.readText('node')).toThrow('node: is a folder, not a file');
    await expect(folder.walk('relation', [])).rejects.toThrow('relation: is a file, not a folder');
    const out: string[] = [];
    await folder.walk('file', out); // absent: nothing below it
    expect(out).toEqual([]);
  });
});
