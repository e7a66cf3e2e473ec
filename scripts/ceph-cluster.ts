// Throw-away S3-compatible object stores for tests and benchmarks: a one-node Ceph cluster (one monitor, one OSD
// keeping its objects in memory) with its S3 gateway, radosgw.
//
//   import { startObjectStore } from './scripts/ceph-cluster.ts';
//   const store = await startObjectStore();   // { endpoint, accessKeyId, secretAccessKey, region, stop() }
//   ...
//   await store.stop();                        // SIGKILL the daemons + rm -rf
//
// Node builtins only. Finds ceph-mon, ceph-osd and radosgw on PATH; when they are missing and we are root, installs
// Debian's `ceph-mon ceph-osd radosgw` (scripts/debian-packages.ts, as for PostgreSQL); otherwise throws. Each
// cluster lives in a fresh mkdtemp directory, listens on 127.0.0.1 only, needs no authentication between its daemons
// and keeps nothing on disk (`osd objectstore = memstore`). The settings that make it start in about a second are in
// ../shared/FACTS.md ("A real S3-compatible object store in tests"). Daemons are killed with SIGKILL (on SIGTERM
// radosgw lingers for seconds), also on process exit and signals.

import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { canInstallPackages, installDebianPackages, type Log } from './debian-packages.js';
import { capture, freePort, isMain, sleep, tail, waitForever, which } from './process-tools.js';

const PACKAGES = ['ceph-mon', 'ceph-osd', 'radosgw'];
const BINARIES = ['monmaptool', 'ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph'];
const defaultLog: Log = (msg) => process.stderr.write(`[ceph-cluster] ${msg}\n`);

export interface ObjectStore {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The cluster's directory (its daemons' command lines name its configuration there). */
  dir: string;
  startMs: number;
  stop(): Promise<void>;
}

/** A cluster as the exit and signal handlers see it. */
interface Live {
  dir: string;
  children: ChildProcess[];
  stopped: boolean;
}

/** Clusters still to be torn down, for the exit and signal handlers. */
const live = new Set<Live>();
let handlersInstalled = false;

const binaryDirs = () => [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/sbin', '/bin', '/sbin'];
const missing = () => BINARIES.filter((b) => which(b, binaryDirs()) === null);

/** Runs `cmd` to its end; resolves to its stdout, rejects with its output when it fails. */
async function run(cmd: string, args: string[], opts: SpawnOptions = {}): Promise<string> {
  const { code, signal, stdout, stderr } = await capture(cmd, args, opts);
  if (code === 0) return stdout;
  throw new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `exit code ${code}`}): ${(stderr + stdout).trim()}`);
}

let installing: Promise<void> | null = null;

/** Makes sure the Ceph binaries are there, installing Debian's packages as root when they are not. */
export function ensureCephBinaries({ log = defaultLog }: { log?: Log } = {}): Promise<void> {
  installing ??= (async () => {
    if (missing().length === 0) return;
    if (!canInstallPackages())
      throw new Error(
        `Ceph's ${missing().join(', ')} not found. Install them (Debian/Ubuntu: sudo apt-get install -y --no-install-recommends ${PACKAGES.join(' ')}) or run as root to let this script install them.`,
      );
    await installDebianPackages(PACKAGES, log);
    if (missing().length > 0) throw new Error(`after apt-get install, still missing: ${missing().join(', ')}`);
  })();
  installing.catch(() => {
    installing = null;
  });
  return installing;
}

