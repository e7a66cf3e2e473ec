// Issue 34's item 7: a direct upload and a download through Trellis with its files in an S3-compatible store (a
// throw-away Ceph cluster, scripts/ceph-cluster.ts), against the same transfers made with the SDK alone in the same
// run (the S3 floor, bench/lib/s3-floor.ts), taking turns like the other file scenarios. PostgreSQL only.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { openPostgres } from '../../src/storage/postgres.js';
import { type ObjectStore, startCluster, startObjectStore } from '../lib/cluster.js';
import { type Bench, fileLabel, ROOT, type Settings } from '../lib/context.js';
import { capture } from '../lib/load.js';
import { auth, compare, jsonHeaders } from '../lib/measure.js';
import type { ServerProcess } from '../lib/procs.js';
import { startTrellis } from '../lib/servers.js';
import { bestOfEach, type TransferResult, transfer, transferRow, withRss } from '../lib/transfers.js';

const BUCKET = 'trellis-bench';

export const s3ScenarioNames = (settings: Settings) => [
  `S3 floor upload ${fileLabel(settings)} (SDK)`,
  `S3 floor download ${fileLabel(settings)} (SDK)`,
  `upload ${fileLabel(settings)} direct, S3`,
  `download ${fileLabel(settings)}, S3`,
];

export async function s3Scenarios(bench: Bench) {
  const [floorUpName, floorDownName, upName, downName] = s3ScenarioNames(bench.settings) as [
    string,
    string,
    string,
    string,
  ];
  const { log, settings } = bench;
  const store = await startObjectStore((msg) => log(`ceph: ${msg}`));
  const trellis = await startS3Trellis(bench, store);
  try {
    const { token, fileUrl } = await fileElement(trellis.baseUrl);
    const payload = join(bench.work, 'payload.bin');
    const headers = { ...auth(token), 'content-type': 'application/octet-stream', 'upload-complete': '?1' };
    const tries = settings.fileTries;
    const [floorUp, direct] = await bestOfEach(tries, floor(bench, store, 'upload'), () =>
      transfer(trellis.pid, { method: 'PUT', url: fileUrl, headers, file: payload }),
    );
    const baseUp = transferRow(bench, floorUpName, 'postgres', floorUp!, [[200]]);
    bench.rows.push(baseUp);
    const up = transferRow(bench, upName, 'postgres', direct!, [[201, 204]]);
    compare(up, baseUp, 0.7);
    withRss(up);
    bench.rows.push(up);
    const [floorDown, download] = await bestOfEach(tries, floor(bench, store, 'download'), () =>
      transfer(trellis.pid, { method: 'GET', url: fileUrl, headers: auth(token) }),
    );
    const baseDown = transferRow(bench, floorDownName, 'postgres', floorDown!, [[200]]);
    bench.rows.push(baseDown);
    const down = transferRow(bench, downName, 'postgres', download!, [[200]]);
    compare(down, baseDown, 0.7);
    withRss(down);
    bench.rows.push(down);
  } finally {
    await trellis.stop();
    await store.stop();
  }
}

/** Trellis on a database of its own in the run's PostgreSQL server, with its files in the store's bucket. */
async function startS3Trellis(bench: Bench, store: ObjectStore): Promise<ServerProcess> {
  const { work, log } = bench;
  const dataDir = join(work, 'data-s3');
  await mkdir(dataDir, { recursive: true });
  const database = 'bench_s3';
  bench.cluster ??= await startCluster((msg) => log(`pg-cluster: ${msg}`), bench.options.pgSettings);
  const admin = await openPostgres(bench.cluster.url, 1);
  await admin.query(`DROP DATABASE IF EXISTS ${database}`);
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.close();
  const url = bench.cluster.url.replace(/\/[^/]*$/, `/${database}`);
  const credentials = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
  const sdk = new S3Client({ endpoint: store.endpoint, region: store.region, forcePathStyle: true, credentials });
  await sdk.send(new CreateBucketCommand({ Bucket: BUCKET }));
  sdk.destroy();
  const config = join(work, 's3.yaml');
  await writeFile(
    config,
    `file:\n  storage: s3\n  s3:\n    endpoint: ${store.endpoint}\n    bucket: ${BUCKET}\n    prefix: trellis\n`,
  );
  return startTrellis(bench, 'postgres', url, dataDir, {
    TRELLIS_CONFIG: config,
    AWS_ACCESS_KEY_ID: store.accessKeyId,
    AWS_SECRET_ACCESS_KEY: store.secretAccessKey,
  });
}

/** An account of its own, its token, and the URL of the file of an element it created. */
async function fileElement(baseUrl: string): Promise<{ token: string; fileUrl: string }> {
  const account = { type: 'User', uniqueUserIdentifier: 'bench@s3.bench', password: 'bench password 1' };
  await (
    await fetch(`${baseUrl}/register`, {
      method: 'POST',
      headers: jsonHeaders(),
      body: JSON.stringify(account),
    })
  ).arrayBuffer();
  const tokenRes = await fetch(`${baseUrl}/token`, {
    method: 'POST',
    headers: jsonHeaders(),
    body: JSON.stringify({ ...account, type: 'Token' }),
  });
  const token = ((await tokenRes.json()) as { token: string }).token;
  const created = await fetch(`${baseUrl}/`, {
    method: 'POST',
    headers: jsonHeaders(token),
    body: JSON.stringify({ type: 'Attachment', data: { name: 'bench' } }),
  });
  await created.arrayBuffer();
  return { token, fileUrl: `${baseUrl}${created.headers.get('location')}/file` };
}

/** The S3 floor: the same transfer made with the SDK alone, in a child process. */
const floor =
  (bench: Bench, store: ObjectStore, direction: 'upload' | 'download') => async (): Promise<TransferResult> => {
    const credentials = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
    const file = join(bench.work, 'payload.bin');
    const job = { endpoint: store.endpoint, ...credentials, bucket: BUCKET, key: 'floor.bin', direction, file };
    const { code, stdout, stderr } = await capture(process.execPath, [
      '--import',
      'tsx',
      join(ROOT, 'bench/lib/s3-floor.ts'),
      JSON.stringify(job),
    ]);
    const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
    if (code !== 0 || !line) throw new Error(`S3 floor client failed (exit ${code}): ${stderr.trim()}`);
    const r = JSON.parse(line.slice('BENCHJSON '.length)) as { seconds: number; bytes: number };
    const moved = direction === 'upload' ? { bytes: 0, sent: r.bytes } : { bytes: r.bytes, sent: 0 };
    return {
      steps: [{ status: 200, ...moved, seconds: r.seconds, body: '', location: null }],
      seconds: r.seconds,
      rssGrowthMiB: null,
    };
  };
