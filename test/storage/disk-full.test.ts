// A full disk (issue 41, item 2), on a real small filesystem: a tmpfs mounted for the test (root only; skipped
// otherwise), with a filler file taking the space the test does not want free.
//   - The embedded database on a disk that fills with the free-space check off: PostgreSQL PANICs when it cannot
//     create its next WAL segment, which aborted PGlite's WebAssembly; the service then spun on both cores, deaf to
//     SIGTERM, and answered nothing. Now the request in flight gets 503, the process logs one line saying why and exits
//     (74), a restart on the still-full disk fails at once saying so, and once space is freed a restart has every
//     acknowledged write.
//   - Below storage.minFreeSpaceInBytes (the default) writes answer 507 `insufficient-storage` while reads go on, an
//     upload streaming when space runs out stops with 507 (a resumable one keeps what arrived), and writes are taken
//     again once space is freed. On PGlite DATA_DIR is the tmpfs; on PostgreSQL only the file store's folder is.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, rm, statfs } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { backendsUnderTest, type ServiceClient, scratchPostgresDatabase, serviceClient } from '../helpers/harness.js';
import { forgetDocument, registerDocument } from '../helpers/openapi-check.js';
import { type Instance, runCli, serveInstance } from '../helpers/process.js';

const MiB = 1024 * 1024;
/** storage.minFreeSpaceInBytes by default. */
const THRESHOLD = 64 * MiB;
const PASSWORD = 'correct horse battery staple';
const isRoot = process.getuid?.() === 0;
if (!isRoot) console.warn('test/storage/disk-full.test.ts: skipped, mounting a tmpfs needs root');

const available = async (dir: string) => {
  const space = await statfs(dir);
  return space.bavail * space.bsize;
};