function configText(dir: string, fsid: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = 127.0.0.1:${monPort}
public addr = 127.0.0.1
cluster addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
mon data = ${dir}/mon/$cluster-$id
osd data = ${dir}/osd/$cluster-$id
osd objectstore = memstore
memstore device bytes = ${64 * 1024 ** 3}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
paxos propose interval = 0.01
paxos min wait = 0.001
osd crush chooseleaf type = 0

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
rgw data = ${dir}/rgw
auth client required = none
ms mon client mode = crc
`;
}

function kill(cluster: Live): void {
  for (const child of cluster.children) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
  }
}

function stopSync(cluster: Live): void {
  if (cluster.stopped) return;
  cluster.stopped = true;
  live.delete(cluster);
  kill(cluster);
  try {
    rmSync(cluster.dir, { recursive: true, force: true });
  } catch {
    /* best effort at exit */
  }
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', () => {
    for (const c of [...live]) stopSync(c);
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      for (const c of [...live]) stopSync(c);
      process.kill(process.pid, sig);
    });
  }
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, logFile: string) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline)
      throw new Error(
        `${what} did not happen within ${timeoutMs} ms\n--- ${logFile} ---\n${tail(logFile, 30, '(no log)')}`,
      );
    await sleep(50);
  }
}

/** Starts the monitor, one OSD and radosgw of a configured cluster; resolves to radosgw's endpoint. */
async function startDaemons(cluster: Live, conf: string, fsid: string, monPort: number, rgwPort: number) {
  const { dir } = cluster;
  const c = ['-c', conf];
  const daemon = (cmd: string, args: string[]) => {
    const child = spawn(cmd, [...c, '-f', ...args], { stdio: 'ignore', cwd: dir });
    child.on('error', () => {});
    cluster.children.push(child);
    return child;
  };
  const ceph = (args: string[]) => run('ceph', [...c, '--connect-timeout', '20', ...args], { cwd: dir });

  await run('monmaptool', ['--create', '--fsid', fsid, '--add', 'a', `127.0.0.1:${monPort}`, join(dir, 'monmap')]);
  await run('ceph-mon', [...c, '--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap')], { cwd: dir });
  daemon('ceph-mon', ['-i', 'a']);
  const osdUuid = randomUUID();
  const osdId = (await ceph(['osd', 'new', osdUuid])).trim();
  await mkdir(join(dir, 'osd', `ceph-${osdId}`), { recursive: true });
  await run('ceph-osd', [...c, '-i', osdId, '--mkfs', '--osd-uuid', osdUuid], { cwd: dir });
  daemon('ceph-osd', ['-i', osdId]);
  await until(
    'the OSD coming up',
    async () =>
      (JSON.parse(await ceph(['osd', 'dump', '-f', 'json'])) as { osds?: { up?: number }[] }).osds?.[0]?.up === 1,
    60_000,
    join(dir, 'log', `osd.${osdId}.log`),
  );
  daemon('radosgw', ['-n', 'client.rgw']);
  const endpoint = `http://127.0.0.1:${rgwPort}`;
  await until(
    'radosgw answering',
    async () => (await (await fetch(`${endpoint}/`)).text()).includes('ListAllMyBucketsResult'),
    60_000,
    join(dir, 'log', 'client.rgw.log'),
  );
  return endpoint;
}

/** Creates the S3 user the tests and benchmarks sign their requests as. */
async function createUser(dir: string, conf: string): Promise<{ accessKeyId: string; secretAccessKey: string }> {
  const accessKeyId = `TRELLIS${randomBytes(6).toString('hex').toUpperCase()}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const user = ['--uid', 'trellis', '--display-name', 'trellis tests'];
  const keys = ['--access-key', accessKeyId, '--secret', secretAccessKey];
  await run('radosgw-admin', ['-c', conf, 'user', 'create', ...user, ...keys], { cwd: dir });
  return { accessKeyId, secretAccessKey };
}

/** SIGKILLs the daemons, waits for them to be gone and removes the cluster's directory. */
async function stopStore(cluster: Live): Promise<void> {
  kill(cluster);
  await Promise.all(
    cluster.children.map((child) =>
      child.exitCode === null && child.signalCode === null
        ? new Promise((resolve) => child.once('exit', resolve))
        : null,
    ),
  );
  await rm(cluster.dir, { recursive: true, force: true, maxRetries: 3 });
  cluster.stopped = true;
  live.delete(cluster);
}

/** Starts a one-node Ceph cluster with radosgw and an S3 user. */
export async function startObjectStore({ log = defaultLog }: { log?: Log } = {}): Promise<ObjectStore> {
  await ensureCephBinaries({ log });
  installHandlers();
  const t0 = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'trellis-ceph-'));
  const cluster: Live = { dir, children: [], stopped: false };
  live.add(cluster);
  try {
    for (const sub of ['run', 'log', 'mon', 'osd', 'rgw']) await mkdir(join(dir, sub), { recursive: true });
    const fsid = randomUUID();
    const monPort = await freePort();
    const rgwPort = await freePort();
    const conf = join(dir, 'ceph.conf');
    await writeFile(conf, configText(dir, fsid, monPort, rgwPort));
    const endpoint = await startDaemons(cluster, conf, fsid, monPort, rgwPort);
    const { accessKeyId, secretAccessKey } = await createUser(dir, conf);
    const startMs = Date.now() - t0;
    log(`Ceph object store (radosgw) at ${endpoint} (${dir}), started in ${startMs} ms`);
    let stopping: Promise<void> | null = null;
    const stop = () => {
      stopping ??= stopStore(cluster);
      return stopping;
    };
    return { endpoint, region: 'us-east-1', accessKeyId, secretAccessKey, dir, startMs, stop };
  } catch (error) {
    stopSync(cluster);
    throw error;
  }
}

// `node --import tsx scripts/ceph-cluster.ts` starts a store, prints its endpoint and keys, and keeps it until Ctrl-C.
if (isMain(import.meta.url)) {
  const store = await startObjectStore();
  process.stdout.write(
    `AWS_ACCESS_KEY_ID=${store.accessKeyId} AWS_SECRET_ACCESS_KEY=${store.secretAccessKey} endpoint ${store.endpoint}\n`,
  );
  process.stderr.write('[ceph-cluster] press Ctrl-C to stop and remove the cluster\n');
  await waitForever();
}
