// backup:create: the reference format, one snapshot, and the round trip create -> load -> create.

import { createHash, randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { expect, it } from 'vitest';
import { BackupTargetError, createBackup } from '../../src/backup/create.js';
import { loadBackup } from '../../src/backup/load.js';
import { beginSnapshot, dumpPage } from '../../src/storage/queries/backup.js';
import { collect, otherBlobStore } from '../helpers/blobs.js';
import { describeBackends, freshDatabase } from '../helpers/harness.js';
import { createFrom, loadInto, REFERENCE, readTree, ref, tempDir } from './helpers.js';

describeBackends(
  'backup:create and the round trip',
  (h) => {
    let first: string;
    const fileOwner = ref('node/general/if-match/data');
    const bytes = Buffer.from('hello, backup\n');

    it('writes the reference format: summary, one file per element, internal data and file bytes', async () => {
      await loadInto(h(), REFERENCE);
      // Attach a file to one element the way the file endpoints store it: bytes in the blob store, metadata in `file`.
      const meta = {
        contentLength: bytes.length,
        extension: 'txt',
        mimeType: 'text/plain',
        hash: { sha256: createHash('sha256').update(bytes).digest('hex') },
      };
      const { blobs } = h().services;
      const temp = await blobs.write(Readable.from([bytes]), { maxBytes: bytes.length });
      await (await blobs.replace(fileOwner.id, temp, { previous: 'none', next: meta.hash.sha256 })).finish();
      await blobs.discard(temp);
      await h().db.query('UPDATE elements SET file = $2 WHERE id = $1', [fileOwner.id, meta]);

      first = join(await tempDir(), 'backup');
      const report = await createFrom(h(), first);
      expect(report).toMatchObject({ nodes: 782, relations: 1606, files: 1, warnings: [] });
      const tree = readTree(first);
      expect(tree.size).toBe(1 + 782 + 1606 + 1);
      const summary = JSON.parse(tree.get('summary.json')!.toString());
      expect(summary).toMatchObject({
        nodeCount: 782,
        relationCount: 1606,
        fileCount: 1,
        version: 'dev',
        backupVersion: '0.0.28',
      });
      expect(summary.backupCreated).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
      // Password and token hashes inside: the folder is the owner's alone, every file too.
      expect(statSync(first).mode & 0o777).toBe(0o700);
      for (const path of ['summary.json', ...[...tree.keys()].filter((p) => p !== 'summary.json').slice(0, 50)])
        expect(statSync(join(first, path)).mode & 0o077, path).toBe(0);

      const user = ref('node/general/anonymousUser/user');
      const userFile = tree.get(`node/${user.id.slice(0, 2)}/${user.id}.json`)!.toString();
      expect(JSON.parse(userFile)).toEqual({
        type: 'User',
        id: user.id,
        data: { ...user.data, created: expect.any(String), updated: expect.any(String) },
      });
      expect(userFile.endsWith('}\n')).toBe(true);
      expect(Object.keys(JSON.parse(userFile).data)).toEqual([...Object.keys(JSON.parse(userFile).data)].sort());

      const token = ref('node/command/token/revoke/issuedWithExpirationDate/token2');
      const tokenJson = JSON.parse(tree.get(`node/${token.id.slice(0, 2)}/${token.id}.json`)!.toString());
      const { token: _plaintext, ...withoutPlaintext } = token.data;
      expect(tokenJson.data).toEqual({
        ...withoutPlaintext,
        updated: tokenJson.data.updated,
        created: tokenJson.data.created,
      });
      // Tokens without exactly one owning user never authenticate, and keep their hash all the same.
      for (const path of [
        'node/security/tokenState/token-expired',
        'node/security/tokenState/token-revoked',
        'node/security/edgeCase/tokenWithNoOwner/token',
        'node/security/edgeCase/tokenWithTwoOwners/token',
      ]) {
        const t = ref(path);
        const json = JSON.parse(tree.get(`node/${t.id.slice(0, 2)}/${t.id}.json`)!.toString());
        expect([json.data.state, json.data.hash]).toEqual([t.data.state, t.data.hash]);
      }

      const relation = ref('relation/security/tokenState/owns');
      expect(JSON.parse(tree.get(`relation/${relation.id.slice(0, 2)}/${relation.id}.json`)!.toString())).toMatchObject(
        {
          type: 'OWNS',
          id: relation.id,
          start: relation.start,
          end: relation.end,
        },
      );

      const withFile = JSON.parse(tree.get(`node/${fileOwner.id.slice(0, 2)}/${fileOwner.id}.json`)!.toString());
      expect(withFile.data).toMatchObject({
        hasFile: true,
        file: { contentLength: bytes.length, extension: 'txt' },
        created: '2020-01-01T00:00:00+00:00',
      });
      expect(tree.get(`file/${fileOwner.id.slice(0, 2)}/${fileOwner.id}`)).toEqual(bytes);
    });

    it('loads its own backup into an empty database and writes it again byte for byte', async () => {
      const second = await freshDatabase(h().backend);
      const other = await otherBlobStore(h());
      try {
        const blobs = other.blobs;
        const loaded = await loadBackup(
          { db: second.db, blobs, identifierKey: 'email', limits: h().config.settings.element, now: new Date() },
          first,
        );
        expect(loaded).toMatchObject({ nodes: 782, relations: 1606, files: 1, users: 82, tokens: 89 });
        const blob = await blobs.open(fileOwner.id, undefined, createHash('sha256').update(bytes).digest('hex'));
        expect(await collect(blob!.stream)).toEqual(bytes);
        const again = join(await tempDir(), 'backup');
        // A small page size: many pages of keyset pagination must give exactly the same output.
        await createBackup({ db: second.db, blobs, now: new Date() }, again, { pageSize: 7 });
        const a = readTree(first);
        const b = readTree(again);
        const summaryOf = (tree: Map<string, Buffer>) => ({
          ...JSON.parse(tree.get('summary.json')!.toString()),
          backupCreated: null,
        });
        expect(summaryOf(b)).toEqual(summaryOf(a));
        a.delete('summary.json');
        b.delete('summary.json');
        expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
        const differing = [...a].filter(([path, content]) => !content.equals(b.get(path)!)).map(([path]) => path);
        expect(differing).toEqual([]);
      } finally {
        await second.dispose();
        await other.dispose();
      }
    });

    it('refuses a target that exists and is not empty, and leaves no partial folder behind', async () => {
      await expect(createFrom(h(), first)).rejects.toBeInstanceOf(BackupTargetError);
      const parent = await tempDir();
      await mkdir(join(parent, 'empty'));
      await createFrom(h(), join(parent, 'empty')); // an existing empty directory is fine
      const { readdirSync } = await import('node:fs');
      expect(readdirSync(parent)).toEqual(['empty']);
    });

    it('reads every page from one snapshot: rows committed meanwhile are not seen', async () => {
      if (h().backend !== 'postgres') return; // PGlite has one connection: nothing can commit during the snapshot.
      const seen = await h().db.transaction(async (tx) => {
        await beginSnapshot(tx);
        const firstPage = await dumpPage(tx, null, 10);
        // Another connection commits an element that sorts after everything read so far.
        const late = `ffffffff-ffff-4fff-8fff-${randomUUID().slice(-12)}`;
        await h().db.query(
          `INSERT INTO elements (id, type, data, created, updated) VALUES ($1, 'Data', '{}', now(), now())`,
          [late],
        );
        const rest: string[] = [];
        let page = await dumpPage(tx, firstPage[firstPage.length - 1]!.id, 1000);
        while (page.length > 0) {
          rest.push(...page.map((r) => r.id));
          page = await dumpPage(tx, page[page.length - 1]!.id, 1000);
        }
        return { count: firstPage.length + rest.length, late, sawLate: rest.includes(late) };
      });
      expect(seen.sawLate).toBe(false);
      expect(seen.count).toBe(2388);
    });
  },
  { blobs: true },
);