function mountTmpfs(dir: string, mib: number): void {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mib}m`, 'tmpfs', dir]);
}

/** A file that takes the space of its filesystem the test does not want free (written, so that tmpfs holds it). */
class Filler {
  constructor(
    private readonly dir: string,
    private readonly path = join(dir, 'filler'),
  ) {}

  /** Grows until `bytes` are available (in whole pages). */
  async leave(bytes: number): Promise<void> {
    await this.grow((await available(this.dir)) - bytes);
  }

  async grow(bytes: number): Promise<void> {
    for (let left = bytes; left > 0; left -= 8 * MiB)
      await appendFile(this.path, Buffer.alloc(Math.min(left, 8 * MiB)));
  }

  async remove(): Promise<void> {
    await rm(this.path, { force: true });
  }
}

/** Random text (TOAST cannot compress it): a PATCH of it writes a few hundred KiB to the embedded database. */
const bulky = () => randomBytes(20_000).toString('base64');

async function signUp(c: ServiceClient): Promise<string> {
  const body = { type: 'User', uniqueUserIdentifier: 'disk@full.dev', password: PASSWORD };
  expect((await c.request('POST', '/register', { body })).status).toBe(201);
  const token = await c.request('POST', '/token', {
    body: { type: 'Token', uniqueUserIdentifier: body.uniqueUserIdentifier, password: PASSWORD },
  });
  expect(token.status).toBe(201);
  return token.json.token as string;
}

async function createElement(c: ServiceClient, token: string): Promise<string> {
  const res = await c.request('POST', '/', { token, body: { type: 'Sheet' } });
  expect(res.status).toBe(201);
  return res.headers.get('location')!.slice(1);
}

/** The service's answers are checked against the OpenAPI document it publishes (507 on writes included). */
async function clientOf(instance: Instance): Promise<ServiceClient> {
  registerDocument(instance.url, await (await fetch(`${instance.url}/openapi.json`)).json());
  return serviceClient(instance.url);
}

async function stop(instance: Instance | undefined): Promise<void> {
  if (!instance) return;
  forgetDocument(instance.url);
  if (instance.exitCode === null && instance.signalCode === null) instance.kill('SIGTERM');
  await instance.done;
}

function expectInsufficientStorage(res: { status: number; headers: Headers; json: any }, url: string): void {
  expect(res.status).toBe(507);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.json).toEqual({
    type: `${url}/error/507/insufficient-storage`,
    title: 'Insufficient Storage',
    status: 507,
    detail: expect.stringMatching(/short of disk space/),
  });
}

interface Streamed {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/**
 * A request whose body is sent a quarter MiB at a time, as a client on a network would, until the server answers:
 * the server stops reading a body it refuses, and a client that went on writing would have its connection reset
 * under the answer.
 */
function streamBody(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(`${url}${path}`, {
      method,
      agent: false,
      headers: { ...headers, 'content-length': String(body.length) },
    });
    req.on('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString();
        resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null });
      });
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    void (async () => {
      for (let at = 0; at < body.length && !answered; at += MiB / 4) {
        if (!req.write(body.subarray(at, at + MiB / 4)))
          await new Promise<void>((done) => {
            const resume = () => {
              req.off('drain', resume).off('close', resume);
              done();
            };
            req.on('drain', resume).on('close', resume);
          });
        await new Promise((done) => setTimeout(done, 5));
      }
      if (!answered) req.end();
    })();
  });
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

describe.skipIf(!isRoot || !backendsUnderTest().includes('pglite'))(
  'the embedded database on a full disk, the check off (tmpfs; root only)',
  () => {
    let dataDir: string;
    let instance: Instance | undefined;
    const settings = { storage: { minFreeSpaceInBytes: 0 } };

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'trellis-disk-full-'));
      mountTmpfs(dataDir, 64);
    });
    afterAll(async () => {
      await stop(instance);
      spawnSync('umount', ['-l', dataDir]);
      await rm(dataDir, { recursive: true, force: true });
    });

    it('an aborted database ends the process with 503 in flight and one line saying why; a restart has every acknowledged write', async () => {
      instance = await serveInstance(dataDir, settings);
      let c = await clientOf(instance);
      const token = await signUp(c);
      const id = await createElement(c, token);
      const filler = new Filler(dataDir);
      await filler.leave(8 * MiB); // less than a WAL segment

      let acknowledged = -1;
      let failed: { status: number; json: any } | null = null;
      for (let n = 0; n < 400 && failed === null; n++) {
        // A PATCH that waited for ever failed the test here (the timeout): the service wedged.
        const res = await fetch(`${instance.url}/${id}`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ n, text: bulky() }),
          signal: AbortSignal.timeout(15_000),
        });
        if (res.status === 204) acknowledged = n;
        else failed = { status: res.status, json: await res.json() };
      }
      expect(acknowledged).toBeGreaterThanOrEqual(0);
      expect(failed).toEqual({
        status: 503,
        json: {
          type: `${instance.url}/error/503/service-unavailable`,
          title: 'Service Unavailable',
          status: 503,
          detail: 'The database stopped working; retry shortly.',
        },
      });

      const started = Date.now();
      const end = await instance.done;
      expect(end.code).toBe(74);
      expect(Date.now() - started).toBeLessThan(15_000);
      const fatal = end.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.level >= 60);
      expect(fatal).toEqual([
        expect.objectContaining({
          msg: expect.stringMatching(
            new RegExp(
              `^the embedded database in ${join(dataDir, 'db')} stopped: its disk is full \\(PostgreSQL: PANIC: could ` +
                `not write to file "pg_wal/xlogtemp\\.\\d+": No space left on device\\); \\d+\\.\\d MiB free there\\. ` +
                'Make at least 16\\.0 MiB free \\(one WAL segment\\) and start the service again$',
            ),
          ),
        }),
      ]);
      forgetDocument(instance.url);

      // On the disk still full, the database cannot start: the process says so and ends.
      const again = await runCli(['serve'], {
        DATA_DIR: dataDir,
        PORT: '0',
        TRELLIS_CONFIG: join(dataDir, 'test-settings.json'),
      });
      expect(again.code).toBe(74);
      expect(again.stderr).toMatch(
        /^trellis: the embedded database in \S+ did not start: its disk is full \(PostgreSQL: FATAL: could not write to file "pg_wal\/xlogtemp\.\d+": No space left on device\); [\d.]+ MiB free there\. Make at least 16\.0 MiB free \(one WAL segment\) and start the service again\n$/,
      );

      await filler.remove();
      instance = await serveInstance(dataDir, settings);
      c = await clientOf(instance);
      const read = await c.request('GET', `/${id}`, { token });
      expect(read.status).toBe(200);
      expect(read.json.data.n).toBe(acknowledged);
      expect((await c.request('PATCH', `/${id}`, { token, body: { n: -1 } })).status).toBe(204);
    }, 240_000);
  },
);

for (const backend of backendsUnderTest()) {
  describe.skipIf(!isRoot)(`writes below storage.minFreeSpaceInBytes [${backend}] (tmpfs; root only)`, () => {
    let dataDir: string;
    /** The tmpfs: DATA_DIR on the embedded database, only the file store's folder on PostgreSQL. */
    let disk: string;
    let drop: (() => Promise<void>) | undefined;
    let instance: Instance | undefined;
    let c: ServiceClient;
    let token: string;
    let filler: Filler;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'trellis-disk-full-'));
      disk = backend === 'pglite' ? dataDir : join(dataDir, 'files');
      await mkdir(disk, { recursive: true });
      mountTmpfs(disk, backend === 'pglite' ? 192 : 112);
      let env: Record<string, string> = {};
      if (backend === 'postgres') {
        const scratch = await scratchPostgresDatabase();
        drop = scratch.drop;
        env = { DATABASE_URL: scratch.url };
      }
      instance = await serveInstance(dataDir, {}, env);
      c = await clientOf(instance);
      token = await signUp(c);
      filler = new Filler(disk);
    });
    afterEach(async () => {
      await filler.remove();
    });
    afterAll(async () => {
      await stop(instance);
      spawnSync('umount', ['-l', disk]);
      await rm(dataDir, { recursive: true, force: true });
      await drop?.();
    });

    it('a loop of PATCHes ends in 507s while reads go on; writes are taken again once space is freed', async () => {
      const id = await createElement(c, token);
      const withFile = await createElement(c, token);
      const direct = { 'upload-complete': '?1', 'content-disposition': 'attachment; filename="a.bin"' };
      expect(
        (
          await c.request('PUT', `/${withFile}/file`, {
            token,
            raw: new Uint8Array(randomBytes(1000)),
            headers: direct,
          })
        ).status,
      ).toBe(201);
      await filler.leave(THRESHOLD + 24 * MiB);

      const statuses: number[] = [];
      let acknowledged = -1;
      for (let n = 0; n < 200 && statuses.filter((s) => s === 507).length < 5; n++) {
        const res = await c.request('PATCH', `/${id}`, { token, body: { n, text: bulky() } });
        statuses.push(res.status);
        if (res.status === 204) acknowledged = n;
        else expectInsufficientStorage(res, instance!.url);
        await filler.grow(MiB); // something else fills the disk too (on PostgreSQL only that)
        // At most 10 MiB a second: the service measures free space once a second, so a faster filler would take the
        // whole disk between two measurements (as on a fast machine it did).
        await new Promise((done) => setTimeout(done, 100));
      }
      // Acknowledged until the disk was short of space, refused from then on: never an error, never a wait.
      const first = statuses.indexOf(507);
      expect(first).toBeGreaterThan(0);
      expect(statuses.slice(0, first).every((s) => s === 204)).toBe(true);
      expect(statuses.slice(first)).toEqual([507, 507, 507, 507, 507]);

      // Reads go on, a search (a POST that changes nothing) too; every write is refused, before any body is read.
      const read = await c.request('GET', `/${id}`, { token });
      expect(read.status).toBe(200);
      expect(read.json.data.n).toBe(acknowledged);
      expect((await c.request('GET', '/instance-configuration')).status).toBe(200);
      expect((await c.request('GET', '/me', { token })).status).toBe(200);
      const file = await c.request('GET', `/${withFile}/file`, { token });
      expect(file.status).toBe(200);
      expect(file.text.length).toBeGreaterThan(0);
      const search = await c.request('POST', '/search', {
        token,
        body: { steps: [{ type: 'element-hydration', query: { elementIds: [id] } }] },
      });
      expect(search.status).toBe(200);
      const credentials = { uniqueUserIdentifier: 'disk@full.dev', password: PASSWORD };
      const refused = [
        await c.request('POST', '/', { token, body: { type: 'Sheet' } }),
        await c.request('PUT', `/${id}`, { token, body: { n: -1 } }),
        await c.request('DELETE', `/${id}`, { token }),
        await c.request('POST', '/register', {
          body: { type: 'User', uniqueUserIdentifier: 'new@full.dev', password: PASSWORD },
        }),
        await c.request('POST', '/token', { body: { type: 'Token', ...credentials } }),
        await c.request('DELETE', `/${withFile}/file`, { token }),
        await c.request('PUT', `/${withFile}/file`, { token, raw: new Uint8Array(10), headers: direct }),
        await c.request('POST', `/${id}/file`, { token, raw: new Uint8Array(0), headers: { 'upload-complete': '?0' } }),
      ];
      for (const res of refused) expectInsufficientStorage(res, instance!.url);
      expect((await c.request('GET', `/${id}`, { token })).json.data.n).toBe(acknowledged);
      expect((await c.request('GET', `/${withFile}/file`, { token })).text).toBe(file.text);

      await filler.remove();
      // Measured again within a second: the next writes are taken.
      let patched = 0;
      for (const started = Date.now(); patched !== 204 && Date.now() - started < 5000; ) {
        patched = (await c.request('PATCH', `/${id}`, { token, body: { n: -1 } })).status;
        if (patched !== 204) await new Promise((done) => setTimeout(done, 200));
      }
      expect(patched).toBe(204);
      expect((await c.request('GET', `/${id}`, { token })).json.data.n).toBe(-1);
      expect((await c.request('POST', '/token', { body: { type: 'Token', ...credentials } })).status).toBe(201);
      expect(
        (await c.request('PUT', `/${withFile}/file`, { token, raw: new Uint8Array(10), headers: direct })).status,
      ).toBe(201);
    });

    it('an upload streaming when space runs out stops with 507; a resumable one keeps its bytes and goes on once space is freed', async () => {
      const bytes = randomBytes(16 * MiB);
      const auth = { authorization: `Bearer ${token}` };
      await filler.leave(THRESHOLD + 4 * MiB);
      await new Promise((done) => setTimeout(done, 1100)); // the last measurement was before the disk filled

      // A direct upload: stopped part way, nothing stored.
      const directId = await createElement(c, token);
      const direct = await streamBody(
        instance!.url,
        'PUT',
        `/${directId}/file`,
        { ...auth, 'upload-complete': '?1', 'content-disposition': 'attachment; filename="big.bin"' },
        bytes,
      );
      expect(direct.status).toBe(507);
      expect(direct.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(direct.body).toEqual({
        type: `${instance!.url}/error/507/insufficient-storage`,
        title: 'Insufficient Storage',
        status: 507,
        detail: 'The server ran short of disk space while the body arrived; it takes no writes until space is freed.',
      });
      expect((await c.request('GET', `/${directId}/file`, { token })).status).toBe(404);
      expect((await c.request('GET', `/${directId}`, { token })).json.hasFile).toBeUndefined();

      // A resumable upload: its append is stopped part way, and what arrived is kept.
      await filler.remove();
      await filler.leave(THRESHOLD + 4 * MiB);
      await new Promise((done) => setTimeout(done, 1100)); // the last measurement was before the space came back
      const id = await createElement(c, token);
      const start = await c.request('POST', `/${id}/file`, {
        token,
        raw: new Uint8Array(0),
        headers: { 'upload-complete': '?0', 'content-disposition': 'attachment; filename="big.bin"' },
      });
      expect(start.status).toBe(204);
      const path = start.headers.get('location')!;
      const stopped = await streamBody(
        instance!.url,
        'PATCH',
        path,
        { ...auth, 'content-type': 'application/partial-upload', 'upload-offset': '0', 'upload-complete': '?1' },
        bytes,
      );
      expect(stopped.status).toBe(507);
      expect(stopped.body).toEqual({
        type: `${instance!.url}/error/507/insufficient-storage`,
        title: 'Insufficient Storage',
        status: 507,
        detail:
          'The server ran short of disk space while the body arrived. The bytes that arrived were kept: resume at Upload-Offset once space is freed.',
      });
      const kept = Number(stopped.headers['upload-offset']);
      expect(kept).toBeGreaterThan(0);
      expect(kept).toBeLessThan(bytes.length);
      expect(stopped.headers['upload-complete']).toBe('?0');
      const offset = await c.request('HEAD', path, { token });
      expect(offset.status).toBe(204);
      expect(Number(offset.headers.get('upload-offset'))).toBe(kept);

      await filler.remove();
      await new Promise((done) => setTimeout(done, 1100));
      const rest = await c.request('PATCH', path, {
        token,
        raw: new Uint8Array(bytes.subarray(kept)),
        headers: {
          'content-type': 'application/partial-upload',
          'upload-offset': String(kept),
          'upload-complete': '?1',
          'repr-digest': `sha-256=:${sha256(bytes).toString('base64')}:`,
        },
      });
      expect(rest.status).toBe(201);
      const stored = await fetch(`${instance!.url}/${id}/file`, { headers: auth });
      expect(stored.status).toBe(200);
      expect(sha256(Buffer.from(await stored.arrayBuffer()))).toEqual(sha256(bytes));
    });
  });
}
