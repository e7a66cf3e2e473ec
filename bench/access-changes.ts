// What the access changes of a large subtree cost over HTTP (issue 51, "writes stay honest"): a folder tree of
// 10,000 nodes (a root, 100 folders of 99 documents) owned by a user, then, in rounds, moving it to another owner
// (POST the new OWNS, DELETE the old one), granting a group READ on it and revoking that, and adding a user to the
// group and removing them. Every change rewrites the access index and search keys of what it reaches, in the
// request's transaction; this measures how long each request takes, the median of the rounds.
//
//   node --import tsx bench/access-changes.ts [--backend postgres|pglite] [--rounds N]
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startCluster } from './lib/cluster.js';
import { startStandaloneTrellis } from './lib/servers.js';

const { values: args } = parseArgs({
  options: { backend: { type: 'string', default: 'postgres' }, rounds: { type: 'string', default: '5' } },
});
const FOLDERS = 100;
const PER_FOLDER = 99;

async function main() {
  const work = await mkdtemp(join(tmpdir(), 'trellis-access-changes-'));
  const cluster = args.backend === 'postgres' ? await startCluster(() => {}) : null;
  // Without the statement bound (decision 032), so that what a change costs is measured rather than cut at 5 s.
  const config = join(work, 'unbounded.yaml');
  await writeFile(config, 'database:\n  statementTimeoutInSeconds: 0\n');
  const server = await startStandaloneTrellis(work, cluster?.url ?? null, config);
  try {
    const api = client(server.baseUrl);
    const [owner, other, member] = await Promise.all(
      ['owner', 'other', 'member'].map((n) => api.user(`${n}@changes.dev`)),
    );
    const group = await api.create(owner!.token, '/', { type: 'Group', data: { name: 'Readers' } });
    const root = await api.create(owner!.token, '/', { type: 'Folder', data: { name: 'Root' } });
    const started = Date.now();
    const folders = await inBatches(FOLDERS, (i) =>
      api.create(owner!.token, `/${root}`, { type: 'Folder', data: { name: `F${i}` } }),
    );
    for (const folder of folders)
      await inBatches(PER_FOLDER, (i) =>
        api.create(owner!.token, `/${folder}`, { type: 'Document', data: { name: `D${i}` } }),
      );
    console.error(`tree of ${1 + FOLDERS * (1 + PER_FOLDER)} nodes made in ${Date.now() - started} ms`);
    const times: Record<string, number[]> = {};
    const timed = async <T>(what: string, run: () => Promise<T>) => {
      const t0 = performance.now();
      const result = await run();
      times[what] = [...(times[what] ?? []), performance.now() - t0];
      return result;
    };
    let holder = owner!;
    let ownsId = await api.relationId(owner!.token, owner!.id, root);
    for (let round = 0; round < Number(args.rounds); round++) {
      const next = holder === owner ? other! : owner!;
      const added = await timed('move: POST the new OWNS', () =>
        api.create(holder.token, '/', { type: 'OWNS', start: next.id, end: root }),
      );
      await timed('move: DELETE the old OWNS', () => api.remove(next.token, ownsId));
      [holder, ownsId] = [next, added];
      const grant = await timed('grant a group READ', () =>
        api.create(holder.token, '/', { type: 'HAS_READ_ACCESS', start: group, end: root }),
      );
      await timed('revoke it', () => api.remove(holder.token, grant));
      const joined = await timed('add a user to the group', () =>
        api.create(owner!.token, '/', { type: 'IS_IN_GROUP', start: member!.id, end: group }),
      );
      await timed('remove them', () => api.remove(owner!.token, joined));
    }
    for (const [what, list] of Object.entries(times)) {
      const sorted = [...list].sort((a, b) => a - b);
      console.log(
        `${args.backend}\t${what}\tmedian ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms\t(${sorted.map((t) => t.toFixed(0)).join(', ')})`,
      );
    }
  } finally {
    await server.stop();
    await cluster?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

async function inBatches<T>(n: number, make: (i: number) => Promise<T>, width = 8): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += width)
    out.push(...(await Promise.all(Array.from({ length: Math.min(width, n - i) }, (_, k) => make(i + k)))));
  return out;
}

function client(base: string) {
  const call = async (method: string, path: string, token: string | null, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  return {
    async user(identifier: string) {
      const password = 'access changes password';
      const reg = await call('POST', '/register', null, { type: 'User', uniqueUserIdentifier: identifier, password });
      const tok = await call('POST', '/token', null, { type: 'Token', uniqueUserIdentifier: identifier, password });
      return { id: reg.headers.get('location')!.slice(1), token: ((await tok.json()) as { token: string }).token };
    },
    create: async (token: string, path: string, body: unknown) =>
      (await call('POST', path, token, body)).headers.get('location')!.slice(1),
    remove: async (token: string, id: string) => {
      await call('DELETE', `/${id}`, token);
    },
    /** The id of the relation of that type from start to end, through the end's parents. */
    async relationId(token: string, start: string, end: string) {
      const res = await call('GET', `/${end}/parents`, token);
      const page = (await res.json()) as { relations: { id: string; type: string; start: string }[] };
      return page.relations.find((r) => r.type === 'OWNS' && r.start === start)!.id;
    },
  };
}

await main();
