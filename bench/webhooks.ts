// Webhooks under load (issue 53): one Trellis on PostgreSQL, 100 webhooks (10 users with 10 each, every one watching
// all its user may read) to a local receiver that answers 204, and 8 writers PATCHing the users' documents. Three
// phases of the same length: no webhooks (the writes' baseline), the 100 webhooks, and the same with one more
// webhook whose receiver accepts connections and never answers. Reports the PATCH throughput of each phase and, for
// the deliveries, the time from the PATCH's response (after its commit) to the receipt, p50 and p99.
//
//   node --import tsx bench/webhooks.ts [--seconds 15] [--writers 8] [--rate N] [--slots 16]
//
// Without --rate the writers go as fast as they can; with it they send N PATCHes per second in all.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startCluster } from './lib/cluster.js';
import { startStandaloneTrellis } from './lib/servers.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    writers: { type: 'string', default: '8' },
    rate: { type: 'string' },
    slots: { type: 'string', default: '16' },
  },
});
const SECONDS = Number(args.seconds);
const RATE = args.rate === undefined ? null : Number(args.rate);
const WRITERS = Number(args.writers);
const USERS = 10;
const HOOKS_PER_USER = 10;
const DOCS_PER_USER = 10;
const say = (msg: string) => process.stderr.write(`[webhooks] ${msg}\n`);

/** When each write's response came, by `<doc>/<n>`; the receiver's latencies from it. */
const answered = new Map<string, number>();
const latencies: number[] = [];
let receiving = false;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const at = performance.now();
    res.writeHead(204).end();
    if (!receiving) return;
    const data = JSON.parse(body).data;
    const sent = answered.get(`${data.id}/${data.element?.data?.n}`);
    if (sent !== undefined) latencies.push(at - sent);
  });
});
// Accepts and never answers: the webhook's every attempt runs into the timeout.
const silent = createServer(() => {});

async function call(base: string, method: string, path: string, token: string | null, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return { res, json: text ? JSON.parse(text) : null };
}

const pct = (list: number[], q: number) =>
  list.length === 0
    ? Number.NaN
    : [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(q * list.length))]!;

async function main() {
  const work = await mkdtemp(join(tmpdir(), 'trellis-bench-webhooks-'));
  const cluster = await startCluster(() => {});
  const config = join(work, 'settings.yaml');
  await writeFile(
    config,
    `webhooks:\n  allowedHosts: [127.0.0.1]\n  timeoutInSeconds: 5\n  maxConcurrentDeliveries: ${Number(args.slots)}\n`,
  );
  const server = await startStandaloneTrellis(work, cluster.url, config);
  const [port, silentPort] = [await listen(receiver), await listen(silent)];
  try {
    const base = server.baseUrl;
    const users: { token: string; docs: string[] }[] = [];
    for (let u = 0; u < USERS; u++) {
      const identifier = `writer${u}@hooks.bench`;
      const password = 'bench webhooks password';
      await call(base, 'POST', '/register', null, { type: 'User', uniqueUserIdentifier: identifier, password });
      const { json } = await call(base, 'POST', '/token', null, {
        type: 'Token',
        uniqueUserIdentifier: identifier,
        password,
      });
      const docs: string[] = [];
      for (let d = 0; d < DOCS_PER_USER; d++) {
        const { res } = await call(base, 'POST', '/', json.token, { type: 'Doc', data: { n: 0 } });
        docs.push(res.headers.get('location')!.slice(1));
      }
      users.push({ token: json.token, docs });
    }
    let n = 0;
    /** WRITERS loops of PATCHes for SECONDS; the writes per second. */
    const phase = async () => {
      const end = performance.now() + SECONDS * 1000;
      let writes = 0;
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, w) => {
          const start = performance.now();
          for (let i = w, k = 0; performance.now() < end; i += WRITERS, k++) {
            // Paced: writer w sends its k-th write at its share of the rate.
            if (RATE !== null) {
              const due = start + (k * WRITERS * 1000) / RATE;
              if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
            }
            const user = users[i % USERS]!;
            const doc = user.docs[Math.floor(i / USERS) % DOCS_PER_USER]!;
            const value = ++n;
            await call(base, 'PATCH', `/${doc}`, user.token, { n: value });
            answered.set(`${doc}/${value}`, performance.now());
            writes++;
          }
        }),
      );
      return writes / SECONDS;
    };
    const settle = () => new Promise((r) => setTimeout(r, 3000));
    say('phase 1: no webhooks');
    const without = await phase();
    for (const user of users)
      for (let k = 0; k < HOOKS_PER_USER; k++)
        await call(base, 'POST', '/webhooks', user.token, {
          url: `http://127.0.0.1:${port}/hook/${k}`,
          events: ['changed'],
        });
    await settle();
    say('phase 2: 100 webhooks');
    receiving = true;
    const withHooks = await phase();
    await settle();
    const healthy = [...latencies];
    latencies.length = 0;
    await call(base, 'POST', '/webhooks', users[0]!.token, {
      url: `http://127.0.0.1:${silentPort}/never`,
      events: ['changed'],
    });
    say('phase 3: 100 webhooks and one that never answers');
    const withSilent = await phase();
    await settle();
    const beside = [...latencies];
    const expected = (writes: number) => Math.round(writes * SECONDS * HOOKS_PER_USER);
    console.log(`writes, no webhooks\t${without.toFixed(0)} PATCH/s`);
    console.log(`writes, 100 webhooks\t${withHooks.toFixed(0)} PATCH/s (${(withHooks / without).toFixed(2)} x)`);
    console.log(
      `commit to receipt, 100 webhooks\tp50 ${pct(healthy, 0.5).toFixed(1)} ms, p99 ${pct(healthy, 0.99).toFixed(1)} ms (${healthy.length} of ${expected(withHooks)} deliveries)`,
    );
    console.log(
      `writes, and one silent receiver\t${withSilent.toFixed(0)} PATCH/s (${(withSilent / without).toFixed(2)} x)`,
    );
    console.log(
      `commit to receipt beside it\tp50 ${pct(beside, 0.5).toFixed(1)} ms, p99 ${pct(beside, 0.99).toFixed(1)} ms (${beside.length} of ${expected(withSilent)} deliveries)`,
    );
  } finally {
    receiver.closeAllConnections();
    silent.closeAllConnections();
    receiver.close();
    silent.close();
    await server.stop();
    await cluster.stop();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
