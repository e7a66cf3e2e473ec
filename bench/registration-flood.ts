// `node --import tsx bench/registration-flood.ts`: what a flood of registrations costs the others (issue 52, item 8).
// Trellis on a throw-away PostgreSQL server (the build of dist/: `npm run prepare` first); a client downloads a 4 MiB
// file and reads an element one after the other, first quietly, then while 1,000 POST /register from one address
// are sent at once (all but the throttle's allowance answered 429). Prints the download's and the GET's median and
// maximum in both phases, and what the registrations were answered.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster } from './lib/cluster.js';
import { removeTree } from './lib/procs.js';
import { startStandaloneTrellis } from './lib/servers.js';

const FLOOD = 1000;
const MiB = 1024 * 1024;
const log = (msg: string) => process.stderr.write(`[flood] ${msg}\n`);

async function call(
  base: string,
  method: string,
  path: string,
  init: { token?: string; body?: unknown; raw?: BodyInit; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, {
    method,
    headers,
    body: init.body !== undefined ? JSON.stringify(init.body) : init.raw,
  });
  return { status: res.status, headers: res.headers, bytes: (await res.arrayBuffer()).byteLength };
}

const stats = (list: number[]) => {
  const sorted = [...list].sort((a, b) => a - b);
  return { n: sorted.length, p50: sorted[Math.floor(sorted.length / 2)]!, max: sorted.at(-1)! };
};

/** Downloads and GETs one after the other until `until` resolves (or `count` of each when no promise is given). */
async function probe(base: string, token: string, id: string, until: Promise<unknown> | number) {
  const downloads: number[] = [];
  const gets: number[] = [];
  let done = false;
  if (typeof until !== 'number') void until.then(() => (done = true));
  for (let i = 0; typeof until === 'number' ? i < until : !done; i++) {
    let t = performance.now();
    const file = await call(base, 'GET', `/${id}/file`, { token });
    if (file.status !== 200 || file.bytes !== 4 * MiB) throw new Error(`download: ${file.status}`);
    downloads.push(performance.now() - t);
    t = performance.now();
    const element = await call(base, 'GET', `/${id}`, { token });
    if (element.status !== 200) throw new Error(`GET: ${element.status}`);
    gets.push(performance.now() - t);
  }
  return { download: stats(downloads), get: stats(gets) };
}

/**
 * The flood, from a process of its own so that sending it does not hold up the probe's own event loop: resolves to
 * how many registrations were answered with each status.
 */
function flood(base: string): Promise<Record<string, number>> {
  const script = `
    const [base, count] = process.argv.slice(1);
    const answers = await Promise.all(Array.from({ length: Number(count) }, async (_, i) => {
      try {
        const res = await fetch(base + '/register', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'User', uniqueUserIdentifier: 'flood' + i + '@flood.dev', password: 'flood password' }),
        });
        await res.arrayBuffer();
        return res.status;
      } catch {
        return 'closed'; // server.maxConnections: the flood and the probe are one connection over it
      }
    }));
    const counts = {};
    for (const status of answers) counts[status] = (counts[status] ?? 0) + 1;
    process.stdout.write(JSON.stringify(counts));`;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--input-type=module', '-e', script, base, String(FLOOD)], (error, stdout) =>
      error ? reject(error) : resolve(JSON.parse(stdout) as Record<string, number>),
    ),
  );
}

const work = await mkdtemp(join(tmpdir(), 'trellis-flood-'));
const cluster = await startCluster(log);
const server = await startStandaloneTrellis(work, cluster.url);
try {
  const base = server.baseUrl;
  const password = 'probe password';
  const identifier = 'probe@flood.dev';
  await call(base, 'POST', '/register', { body: { type: 'User', uniqueUserIdentifier: identifier, password } });
  const tok = await fetch(`${base}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'Token', uniqueUserIdentifier: identifier, password }),
  });
  const { token } = (await tok.json()) as { token: string };
  const created = await call(base, 'POST', '/', { token, body: { type: 'Doc', data: { name: 'probe' } } });
  const id = created.headers.get('location')!.slice(1);
  const put = await call(base, 'PUT', `/${id}/file`, {
    token,
    raw: new Uint8Array(4 * MiB).fill(0x61),
    headers: { 'upload-complete': '?1' },
  });
  if (put.status !== 201) throw new Error(`upload: ${put.status}`);
  await probe(base, token, id, 10); // warm-up
  const quiet = await probe(base, token, id, 40);
  const flooding = flood(base);
  const floodStart = performance.now();
  const during = await probe(base, token, id, flooding);
  console.log(`flood:  answered in ${(performance.now() - floodStart).toFixed(0)} ms`);
  const ms = (s: { p50: number; max: number; n: number }) =>
    `p50 ${s.p50.toFixed(0)} ms, max ${s.max.toFixed(0)} ms (${s.n})`;
  console.log(`quiet:  download ${ms(quiet.download)}; GET ${ms(quiet.get)}`);
  console.log(`flood:  download ${ms(during.download)}; GET ${ms(during.get)}`);
  console.log(`registrations answered: ${JSON.stringify(await flooding)}`);
} finally {
  await server.stop();
  await cluster.stop();
  await removeTree(work);
}
