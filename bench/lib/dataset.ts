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

/**
 * The callers of the list rows (issue 51), eight of each kind (a user may run only four searches at once): each of
 * `few` owns one tree directly and is in no group (its tree, its token and their relations: about 770 elements);
 * each of `many` is in a group that is a member of half the g2 groups, whose trees, tags and relations are about
 * half the graph.
 */
interface ListCallers {
  fewTokens: string[];
  manyTokens: string[];
}
const LIST_CALLERS = 8;

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
  /** The two callers of the list rows (lists.ts); absent in a data set kept by an older run. */
  lists?: ListCallers;
  /** The span the elements' `created` times are drawn from (uniformly, independently of their order). */
  createdSpan?: { first: string; last: string };
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
  /** Seconds after the start of the data set's span (createdBase): a list by `created` has an order to follow. */
  at: number;
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
/**
 * A third title word on every tenth tree node (by serial number, not drawn, so the seeded shape stays the same): the
 * common word of --large's scenarios, in about 10% of the nodes.
 */
export const COMMON_WORD = 'common';

type UserRow = { id: string; identifier: string; password_hash: string };
type TokenRow = { id: string; hash: string; user_id: string; state: string; issued: string; expires: string };

/**
 * The data set's shape, built in memory: the elements in insertion order, the users' and tokens' rows. The seeded
 * random numbers are drawn in one fixed order (groups, users, tags, trees, probes, the targets' shuffle), so that the
 * shape is the same in every run.
 */
class Shape {
  readonly random: () => number;
  readonly now = new Date();
  readonly expires = new Date(this.now.getTime() + 7 * 86400_000);
  readonly nodes: Row[] = [];
  readonly relations: Row[] = [];
  readonly users: Dataset['users'] = [];
  readonly userRows: UserRow[] = [];
  readonly tokenRows: TokenRow[] = [];
  readonly targets: Target[] = [];
  readonly parentOf = new Map<string, string>();
  readonly tags: string[] = [];
  readonly tokenByUser = new Map<string, string>();
  g3: string[] = [];
  g2: string[] = [];
  g1: string[] = [];
  membersOfG1: string[][] = [];
  membersOfG2: string[][] = [];
  membersOfG3: string[][] = [];
  hasTag = 0;
  serial = 0;
  /** Draws the `created` times, apart from `random` so that the shape stays what it was before they were drawn. */
  readonly times: () => number;
  trees = 0;

  constructor(
    readonly spec: DatasetSpec,
    readonly passwordHash: string,
  ) {
    this.random = rng(spec.seed ?? 8);
    this.times = rng((spec.seed ?? 8) + 1);
  }

