// The change feed under load (issue 43): two Trellis instances on one PostgreSQL server with many subscribers in all
// (a third watching a few elements by id, a third a folder's children, a third everything their user may read),
// while writers PATCH the users' documents at a steady rate through both instances. Reports the delivery latency
// (from the writer's response, which comes after the commit, to the subscriber's receipt; and from the request's
// start), the events delivered per second, the instances' RSS per idle subscriber, and the PATCH latency.
//
//   node --import tsx bench/events.ts [--subscribers 1000] [--instances 2] [--users 20] [--rate 50] [--seconds 20]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, startCluster } from './lib/cluster.js';
import { ROOT } from './lib/context.js';
import { removeTree, rssOf, type ServerProcess, startServer } from './lib/procs.js';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000' },
    instances: { type: 'string', default: '2' },
    users: { type: 'string', default: '20' },
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '20' },
  },
});
const SUBSCRIBERS = Number(args.subscribers);
const INSTANCES = Number(args.instances);
const USERS = Number(args.users);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const DOCS_PER_USER = 20;
const say = (msg: string) => process.stderr.write(`[events] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

if (!existsSync(join(ROOT, 'dist/cli/main.js'))) {
  say('building');
  spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
  });
}

const work = await mkdtemp(join(tmpdir(), 'trellis-bench-events-'));
const cluster = await startCluster(say);
const servers: ServerProcess[] = [];
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

async function call(base: string, method: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return { res, json: text ? JSON.parse(text) : null };
}

interface Sub {
  ready: boolean;
  events: number;
}
const latencies: number[] = [];
const fromStart: number[] = [];
const answered = new Map<number, number>();
const started = new Map<number, number>();
let measuring = false;
let delivered = 0;

/** One SSE stream over a raw request, parsed line by line: each `changed` event's data carries the writer's seq. */
function subscribe(base: string, path: string, token: string, sub: Sub): void {
  const req = http.request(`${base}${path}`, { headers: { authorization: `Bearer ${token}` }, agent: false });
  req.on('response', (res) => {
    if (res.statusCode !== 200) throw new Error(`subscribe ${path}: ${res.statusCode}`);
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
        if (message.includes('event: ready')) sub.ready = true;
        if (!message.includes('event: changed')) continue;
        const now = performance.now();
        sub.events++;
        if (!measuring) continue;
        delivered++;
        const seq = /"seq": (\d+)/.exec(message);
        if (!seq) continue;
        const n = Number(seq[1]);
        const begin = started.get(n);
        const answer = answered.get(n);
        if (begin !== undefined) fromStart.push(now - begin);
        if (answer !== undefined) latencies.push(now - answer);
      }
    });
  });
  req.end();
}

const pct = (list: number[], p: number) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

try {
  const settings = {
    events: { maxSubscribers: SUBSCRIBERS, maxSubscribersPerUser: SUBSCRIBERS },
    server: { maxConnections: SUBSCRIBERS + 500 },
    register: { throttle: { enabled: false } },
    metrics: { enabled: false },
  };
  for (let i = 0; i < INSTANCES; i++) {
    const dir = join(work, `instance-${i}`);
    await writeFile(`${dir}.json`, JSON.stringify(settings));
    const port = await freePort();
    servers.push(
      await startServer({
        name: `trellis-${i}`,
        command: process.execPath,
        args: [join(ROOT, 'bin/trellis.js'), 'serve'],
        env: {
          ...process.env,
          DATABASE_URL: cluster.url,
          DATA_DIR: dir,
          PORT: String(port),
          TRELLIS_CONFIG: `${dir}.json`,
          LOG_LEVEL: 'warn',
        },
        cwd: ROOT,
        port,
        readyPath: '/health/ready',
        logFile: `${dir}.log`,
      }),
    );
  }
  const bases = servers.map((s) => s.baseUrl);
  say(`${INSTANCES} instances on ${cluster.url}; ${USERS} users with ${DOCS_PER_USER} documents each`);
  const users: Array<{ token: string; folder: string; docs: string[] }> = [];
  for (let u = 0; u < USERS; u++) {
    const identifier = `user${u}@bench.dev`;
    const password = 'correct horse battery staple';
    await call(bases[0]!, 'POST', '/register', { type: 'User', uniqueUserIdentifier: identifier, password });
    const { json } = await call(bases[0]!, 'POST', '/token', {
      type: 'Token',
      uniqueUserIdentifier: identifier,
      password,
    });
    const token = json.token as string;
    const folder = (await call(bases[0]!, 'POST', '/', { type: 'Folder' }, token)).res.headers.get('location')!;
    const docs: string[] = [];
    for (let d = 0; d < DOCS_PER_USER; d++)
      docs.push(
        (await call(bases[0]!, 'POST', folder, { type: 'Doc', data: { d } }, token)).res.headers.get('location')!,
      );
    users.push({ token, folder: folder.slice(1), docs: docs.map((p) => p.slice(1)) });
  }
  const rssBefore = servers.map((s) => rssOf(s.pid) ?? 0);
  const subs: Sub[] = [];
  for (let i = 0; i < SUBSCRIBERS; i++) {
    const user = users[i % USERS]!;
    const kind = i % 3;
    const path =
      kind === 0
        ? `/events?${user.docs
            .slice(0, 5)
            .map((d) => `id=${d}`)
            .join('&')}`
        : kind === 1
          ? `/events?parent=${user.folder}`
          : '/events';
    const sub: Sub = { ready: false, events: 0 };
    subs.push(sub);
    subscribe(bases[i % INSTANCES]!, path, user.token, sub);
    if (i % 50 === 49) await sleep(20);
  }
  while (subs.some((s) => !s.ready)) await sleep(50);
  await sleep(2000);
  const rssIdle = servers.map((s) => rssOf(s.pid) ?? 0);
  const perSubscriber = rssIdle.reduce((a, b) => a + b, 0) - rssBefore.reduce((a, b) => a + b, 0);
  say(
    `${SUBSCRIBERS} subscribers ready; RSS ${rssBefore.map((r) => (r / 2 ** 20).toFixed(0))} -> ${rssIdle.map((r) => (r / 2 ** 20).toFixed(0))} MiB`,
  );

  // Writers: RATE PATCHes per second in all, alternating instances, each carrying its sequence number.
  measuring = true;
  const writeLatencies: number[] = [];
  const begin = performance.now();
  let seq = 0;
  const inflight = new Set<Promise<void>>();
  while (performance.now() - begin < SECONDS * 1000) {
    const n = seq++;
    const user = users[n % USERS]!;
    // Mostly the five watched documents, so that every kind of subscription has something to receive.
    const doc = user.docs[n % 7 === 0 ? 5 + (n % (DOCS_PER_USER - 5)) : n % 5]!;
    const base = bases[n % INSTANCES]!;
    started.set(n, performance.now());
    const p = call(base, 'PATCH', `/${doc}`, { seq: n }, user.token).then(() => {
      const at = performance.now();
      answered.set(n, at);
      writeLatencies.push(at - started.get(n)!);
    });
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
    const next = begin + (seq * 1000) / RATE;
    await sleep(Math.max(0, next - performance.now()));
  }
  await Promise.all(inflight);
  await sleep(1000);
  measuring = false;
  const elapsed = (performance.now() - begin) / 1000;
  const result = {
    subscribers: SUBSCRIBERS,
    instances: INSTANCES,
    writes: seq,
    writesPerSecond: +(seq / elapsed).toFixed(1),
    delivered,
    deliveredPerSecond: +(delivered / elapsed).toFixed(0),
    latencyFromResponseMs: { p50: +pct(latencies, 50).toFixed(1), p99: +pct(latencies, 99).toFixed(1) },
    latencyFromRequestMs: { p50: +pct(fromStart, 50).toFixed(1), p99: +pct(fromStart, 99).toFixed(1) },
    patchMs: { p50: +pct(writeLatencies, 50).toFixed(1), p99: +pct(writeLatencies, 99).toFixed(1) },
    rssPerIdleSubscriberKiB: +(perSubscriber / SUBSCRIBERS / 1024).toFixed(1),
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  agent.destroy();
  for (const s of servers) await s.stop();
  await cluster.stop();
  await removeTree(work);
}
process.exit(0);
