// Where the time of a download from the object store goes: `node --import tsx bench/s3-download.ts [--mib 64]
// [--rounds 5] [--with store,sdk] [--trellis DIR]... [--profile DIR]`. On a throw-away Ceph store (and PostgreSQL when
// Trellis runs), the same object is read in turns (the order rotates every round) by
//   floor        the SDK alone, read by the process that asked (the S3 floor of `npm run bench`, bench/lib/s3-floor.ts);
//   proxy:store  a bare HTTP server in its own process that pipes S3BlobStore.open's stream into its answer, read by a
//                client process: one hop and nothing else;
//   proxy:sdk    the same with GetObject through the SDK's own HTTP handler (what S3BlobStore did before
//                docs/decisions/023);
//   trellis:N    GET /<id>/file of the Trellis checkout N (a directory with dist/ built), e.g. main against a branch.
// Each line has the wall time, the time to the first byte, the pieces the client read, and the CPU seconds of the
// client, the server in between, radosgw and the OSD: on the 2-core machine a download is bound by the CPU all of
// them need. The summary has each one's median throughput and its median ratio to the floor of the same round.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, Agent as HttpAgent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { S3BlobStore } from '../src/blob/s3-blob-store.js';
import { openPostgres } from '../src/storage/postgres.js';
import { freePort, startCluster, startObjectStore } from './lib/cluster.js';
import { startServer } from './lib/procs.js';