  /** A `created` time in the span: one second per node the data set has, so every time is about as likely. */
  createdAt(): number {
    return Math.floor(this.times() * this.spec.nodes);
  }

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)]!;
  }

  sentence(n: number): string {
    return Array.from({ length: n }, () => this.pick(WORDS)).join(' ');
  }

  node(type: string, data: Record<string, unknown>): string {
    const id = randomUUID();
    this.nodes.push({ id, type, start_id: null, end_id: null, data, at: this.createdAt() });
    return id;
  }

  relation(type: string, start: string, end: string): void {
    this.relations.push({ id: randomUUID(), type, start_id: start, end_id: end, data: {}, at: this.createdAt() });
  }

  /** Groups, nested 3 deep. */
  groups(): void {
    this.g3 = Array.from({ length: G3 }, (_, i) => this.node('Group', { name: `Division ${i}` }));
    this.g2 = this.g3.flatMap((parent, i) =>
      [0, 1].map((j) => {
        const id = this.node('Group', { name: `Department ${i}.${j}` });
        this.relation('IS_IN_GROUP', id, parent);
        return id;
      }),
    );
    this.g1 = this.g2.flatMap((parent, i) =>
      [0, 1].map((j) => {
        const id = this.node('Group', { name: `Team ${i}.${j}` });
        this.relation('IS_IN_GROUP', id, parent);
        return id;
      }),
    );
    this.membersOfG1 = this.g1.map(() => []);
  }

  /** A user with one active token (as POST /token writes it), in the g1 `group` unless null. */
  addUser(i: number, group: number | null): Dataset['users'][number] {
    const identifier = `user${i}@bench.dev`;
    const id = this.node('User', { email: identifier, name: `User ${i}` });
    this.userRows.push({ id, identifier, password_hash: this.passwordHash });
    if (group !== null) {
      this.relation('IS_IN_GROUP', id, this.g1[group]!);
      this.membersOfG1[group]!.push(id);
    }
    const token = generateToken();
    const tokenId = this.node('Token', { state: 'ACTIVE', expirationDate: isoTime(this.expires) });
    this.relation('OWNS', id, tokenId);
    this.tokenRows.push({
      id: tokenId,
      hash: hashToken(token),
      user_id: id,
      state: 'ACTIVE',
      issued: this.now.toISOString(),
      expires: this.expires.toISOString(),
    });
    return { id, identifier, token };
  }

  /** Users, each in one g1 (round robin); then who reaches each g2 and g3 through IS_IN_GROUP hops. */
  members(): void {
    const { g1, g2, g3 } = this;
    for (let i = 0; i < this.spec.users; i++) this.users.push(this.addUser(i, i % g1.length));
    for (const u of this.users) this.tokenByUser.set(u.id, u.token);
    const g1ParentIndex = (k: number) => Math.floor(k / 2); // g1[k] is in g2[k >> 1]
    const g2ParentIndex = (k: number) => Math.floor(k / 2); // g2[k] is in g3[k >> 1]
    this.membersOfG2 = g2.map((_, k) => g1.flatMap((__, j) => (g1ParentIndex(j) === k ? this.membersOfG1[j]! : [])));
    this.membersOfG3 = g3.map((_, k) => g2.flatMap((__, j) => (g2ParentIndex(j) === k ? this.membersOfG2[j]! : [])));
  }

  /** Tags, owned by the top-level groups. */
  addTags(): void {
    const tagCount = Math.max(50, Math.floor(this.spec.nodes / 100));
    for (let i = 0; i < tagCount; i++) {
      const owner = i % G3;
      const id = this.node('Tag', { name: `tag-${i}`, color: this.pick(['red', 'green', 'blue', 'amber']) });
      this.relation('OWNS', this.g3[owner]!, id);
      this.relation('CREATED', this.pick(this.membersOfG3[owner]!), id);
      this.tags.push(id);
    }
  }

  /** OWNS trees: 18 of 20 owned by a g2 (the targets live there), 1 by a g3, 1 by a user directly. */
  addTrees(): void {
    this.trees = Math.max(1, Math.floor((this.spec.nodes - this.nodes.length) / PER_TREE));
    for (let t = 0; t < this.trees; t++) {
      if (t % 20 === 18) {
        const k = Math.floor(this.random() * G3);
        this.tree(this.g3[k]!, this.membersOfG3[k]!, false);
      } else if (t % 20 === 19) {
        const owner = this.pick(this.users).id;
        this.tree(owner, [owner], false);
      } else {
        const k = Math.floor(this.random() * this.g2.length);
        this.tree(this.g2[k]!, this.membersOfG2[k]!, true);
      }
    }
  }

  private tree(owner: string, members: string[], viaG2: boolean): void {
    const creator = this.pick(members);
    let level = [owner];
    for (let depth = 1; depth <= 5; depth++) {
      const fanout = depth === 1 ? 1 : FANOUT[depth - 2]!;
      const next: string[] = [];
      for (const parent of level) {
        for (let c = 0; c < fanout; c++) {
          const id = this.treeNode(parent, depth, creator);
          next.push(id);
          if (depth === 4 && viaG2) {
            // A user of a g1 inside this g2: exactly 2 IS_IN_GROUP hops, then 4 OWNS hops down to `id`.
            const grandparent = this.parentOf.get(this.parentOf.get(id)!)!;
            this.targets.push({ id, token: this.tokenOf(this.pick(members)), grandparent });
          }
        }
      }
      level = next;
    }
  }

  private tokenOf(user: string): string {
    return this.tokenByUser.get(user)!;
  }

  private treeNode(parent: string, depth: number, creator: string): string {
    this.serial++;
    const leaf = depth === 5;
    const id = this.node(leaf ? 'Document' : 'Folder', {
      name: `${leaf ? 'Document' : 'Folder'} ${this.serial}`,
      level: depth,
      number: this.serial,
      description: this.sentence(leaf ? 12 : 6),
      title: `${this.pick(TITLE_WORDS)} ${this.pick(TITLE_WORDS)}${this.serial % 10 === 0 ? ` ${COMMON_WORD}` : ''}`,
      ...(leaf
        ? { status: this.pick(['draft', 'review', 'published']), pages: 1 + Math.floor(this.random() * 200) }
        : {}),
    });
    this.relation('OWNS', parent, id);
    this.parentOf.set(id, parent);
    this.relation('CREATED', creator, id);
    if (leaf && this.random() < 0.3) {
      this.relation('HAS_TAG', id, this.pick(this.tags));
      this.hasTag++;
    }
    return id;
  }

  /**
   * The probes of --large. The anchor's owner and the grantee are users of their own, in no group, so that no other
   * scenario's user gets their cost.
   */
  addProbes(): Probes {
    const owner = this.addUser(this.spec.users, null);
    const grantee = this.addUser(this.spec.users + 1, null);
    const anchor = this.node('Folder', { name: 'Big folder', level: 1, description: this.sentence(6) });
    this.relation('OWNS', owner.id, anchor);
    this.relation('CREATED', owner.id, anchor);
    for (let c = 0; c < PROBE_CHILDREN; c++) {
      this.serial++;
      const id = this.node('Document', {
        name: `Document ${this.serial}`,
        number: this.serial,
        description: this.sentence(12),
      });
      this.relation('OWNS', anchor, id);
      this.relation('CREATED', owner.id, id);
    }
    const treeNodes = [...this.parentOf.keys()];
    const granted = new Set<string>();
    while (granted.size < Math.min(PROBE_GRANTS, treeNodes.length)) granted.add(this.pick(treeNodes));
    for (const id of granted) this.relation('HAS_READ_ACCESS', grantee.id, id);
    return { anchor, anchorToken: owner.token, granteeToken: grantee.token, granted: [...granted] };
  }

  /** Where the span of the `created` times starts: it ends now. */
  createdBase(): Date {
    return new Date(this.now.getTime() - this.spec.nodes * 1000);
  }

  /** The callers of the list rows, drawn after everything else so that the rest of the shape stays as it was. */
  addListCallers(): ListCallers {
    const first = this.spec.users + 2;
    const fewTokens = Array.from({ length: LIST_CALLERS }, (_, i) => {
      const few = this.addUser(first + i, null);
      this.tree(few.id, [few.id], false);
      return few.token;
    });
    const half = this.node('Group', { name: 'Half of the departments' });
    for (const g2 of this.g2.slice(0, this.g2.length / 2)) this.relation('IS_IN_GROUP', half, g2);
    const manyTokens = Array.from({ length: LIST_CALLERS }, (_, i) => {
      const many = this.addUser(first + LIST_CALLERS + i, null);
      this.relation('IS_IN_GROUP', many.id, half);
      return many.token;
    });
    return { fewTokens, manyTokens };
  }

  /** Targets in a shuffled order so consecutive requests hit different trees and users. */
  shuffleTargets(): void {
    const { targets } = this;
    for (let i = targets.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      [targets[i], targets[j]] = [targets[j]!, targets[i]!];
    }
  }
}

