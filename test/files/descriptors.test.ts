// Descriptor exhaustion (issue 30 item 4): a service process that has run out of file descriptors answers file
// requests with 503 and Retry-After instead of 500, leaves nothing behind, and serves them again once descriptors are
// free. The exhaustion is real: a child server process under a lowered descriptor limit opens descriptors until
// EMFILE (test/helpers/fd-server.ts). On the disk store the files need descriptors; on the object store the
// connections to the store do: the child reaches the store through a relay that drops its connections before the
// descriptors run out, so that its file requests need new ones.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StoreLocation, type StoreRelay, storedNames, storeRelay, temporaryBlobs } from '../helpers/blobs.js';
import { emptyPrefix, newS3Prefix } from '../helpers/bucket.js';
import { backendsUnderTest, blobStoresUnderTest, s3Settings, scratchPostgresDatabase } from '../helpers/harness.js';
import { noise } from './fixtures.js';

const ENTRY = fileURLToPath(new URL('../helpers/fd-server.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p));

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

for (const backend of backendsUnderTest())
  for (const blobStore of blobStoresUnderTest()) {
    describe(`descriptor exhaustion [${backend}${blobStore === 'disk' ? '' : `, ${blobStore}`}]`, () => {
      let child: ChildProcess;
      let lines: AsyncIterator<string>;
      let url = '';
      let store: StoreLocation = { dataDir: '', s3Prefix: null };
      let relay: StoreRelay | null = null;
      let dropDb: () => Promise<void> = async () => {};
      // One connection, opened before the descriptors run out and reused after: a new one could not be accepted then.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

      const next = async () => JSON.parse((await lines.next()).value as string) as Record<string, unknown>;
      const send = (method: string, path: string, headers: Record<string, string> = {}, body?: Buffer) =>
        new Promise<Answer>((resolve, reject) => {
          const req = http.request(`${url}${path}`, {
            method,
            agent,
            headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
          });
          req.on('response', (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
          });
          req.on('error', reject);
          req.end(body);
        });
      const json = (path: string, body: unknown, token?: string) =>
        send(
          'POST',
          path,
          { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
          Buffer.from(JSON.stringify(body)),
        );

      beforeAll(async () => {
        store = {
          dataDir: await mkdtemp(join(tmpdir(), 'trellis-fd-')),
          s3Prefix: blobStore === 's3' ? newS3Prefix() : null,
        };
        let settings: Record<string, unknown> = { database: { poolSize: 2 } };
        const env: Record<string, string> = {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          DATA_DIR: store.dataDir,
        };
        if (store.s3Prefix !== null) {
          relay = await storeRelay();
          const s3 = s3Settings({ ...settings, file: { s3: { endpoint: relay.endpoint } } }, store.s3Prefix);
          settings = s3.settings;
          env.AWS_ACCESS_KEY_ID = s3.credentials.accessKeyId;
          env.AWS_SECRET_ACCESS_KEY = s3.credentials.secretAccessKey;
        }
        env.TRELLIS_TEST_SETTINGS = JSON.stringify(settings);
        if (backend === 'postgres') {
          const scratch = await scratchPostgresDatabase();
          env.DATABASE_URL = scratch.url;
          dropDb = scratch.drop;
        }
        const node = [process.execPath, '--import', TSX, ENTRY];
        const [command, ...args] = PRLIMIT ? [PRLIMIT, '--nofile=4096:4096', ...node] : node;
        child = spawn(command!, args, { env, stdio: ['pipe', 'pipe', 'inherit'] });
        lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
        url = (await next()).url as string;
      }, 120_000);

      afterAll(async () => {
        agent.destroy();
        if (child && child.exitCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.stdin!.end();
          child.kill('SIGTERM');
          await exited;
        }
        await dropDb();
        await rm(store.dataDir, { recursive: true, force: true });
        await relay?.close();
        if (store.s3Prefix !== null) await emptyPrefix(`${store.s3Prefix}/`);
      });

      it('file requests answer 503 with Retry-After while no descriptor is left, and succeed once there are', async () => {
        const identifier = 'alice@fd.dev';
        const password = 'correct horse battery staple';
        expect((await json('/register', { type: 'User', uniqueUserIdentifier: identifier, password })).status).toBe(
          201,
        );
        const token = JSON.parse(
          (await json('/token', { type: 'Token', uniqueUserIdentifier: identifier, password })).body,
        ).token as string;
        const auth = { authorization: `Bearer ${token}` };
        const created = await json('/', { type: 'Doc' }, token);
        const id = created.headers.location!.slice(1);
        const other = (await json('/', { type: 'Doc' }, token)).headers.location!.slice(1);
        const bytes = noise(4096, 81);
        expect((await send('PUT', `/${id}/file`, { ...auth, 'upload-complete': '?1' }, bytes)).status).toBe(201);
        // Warm up: the download path (and the embedded database's files) once before the descriptors run out.
        expect((await send('GET', `/${id}/file`, auth)).status).toBe(200);

        relay?.cut(); // the connections to the object store the child keeps for later: gone
        child.stdin!.write('exhaust\n');
        expect((await next()).exhausted).toBeGreaterThan(0);

        const download = await send('GET', `/${id}/file`, auth);
        expect(download.status).toBe(503);
        expect(download.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
        expect(JSON.parse(download.body)).toMatchObject({ type: `${url}/error/503/service-unavailable`, status: 503 });

        const upload = await send('PUT', `/${other}/file`, { ...auth, 'upload-complete': '?1' }, noise(1024, 82));
        expect(upload.status).toBe(503);
        expect(upload.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);

        child.stdin!.write('release\n');
        expect((await next()).released).toBe(true);
        expect(await temporaryBlobs(store)).toEqual([]);
        expect(await storedNames(store, other)).toEqual([]);
        const again = await send('GET', `/${id}/file`, auth);
        expect(again.status).toBe(200);
        expect(Buffer.from(again.body, 'latin1').length).toBeGreaterThan(0);
        expect((await send('GET', `/${other}/file`, auth)).status).toBe(404);
      });
    });
  }