const MiB = 1024 * 1024;
const SELF = fileURLToPath(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUCKET = 'trellis-s3-download';

interface Store {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** What a client process prints: wall time, time to the first byte, bytes, its own CPU seconds. */
interface ClientResult {
  seconds: number;
  firstByte: number;
  bytes: number;
  chunks: number;
  cpu: number;
}

const print = (r: ClientResult) => process.stdout.write(`RESULT ${JSON.stringify(r)}\n`);
const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** Reads `Key` with the SDK alone, as s3-floor.ts does. */
async function floorClient(store: Store, key: string) {
  const client = new S3Client({
    endpoint: store.endpoint,
    region: store.region,
    forcePathStyle: true,
    credentials: { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const cpu = cpuSeconds();
  const started = process.hrtime.bigint();
  let firstByte = 0;
  let bytes = 0;
  let chunks = 0;
  const out = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  await pipeline(
    out.Body as NodeJS.ReadableStream,
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (bytes === 0) firstByte = Number(process.hrtime.bigint() - started) / 1e9;
        bytes += chunk.length;
        chunks++;
        callback();
      },
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  client.destroy();
  print({ seconds, firstByte, bytes, chunks, cpu: cpuSeconds() - cpu });
}

/** GETs `url` on a keep-alive connection and discards the body, as bench/lib/transfer.ts does. */
async function httpClient(url: string, headers: Record<string, string>) {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const cpu = cpuSeconds();
  const started = process.hrtime.bigint();
  let firstByte = 0;
  let bytes = 0;
  let chunks = 0;
  const status = await new Promise<number>((done, fail) => {
    request(url, { headers, agent }, (res) => {
      res.on('data', (chunk: Buffer) => {
        if (bytes === 0) firstByte = Number(process.hrtime.bigint() - started) / 1e9;
        bytes += chunk.length;
        chunks++;
      });
      res.on('end', () => done(res.statusCode ?? 0));
      res.on('error', fail);
    })
      .on('error', fail)
      .end();
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  agent.destroy();
  if (status !== 200) throw new Error(`GET ${url} answered ${status}`);
  print({ seconds, firstByte, bytes, chunks, cpu: cpuSeconds() - cpu });
}

/**
 * The bare proxy: each GET answers the object `<prefix><key>/f-<tag>`, piped into the answer as it comes, read
 * through S3BlobStore (`store`) or with GetObject of an S3Client with the SDK's own HTTP handler (`sdk`).
 */
async function proxyServer(kind: string, store: Store, prefix: string, key: string, tag: string, port: number) {
  const credentials = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
  const blobs = new S3BlobStore({
    endpoint: store.endpoint,
    region: store.region,
    bucket: BUCKET,
    prefix,
    timeoutMs: 30_000,
    credentials,
  });
  const sdk = new S3Client({
    endpoint: store.endpoint,
    region: store.region,
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const open = async () => {
    if (kind === 'store') return blobs.open(key, undefined, tag);
    const out = await sdk.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${prefix}${key}/f-${tag}` }));
    return { stream: out.Body as Readable, size: out.ContentLength ?? 0 };
  };
  createServer(async (req, res) => {
    if (req.url === '/ready') return res.end('ready');
    const blob = await open();
    if (!blob) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(blob.size) });
    blob.stream.pipe(res);
  }).listen(port, '127.0.0.1');
  process.once('SIGTERM', () => process.exit(0)); // so that --cpu-prof writes its profile
}

// ----------------------------------------------------------------------------------------------------------------
// The orchestrating process
// ----------------------------------------------------------------------------------------------------------------

/** CPU seconds (user + system) of a process and its threads, from /proc; 0 once it is gone. */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The pids of the processes whose command line contains `text`. */
function pidsWith(text: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(text)) pids.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function runClient(args: string[]): Promise<ClientResult> {
  return new Promise((done, fail) => {
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', SELF, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', fail);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code !== 0 || !line) fail(new Error(`client ${args[0]} failed (exit ${code}): ${err.trim()}`));
      else done(JSON.parse(line.slice('RESULT '.length)) as ClientResult);
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

interface Variant {
  name: string;
  server: number[];
  run: () => Promise<ClientResult>;
}

/** The object the variants read: `<prefix><key>/f-<tag>`. */
interface StoredObject {
  prefix: string;
  key: string;
  tag: string;
}

/** What the variants are set up with: the store and its SDK client, the payload, PostgreSQL for Trellis. */
interface Setup {
  work: string;
  store: Store & { dir: string };
  storeJson: string;
  sdk: S3Client;
  pg: { url: string } | null;
  payload: string;
  profile: (name: string) => string[];
  stops: Array<() => Promise<void>>;
}

/** Trellis checkout `dir` on a database and a prefix of its own, with one element that has the file. */
async function trellisVariant(
  setup: Setup,
  i: number,
  dir: string,
): Promise<{ variant: Variant; object: StoredObject }> {
  const { work, store, pg, sdk, payload } = setup;
  const database = `s3dl_${i}`;
  await runPsql(pg!.url, `DROP DATABASE IF EXISTS ${database}`);
  await runPsql(pg!.url, `CREATE DATABASE ${database}`);
  const config = join(work, `trellis-${i}.yaml`);
  await writeFile(
    config,
    `file:\n  storage: s3\n  s3:\n    endpoint: ${store.endpoint}\n    bucket: ${BUCKET}\n    prefix: t${i}\n`,
  );
  const port = await freePort();
  const server = await startServer({
    name: `trellis ${dir}`,
    command: process.execPath,
    args: [...setup.profile(`trellis-${i}`), join(resolve(dir), 'bin/trellis.js'), 'serve'],
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: join(work, `data-${i}`),
      LOG_LEVEL: 'warn',
      DATABASE_URL: pg!.url.replace(/\/[^/]*$/, `/${database}`),
      TRELLIS_CONFIG: config,
      AWS_ACCESS_KEY_ID: store.accessKeyId,
      AWS_SECRET_ACCESS_KEY: store.secretAccessKey,
    },
    cwd: resolve(dir),
    port,
    readyPath: '/instance-configuration',
    logFile: join(work, `trellis-${i}.log`),
  });
  setup.stops.push(() => server.stop());
  const base = server.baseUrl;
  const { auth, id } = await uploadedElement(base, payload);
  const listed = await sdk.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `t${i}/${id}/f-` }));
  const name = listed.Contents![0]!.Key!;
  return {
    variant: {
      name: `trellis:${i}`,
      server: [server.pid],
      run: () => runClient(['get', `${base}/${id}/file`, JSON.stringify(auth)]),
    },
    object: { prefix: `t${i}/`, key: id, tag: name.slice(name.lastIndexOf('/f-') + 3) },
  };
}

/** An account, its token, and an element with the payload as its file. */
async function uploadedElement(base: string, payload: string) {
  const json = { 'content-type': 'application/json' };
  const account = { type: 'User', uniqueUserIdentifier: 'bench@s3.bench', password: 'bench password 1' };
  await (await fetch(`${base}/register`, { method: 'POST', headers: json, body: JSON.stringify(account) })).text();
  const token = (
    (await (
      await fetch(`${base}/token`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ ...account, type: 'Token' }),
      })
    ).json()) as { token: string }
  ).token;
  const auth = { authorization: `Bearer ${token}` };
  const created = await fetch(`${base}/`, {
    method: 'POST',
    headers: { ...json, ...auth },
    body: JSON.stringify({ type: 'Attachment', data: { name: 'bench' } }),
  });
  await created.text();
  const id = created.headers.get('location')!.slice(1);
  const put = await fetch(`${base}/${id}/file`, {
    method: 'PUT',
    headers: { ...auth, 'content-type': 'application/octet-stream', 'upload-complete': '?1' },
    body: readFileSync(payload),
  });
  if (put.status !== 201) throw new Error(`PUT /${id}/file answered ${put.status}: ${await put.text()}`);
  return { auth, id };
}

/** A bare proxy in between: `store` reads through S3BlobStore, `sdk` with the SDK's own handler. */
async function proxyVariant(setup: Setup, kind: string, object: StoredObject): Promise<Variant> {
  const port = await freePort();
  const server = await startServer({
    name: `proxy ${kind}`,
    command: process.execPath,
    args: [
      ...setup.profile(kind),
      '--import',
      'tsx',
      SELF,
      'proxy',
      kind,
      setup.storeJson,
      object.prefix,
      object.key,
      object.tag,
      String(port),
    ],
    env: process.env,
    cwd: ROOT,
    port,
    readyPath: '/ready',
    logFile: join(setup.work, `proxy-${kind}.log`),
  });
  setup.stops.push(() => server.stop());
  return { name: `proxy:${kind}`, server: [server.pid], run: () => runClient(['get', `${server.baseUrl}/`, '{}']) };
}

/** The floor first, the proxies, then the Trellis checkouts. */
async function variantsOf(setup: Setup, trellis: string[], kinds: string[]): Promise<Variant[]> {
  const variants: Variant[] = [];
  let object: StoredObject | null = null;
  for (const [i, dir] of trellis.entries()) {
    const made = await trellisVariant(setup, i, dir);
    object ??= made.object;
    variants.push(made.variant);
  }
  if (!object) {
    // No Trellis: the floor and the proxy read an object uploaded with the SDK.
    await setup.sdk.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: 'p/bench/f-plain',
        Body: readFileSync(setup.payload),
      }),
    );
    object = { prefix: 'p/', key: 'bench', tag: 'plain' };
  }
  const name = `${object.prefix}${object.key}/f-${object.tag}`;
  variants.unshift({ name: 'floor', server: [], run: () => runClient(['floor', setup.storeJson, name]) });
  for (const kind of kinds)
    variants.splice(variants.length - trellis.length, 0, await proxyVariant(setup, kind, object));
  return variants;
}

/** The rounds, each variant in turn (the order rotating), a line each; then the medians. */
async function measureRounds(setup: Setup, variants: Variant[], rounds: number, bytes: number) {
  const ceph = pidsWith(setup.store.dir);
  const rgw = ceph.filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('radosgw'));
  const osd = ceph.filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('ceph-osd'));
  const sum = (pids: number[]) => pids.reduce((s, p) => s + cpuOf(p), 0);
  const results = new Map<string, Array<{ mibps: number; ratio: number }>>();
  process.stdout.write('round variant    MiB/s  seconds  first-byte  chunks  cpu: client server radosgw osd\n');
  for (let r = 0; r < rounds; r++) {
    const order = variants.map((_, k) => variants[(k + r) % variants.length]!);
    const measured = new Map<string, ClientResult>();
    for (const v of order) {
      const before = { server: sum(v.server), rgw: sum(rgw), osd: sum(osd) };
      const t = await v.run();
      if (t.bytes !== bytes) throw new Error(`${v.name}: ${t.bytes} bytes, expected ${bytes}`);
      measured.set(v.name, t);
      const cpu = { server: sum(v.server) - before.server, rgw: sum(rgw) - before.rgw, osd: sum(osd) - before.osd };
      process.stdout.write(
        `${String(r + 1).padStart(5)} ${v.name.padEnd(13)} ${(bytes / MiB / t.seconds).toFixed(0).padStart(5)} ` +
          `${t.seconds.toFixed(3).padStart(8)} ${(t.firstByte * 1000).toFixed(0).padStart(8)} ms ${String(t.chunks).padStart(7)} ` +
          `${t.cpu.toFixed(2).padStart(11)} ${cpu.server.toFixed(2).padStart(6)} ${cpu.rgw.toFixed(2).padStart(7)} ${cpu.osd.toFixed(2).padStart(4)}\n`,
      );
    }
    const floor = measured.get('floor')!;
    for (const [n, t] of measured) {
      const list = results.get(n) ?? [];
      list.push({ mibps: bytes / MiB / t.seconds, ratio: floor.seconds / t.seconds });
      results.set(n, list);
    }
  }
  process.stdout.write('\nvariant    median MiB/s  median ratio to the floor  ratios\n');
  for (const [n, list] of results)
    process.stdout.write(
      `${n.padEnd(13)} ${median(list.map((x) => x.mibps))
        .toFixed(0)
        .padStart(12)} ${median(list.map((x) => x.ratio))
        .toFixed(2)
        .padStart(26)}  ${list.map((x) => x.ratio.toFixed(2)).join(' ')}\n`,
    );
}

async function orchestrate() {
  const { values: argv } = parseArgs({
    args: process.argv.slice(2),
    options: {
      mib: { type: 'string', default: '64' },
      rounds: { type: 'string', default: '5' },
      trellis: { type: 'string', multiple: true, default: [] },
      with: { type: 'string', default: 'store,sdk' },
      profile: { type: 'string' },
    },
  });
  const bytes = Number(argv.mib) * MiB;
  const profile = (name: string) =>
    argv.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(resolve(argv.profile), name)}`] : [];
  const rounds = Number(argv.rounds);
  const log = (msg: string) => process.stderr.write(`[s3-download] ${msg}\n`);
  const work = await mkdtemp(join(tmpdir(), 'trellis-s3-download-'));
  const store = await startObjectStore(log);
  const pg = argv.trellis!.length > 0 ? await startCluster(log) : null;
  const stops: Array<() => Promise<void>> = [];
  try {
    const credentials = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
    const sdk = new S3Client({ endpoint: store.endpoint, region: store.region, forcePathStyle: true, credentials });
    await sdk.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const payload = join(work, 'payload.bin');
    await writeFile(payload, randomBytes(bytes));
    const storeJson = JSON.stringify({ ...store, stop: undefined });
    const setup: Setup = { work, store, storeJson, sdk, pg, payload, profile, stops };
    const variants = await variantsOf(setup, argv.trellis!, argv.with!.split(',').filter(Boolean));
    sdk.destroy();
    log(`${argv.mib} MiB, ${rounds} rounds, ${variants.map((v) => v.name).join(', ')}`);
    await measureRounds(setup, variants, rounds, bytes);
  } finally {
    for (const stop of stops) await stop().catch(() => {});
    await pg?.stop();
    await store.stop();
    await rm(work, { recursive: true, force: true });
  }
}

async function runPsql(url: string, sql: string) {
  const db = await openPostgres(url, 1);
  try {
    await db.query(sql);
  } finally {
    await db.close();
  }
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'floor') await floorClient(JSON.parse(rest[0]!) as Store, rest[1]!);
else if (mode === 'get') await httpClient(rest[0]!, JSON.parse(rest[1]!) as Record<string, string>);
else if (mode === 'proxy')
  await proxyServer(rest[0]!, JSON.parse(rest[1]!) as Store, rest[2]!, rest[3]!, rest[4]!, Number(rest[5]));
else await orchestrate();