export async function generateDataset(db: Db, spec: DatasetSpec, log: (msg: string) => void): Promise<Dataset> {
  const started = Date.now();
  const password = 'bench-password';
  const shape = new Shape(spec, await hashPassword(password));
  shape.groups();
  shape.members();
  shape.addTags();
  shape.addTrees();
  const probes = spec.probes ? shape.addProbes() : null;
  shape.shuffleTargets();
  const lists = shape.addListCallers();
  const { nodes, relations } = shape;
  log(
    `data set: ${nodes.length} nodes, ${relations.length} relations built in memory (${Date.now() - started} ms), inserting...`,
  );
  await insertShape(db, shape, log);
  await vacuum(db, log);
  return {
    spec,
    password,
    users: shape.users,
    probes,
    lists,
    createdSpan: { first: isoTime(shape.createdBase()), last: isoTime(shape.now) },
    targets: shape.targets,
    counts: {
      nodes: nodes.length,
      relations: relations.length,
      users: spec.users,
      groups: shape.g1.length + shape.g2.length + shape.g3.length,
      trees: shape.trees,
      tags: shape.tags.length,
      hasTag: shape.hasTag,
    },
    seconds: (Date.now() - started) / 1000,
  };
}

async function insertShape(db: Db, shape: Shape, log: (msg: string) => void): Promise<void> {
  const { nodes, relations, userRows, tokenRows } = shape;
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
      await insertElements(tx, all.slice(i, i + BATCH), shape.createdBase());
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
}

/**
 * Fresh statistics and visibility map, as autovacuum would leave them on a long-running server (PGlite has no
 * autovacuum at all). The map matters: the access checks are index-only scans, which read the heap for every
 * entry on a page the map does not mark all-visible. Right after the load, VACUUM sometimes left element_owners
 * out of the map (three VACUUMs in a row, with no other session holding a snapshot; one a second later filled
 * it), so the tables are vacuumed until their maps are complete (or 10 tries) and the result is logged.
 */
async function vacuum(db: Db, log: (msg: string) => void): Promise<void> {
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
}

async function insertElements(q: Queryable, rows: Row[], at: Date) {
  await q.query(
    `INSERT INTO elements (id, type, start_id, end_id, data, created, updated)
     SELECT id, type, start_id, end_id, data, $2::timestamptz + make_interval(secs => x.at), $2::timestamptz + make_interval(secs => x.at)
     FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, type text, start_id uuid, end_id uuid, data jsonb, at int)`,
    [JSON.stringify(rows), at],
  );
}
