// The sweep of the blob store against the database (at startup and periodically): leftovers of crashes are cleaned
// up, replacements a crash interrupted are settled by what the database committed, and everything referenced survives.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { newId } from '../../src/domain/values.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';
import { sha256 } from './fixtures.js';

const dirOf = (h: Harness, key: string) => join(h.dataDir, 'files', key.slice(0, 2));
const pathOf = (h: Harness, key: string) => join(dirOf(h, key), key);

function put(h: Harness, name: string, key: string, bytes: Buffer | string) {
  mkdirSync(dirOf(h, key), { recursive: true });
  writeFileSync(join(dirOf(h, key), name), bytes);
}

describeBackends('element files: startup sweep', (h) => {
  let token: string;
  let userId: string;
  beforeAll(async () => {
    ({ token, id: userId } = await userWithToken(h(), 'sweep@files.dev'));
  });

  async function withFile(bytes: string): Promise<string> {
    const id = await createElement(h(), token, { type: 'Doc' });
    const res = await h().request('POST', `/${id}/file`, {
      token,
      raw: new TextEncoder().encode(bytes),
      headers: { 'upload-complete': '?1' },
    });
    expect(res.status).toBe(201);
    return id;
  }

  it('removes temporary and orphaned files, settles interrupted replacements, keeps what is referenced', async () => {
    const tmp = join(h().dataDir, 'files', 'tmp');
    writeFileSync(join(tmp, 'left-over-from-a-crash'), 'partial upload');

    // A blob no element or upload refers to (e.g. a crash between deleting an element and its bytes).
    const orphan = newId();
    put(h(), orphan, orphan, 'nobody wants me');

    // An upload's blob is referenced by its row.
    const target = await createElement(h(), token, { type: 'Doc' });
    const uploadId = newId();
    const now = new Date();
    await h().db.query('INSERT INTO uploads (id, element_id, user_id, created, expires) VALUES ($1, $2, $3, $4, $4)', [
      uploadId,
      target,
      userId,
      now,
    ]);
    put(h(), uploadId, uploadId, 'first chunk');

    // A replacement that did not commit: the database still describes the old bytes, which were set aside.
    const notCommitted = await withFile('old bytes A');
    const oldA = sha256(Buffer.from('old bytes A')).toString('hex');
    writeFileSync(pathOf(h(), notCommitted), 'new bytes A, never committed');
    put(h(), `${notCommitted}.aside-${oldA}-0123456789ab`, notCommitted, 'old bytes A');

    // A replacement that committed: the database describes the new bytes; the aside is the old one.
    const committed = await withFile('new bytes B');
    put(
      h(),
      `${committed}.aside-${sha256(Buffer.from('old bytes B')).toString('hex')}-0123456789ab`,
      committed,
      'old bytes B',
    );

    // A file removal that committed: no file in the database; the aside goes.
    const removed = await createElement(h(), token, { type: 'Doc' });
    put(h(), `${removed}.aside-${sha256(Buffer.from('gone')).toString('hex')}-0123456789ab`, removed, 'gone');

    // A file removal that did not commit (the bytes were set aside, the canonical name is empty).
    const removalNotCommitted = await withFile('still here');
    const stillHere = sha256(Buffer.from('still here')).toString('hex');
    renameSync(
      pathOf(h(), removalNotCommitted),
      join(dirOf(h(), removalNotCommitted), `${removalNotCommitted}.aside-${stillHere}-0123456789ab`),
    );

    // Something the service did not write: left alone.
    put(h(), 'README', 'ab', 'not ours');

    const untouched = await withFile('plain file');

    const report = await h().services.files.sweep(0);
    expect(report).toEqual({ temporary: 1, orphans: 1, restored: 2, dropped: 2 });

    expect(readdirSync(tmp)).toEqual([]);
    expect(existsSync(pathOf(h(), orphan))).toBe(false);
    expect(readFileSync(pathOf(h(), uploadId), 'utf8')).toBe('first chunk');
    expect(readFileSync(pathOf(h(), notCommitted), 'utf8')).toBe('old bytes A');
    expect(readFileSync(pathOf(h(), committed), 'utf8')).toBe('new bytes B');
    expect(readFileSync(pathOf(h(), removalNotCommitted), 'utf8')).toBe('still here');
    expect(readFileSync(pathOf(h(), untouched), 'utf8')).toBe('plain file');
    expect(readFileSync(join(h().dataDir, 'files', 'ab', 'README'), 'utf8')).toBe('not ours');
    for (const key of [notCommitted, committed, removed, removalNotCommitted])
      expect(readdirSync(dirOf(h(), key)).filter((n) => n.startsWith(`${key}.`))).toEqual([]);
    // Downloads agree with the metadata afterwards.
    const got = await h().request('GET', `/${notCommitted}/file`, { token });
    expect(got.text).toBe('old bytes A');
  });

  it('leaves recent entries alone when a grace period applies (instances sharing the store)', async () => {
    const tmp = join(h().dataDir, 'files', 'tmp');
    writeFileSync(join(tmp, 'in-flight'), 'someone is uploading');
    const orphan = newId();
    put(h(), orphan, orphan, 'just renamed by another instance');
    const report = await h().services.files.sweep(3600_000);
    expect(report).toEqual({ temporary: 0, orphans: 0, restored: 0, dropped: 0 });
    expect(existsSync(join(tmp, 'in-flight'))).toBe(true);
    expect(existsSync(pathOf(h(), orphan))).toBe(true);
    await h().services.files.sweep(0);
    expect(readdirSync(tmp)).toEqual([]);
    expect(existsSync(pathOf(h(), orphan))).toBe(false);
  });

  it("settles a crash's replacement at once even within the grace, and waits for one in progress under the row lock", async () => {
    // A crash between the rename and the commit, a moment ago: the element serves the uncommitted bytes until the
    // aside is settled, so no grace applies to asides.
    const crashed = await withFile('committed bytes');
    const committedSha = sha256(Buffer.from('committed bytes')).toString('hex');
    writeFileSync(pathOf(h(), crashed), 'uncommitted bytes!');
    put(h(), `${crashed}.aside-${committedSha}-0123456789ab`, crashed, 'committed bytes');
    expect(await h().services.files.sweep(3600_000)).toEqual({ temporary: 0, orphans: 0, restored: 1, dropped: 0 });
    const got = await h().request('GET', `/${crashed}/file`, { token });
    expect(got.status).toBe(200);
    expect(got.text).toBe('committed bytes');
    expect(got.headers.get('repr-digest')).toBe(
      `sha-256=:${sha256(Buffer.from('committed bytes')).toString('base64')}:`,
    );

    // A replacement in progress holds the element's row lock from before its rename until its commit: the sweep
    // waits for it and then sees the committed state, so it never puts back bytes a live replacement set aside.
    const live = await withFile('before');
    const before = sha256(Buffer.from('before')).toString('hex');
    const after = sha256(Buffer.from('after!')).toString('hex');
    let swept: Promise<unknown> | null = null;
    let sweepDone = false;
    await h().db.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM elements WHERE id = $1 FOR UPDATE', [live]);
      renameSync(pathOf(h(), live), join(dirOf(h(), live), `${live}.aside-${before}-0123456789ab`));
      writeFileSync(pathOf(h(), live), 'after!');
      swept = h()
        .services.files.sweep(3600_000)
        .then((r) => {
          sweepDone = true;
          return r;
        });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(sweepDone).toBe(false);
      await tx.query(`UPDATE elements SET file = jsonb_set(file, '{hash,sha256}', to_jsonb($2::text)) WHERE id = $1`, [
        live,
        after,
      ]);
    });
    expect(await swept).toEqual({ temporary: 0, orphans: 0, restored: 0, dropped: 1 });
    expect(readFileSync(pathOf(h(), live), 'utf8')).toBe('after!');
    expect(readdirSync(dirOf(h(), live)).filter((n) => n.startsWith(`${live}.`))).toEqual([]);
  });
});
