// The benchmark data set, written straight into the schema with SQL (set-based inserts, thousands of rows per
// statement): going through the HTTP API would take longer than the benchmark itself.
//
// Shape (issue 8): users in groups nested 3 deep (user -IS_IN_GROUP-> g1 -IS_IN_GROUP-> g2 -IS_IN_GROUP-> g3),
// OWNS trees 5 levels deep below a group (mostly a g2, some a g3, some owned by a user directly), a CREATED
// relation from a user for every node (as the API writes them), and HAS_TAG relations from leaves to Tag nodes.
// `nodes` counts nodes; relations are elements too and come on top (about 2.3 relations per node).
import { randomUUID } from 'node:crypto';
import { hashPassword } from '../../src/domain/accounts/passwords.js';
import { generateToken, hashToken } from '../../src/domain/accounts/tokens.js';
import type { Db, Queryable } from '../../src/storage/db.js';
import { deferAccessIndex, rebuildAccessIndex } from '../../src/storage/queries/access.js';
import { isoTime } from '../../src/values.js';

export interface DatasetSpec {
  /** Number of nodes (users, tokens, groups, tags and tree nodes together). */
  nodes: number;
  users: number;
  /** Seed of the deterministic shape (ids and tokens are random every run). */
  seed?: number;
  /** Add the structures whose cost grows with the graph (`Probes`), for `--large`. */
  probes?: boolean;
}

/** Structures whose cost grows with the graph: a folder with many children, a user with many grants. */
interface Probes {
  /** A folder owned directly by a user, with PROBE_CHILDREN children. */
  anchor: string;
  anchorToken: string;
  /** A user with PROBE_GRANTS HAS_READ_ACCESS relations to tree nodes, and the nodes. */
  granteeToken: string;
  granted: string[];
}
export const PROBE_CHILDREN = 10_000;
export const PROBE_GRANTS = 5_000;

/** An element and the token of a user who reaches it through 2 IS_IN_GROUP hops and 4 OWNS hops. */
interface Target {
  id: string;
  token: string;
  /** The target's grandparent (a level-2 folder): 3 OWNS hops above the target's children. */
  grandparent: string;
}

export interface Dataset {
  spec: DatasetSpec;
  password: string;
  users: { id: string; identifier: string; token: string }[];
  probes: Probes | null;
  /** Level-4 tree nodes: user -IS_IN_GROUP-> g1 -IS_IN_GROUP-> g2 -OWNS-> a -OWNS-> b -OWNS-> c -OWNS-> target. Each has 30 children. */
  targets: Target[];
  counts: {
    nodes: number;
    relations: number;
    users: number;
    groups: number;
    trees: number;
    tags: number;
    hasTag: number;
  };
  seconds: number;
}

// Tree shape below the owner: level 1 has 1 node, then fan-outs 2, 2, 2, 30 (levels 2..5): 255 nodes per tree.
const FANOUT = [2, 2, 2, 30];
const PER_TREE = 1 + 2 + 4 + 8 + 240;
const CHILDREN_OF_TARGET = 30;
export const TARGET_CHILDREN = CHILDREN_OF_TARGET;

const G3 = 10; // top-level groups; each holds 2 g2, each g2 holds 2 g1
const BATCH = 5000;

interface Row {
  id: string;
  type: string;
  start_id: string | null;
  end_id: string | null;
  data: Record<string, unknown>;
}

/** mulberry32: a tiny seeded PRNG so the shape (who owns what) is the same in every run. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS =
  'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega'.split(
    ' ',
  );
/** 100 words for `title`, two per node: each word is in about 2% of the tree nodes (the search scenario's selectivity). */
export const TITLE_WORDS = WORDS.flatMap((a, i) => WORDS.slice(i + 1, i + 6).map((b) => `${a}${b}`)).slice(0, 100);

export async function generateDataset(db: Db, spec: DatasetSpec, log: (msg: string) => void): Promise<Dataset> {
  const started = Date.now();
  const random = rng(spec.seed ?? 8);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const sentence = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(' ');
  const now = new Date();
  const expires = new Date(now.getTime() + 7 * 86400_000);

  const nodes: Row[] = [];
  const relations: Row[] = [];
  const node = (type: string, data: Record<string, unknown>): string => {
    const id = randomUUID();
    nodes.push({ id, type, start_id: null, end_id: null, data });
    return id;
  };
  const relation = (type: string, start: string, end: string) => {
    relations.push({ id: randomUUID(), type, start_id: start, end_id: end, data: {} });
  };

  // Groups, nested 3 deep.
  const g3 = Array.from({ length: G3 }, (_, i) => node('Group', { name: `Division ${i}` }));
  const g2 = g3.flatMap((parent, i) =>
    [0, 1].map((j) => {
      const id = node('Group', { name: `Department ${i}.${j}` });
      relation('IS_IN_GROUP', id, parent);
      return id;
    }),
  );
  const g1 = g2.flatMap((parent, i) =>
    [0, 1].map((j) => {
      const id = node('Group', { name: `Team ${i}.${j}` });
      relation('IS_IN_GROUP', id, parent);
      return id;
    }),
  );
  const g1ParentIndex = (k: number) => Math.floor(k / 2); // g1[k] is in g2[k >> 1]
  const g2ParentIndex = (k: number) => Math.floor(k / 2); // g2[k] is in g3[k >> 1]

  // Users, each in one g1 (round robin), each with one active token (as POST /token writes it).
  const password = 'bench-password';
  const passwordHash = await hashPassword(password);
  const users: Dataset['users'] = [];
  const userRows: { id: string; identifier: string; password_hash: string }[] = [];
  const tokenRows: { id: string; hash: string; user_id: string; state: string; issued: string; expires: string }[] = [];
  const membersOfG1: string[][] = g1.map(() => []);
  const addUser = (i: number, group: number | null) => {
    const identifier = `user${i}@bench.dev`;
    const id = node('User', { email: identifier, name: `User ${i}` });
    userRows.push({ id, identifier, password_hash: passwordHash });
    if (group !== null) {
      relation('IS_IN_GROUP', id, g1[group]!);
      membersOfG1[group]!.push(id);
    }
    const token = generateToken();
    const tokenId = node('Token', { state: 'ACTIVE', expirationDate: isoTime(expires) });
    relation('OWNS', id, tokenId);
    tokenRows.push({
      id: tokenId,
      hash: hashToken(token),
      user_id: id,
      state: 'ACTIVE',
      issued: now.toISOString(),
      expires: expires.toISOString(),
    });
    return { id, identifier, token };
  };
  for (let i = 0; i < spec.users; i++) users.push(addUser(i, i % g1.length));
  const tokenOf = new Map(users.map((u) => [u.id, u.token]));
  // Users who reach a group through IS_IN_GROUP hops (members of its g1 descendants).
  const membersOfG2 = g2.map((_, k) => g1.flatMap((__, j) => (g1ParentIndex(j) === k ? membersOfG1[j]! : [])));
  const membersOfG3 = g3.map((_, k) => g2.flatMap((__, j) => (g2ParentIndex(j) === k ? membersOfG2[j]! : [])));

  // Tags, owned by the top-level groups.
  const tagCount = Math.max(50, Math.floor(spec.nodes / 100));
  const tags: string[] = [];
  for (let i = 0; i < tagCount; i++) {
    const owner = i % G3;
    const id = node('Tag', { name: `tag-${i}`, color: pick(['red', 'green', 'blue', 'amber']) });
    relation('OWNS', g3[owner]!, id);
    relation('CREATED', pick(membersOfG3[owner]!), id);
    tags.push(id);
  }

  // OWNS trees: 18 of 20 owned by a g2 (the targets live there), 1 by a g3, 1 by a user directly.
  const trees = Math.max(1, Math.floor((spec.nodes - nodes.length) / PER_TREE));
  const targets: Target[] = [];
  const parentOf = new Map<string, string>();
  let hasTag = 0;
  let serial = 0;
  for (let t = 0; t < trees; t++) {
    let owner: string;
    let members: string[];
    let viaG2 = false;
    if (t % 20 === 18) {
      const k = Math.floor(random() * G3);
      owner = g3[k]!;
      members = membersOfG3[k]!;
    } else if (t % 20 === 19) {
      owner = pick(users).id;
      members = [owner];
    } else {
      const k = Math.floor(random() * g2.length);
      owner = g2[k]!;
      members = membersOfG2[k]!;
      viaG2 = true;
    }
    const creator = pick(members);
    let level = [owner];
    for (let depth = 1; depth <= 5; depth++) {
      const fanout = depth === 1 ? 1 : FANOUT[depth - 2]!;
      const next: string[] = [];
      for (const parent of level) {
        for (let c = 0; c < fanout; c++) {
          serial++;
          const leaf = depth === 5;
          const id = node(leaf ? 'Document' : 'Folder', {
            name: `${leaf ? 'Document' : 'Folder'} ${serial}`,
            level: depth,
            number: serial,
            description: sentence(leaf ? 12 : 6),
            title: `${pick(TITLE_WORDS)} ${pick(TITLE_WORDS)}`,
            ...(leaf ? { status: pick(['draft', 'review', 'published']), pages: 1 + Math.floor(random() * 200) } : {}),
          });
          relation('OWNS', parent, id);
          parentOf.set(id, parent);
          relation('CREATED', creator, id);
          if (leaf && random() < 0.3) {
            relation('HAS_TAG', id, pick(tags));
            hasTag++;
          }
          next.push(id);
          if (depth === 4 && viaG2) {
            // A user of a g1 inside this g2: exactly 2 IS_IN_GROUP hops, then 4 OWNS hops down to `id`.
            targets.push({ id, token: tokenOf.get(pick(members))!, grandparent: parentOf.get(parentOf.get(id)!)! });
          }
        }
      }
      level = next;
    }
  }
  let probes: Probes | null = null;
  if (spec.probes) {
    // The anchor's owner and the grantee are users of their own, in no group, so that no other scenario's user
    // gets their cost.
    const owner = addUser(spec.users, null);
    const grantee = addUser(spec.users + 1, null);
    const anchor = node('Folder', { name: 'Big folder', level: 1, description: sentence(6) });
    relation('OWNS', owner.id, anchor);
    relation('CREATED', owner.id, anchor);
    for (let c = 0; c < PROBE_CHILDREN; c++) {
      serial++;
      const id = node('Document', { name: `Document ${serial}`, number: serial, description: sentence(12) });
      relation('OWNS', anchor, id);
      relation('CREATED', owner.id, id);
    }
    const treeNodes = [...parentOf.keys()];
    const granted = new Set<string>();
    while (granted.size < Math.min(PROBE_GRANTS, treeNodes.length)) granted.add(pick(treeNodes));
    for (const id of granted) relation('HAS_READ_ACCESS', grantee.id, id);
    probes = { anchor, anchorToken: owner.token, granteeToken: grantee.token, granted: [...granted] };
  }

  // Targets in a shuffled order so consecutive requests hit different trees and users.
  for (let i = targets.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [targets[i], targets[j]] = [targets[j]!, targets[i]!];
  }
  log(
    `data set: ${nodes.length} nodes, ${relations.length} relations built in memory (${Date.now() - started} ms), inserting...`,
  );

  await db.transaction(async (tx) => {
    // The throw-away cluster runs with synchronous_commit = off. VACUUM cannot mark a page all-visible while the
    // commit of its rows is not yet flushed to the WAL (it may not set their hint bits), so right after an
    // asynchronous commit it left the visibility map empty: relallvisible 0 of 1,411 pages of `elements`, and every
    // index-only scan of the access checks went to the heap (GET /<id>: 34 buffers, 14 heap fetches; 24 and none
    // with the map). This commit waits for its flush, as every commit does on a server with the defaults.
    await tx.query('SET LOCAL synchronous_commit = on');
    await deferAccessIndex(tx);
    const all = [...nodes, ...relations]; // nodes first: relations reference them
    for (let i = 0; i < all.length; i += BATCH) {
      await insertElements(tx, all.slice(i, i + BATCH), now);
      if ((i / BATCH) % 10 === 9) log(`  ${i + BATCH} / ${all.length} elements`);
    }
    for (let i = 0; i < userRows.length; i += BATCH)
      await tx.query(
        `INSERT INTO users (id, identifier, password_hash)
         SELECT id, identifier, password_hash FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, identifier text, password_hash text)`,
        [JSON.stringify(userRows.slice(i, i + BATCH))],
      );
    for (let i = 0; i < tokenRows.length; i += BATCH)
      await tx.query(
        `INSERT INTO tokens (id, hash, user_id, state, issued, expires)
         SELECT id, hash, user_id, state, issued, expires
         FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, hash text, user_id uuid, state text, issued timestamptz, expires timestamptz)`,
        [JSON.stringify(tokenRows.slice(i, i + BATCH))],
      );
    await rebuildAccessIndex(tx);
  });
  // Fresh statistics and visibility map, as autovacuum would leave them on a long-running server (PGlite has no
  // autovacuum at all). The map matters: the access checks are index-only scans, which read the heap for every
  // entry on a page the map does not mark all-visible. Right after the load, VACUUM sometimes left element_owners
  // out of the map (three VACUUMs in a row, with no other session holding a snapshot; one a second later filled
  // it), so the tables are vacuumed until their maps are complete (or 10 tries) and the result is logged.
  for (const table of ['users', 'tokens', 'group_memberships']) await db.query(`VACUUM ANALYZE ${table}`);
  let pending = ['elements', 'element_owners'];
  for (let attempt = 1; attempt <= 10 && pending.length > 0; attempt++) {
    if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const table of pending) await db.query(`VACUUM ${attempt === 1 ? 'ANALYZE ' : ''}${table}`);
    const { rows } = await db.query<{ relname: string; relpages: number; relallvisible: number }>(
      `SELECT relname, relpages, relallvisible FROM pg_class WHERE relname IN ('elements', 'element_owners') ORDER BY relname`,
    );
    pending = rows.filter((r) => r.relallvisible < r.relpages).map((r) => r.relname);
    if (pending.length === 0 || attempt === 10)
      log(
        `all-visible pages after ${attempt} VACUUM(s): ${rows.map((r) => `${r.relname} ${r.relallvisible} of ${r.relpages}`).join(', ')}`,
      );
  }
  // The load's dirty pages written out now rather than by the checkpointer while the first scenario is measured.
  await db.query('CHECKPOINT');

  return {
    spec,
    password,
    users,
    probes,
    targets,
    counts: {
      nodes: nodes.length,
      relations: relations.length,
      users: spec.users,
      groups: g1.length + g2.length + g3.length,
      trees,
      tags: tags.length,
      hasTag,
    },
    seconds: (Date.now() - started) / 1000,
  };
}

async function insertElements(q: Queryable, rows: Row[], at: Date) {
  await q.query(
    `INSERT INTO elements (id, type, start_id, end_id, data, created, updated)
     SELECT id, type, start_id, end_id, data, $2, $2
     FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, type text, start_id uuid, end_id uuid, data jsonb)`,
    [JSON.stringify(rows), at],
  );
}
