// Lists (sorted searches walked with search_after) against a reference written here, over random graphs changed
// through HTTP: nested groups, OWNS chains and moves, grants, other relations, deletions, and writes between the
// pages of a walk. The reference is every element the exact rule (permittedIds) lets the caller search, filtered
// and sorted in TypeScript; the walk must find the same hits in the same order with the same metadata.sort, and
// each page the totalHits of the whole list.
import { expect, it } from 'vitest';
import { permittedIds } from '../../src/storage/queries/access.js';
import { createElement, describeBackends, type Harness, userWithToken } from '../helpers/harness.js';

type User = Awaited<ReturnType<typeof userWithToken>>;
interface Row {
  id: string;
  type: string;
  node: boolean;
  data: Record<string, unknown>;
  /** As metadata.sort shows it (microseconds), and as the element shows it (seconds: what a range compares). */
  created: string;
  shown: string;
}
interface ListQuery {
  query: Record<string, unknown>;
  /** track_total_hits, when not the default. */
  track?: number;
  predicate: (r: Row) => boolean;
  sort: Record<string, unknown>[];
  nodeTypes: string[] | null;
}
type Hit = { id: string; metadata: { sort: unknown[] } };

const LABELS = ['ant', 'Bee', 'cat', 'dog', 'eel', 'Fox'];

/** The value a sort field has on a row, and how two of them compare (null: missing). */
const sortValueOf = (r: Row, field: string): unknown => {
  if (field === 'created') return r.created;
  if (field === '_id') return r.id;
  const v = r.data[field.replace(/\.keyword$/, '')];
  return v === undefined ? null : v;
};
const cmp = (a: unknown, b: unknown) => (a === b ? 0 : (a as number | string) < (b as number | string) ? -1 : 1);

function comparator(sort: Record<string, unknown>[]) {
  return (x: Row, y: Row) => {
    for (const key of sort) {
      const [field, spec] = Object.entries(key)[0]! as [string, { order: string; missing?: string }];
      const a = sortValueOf(x, field);
      const b = sortValueOf(y, field);
      if (a === null || b === null) {
        if (a === b) continue;
        return (a === null) === (spec.missing === '_first') ? -1 : 1;
      }
      const c = cmp(a, b) * (spec.order === 'desc' ? -1 : 1);
      if (c !== 0) return c;
    }
    // The id breaks ties in the direction of the last key.
    return cmp(x.id, y.id) * ((Object.values(sort.at(-1)!)[0] as { order: string }).order === 'desc' ? -1 : 1);
  };
}

const sortValues = (r: Row, sort: Record<string, unknown>[]) => [
  ...sort.map((key) => sortValueOf(r, Object.keys(key)[0]!)),
  ...(Object.keys(sort.at(-1)!)[0] === '_id' ? [] : [r.id]),
];

describeBackends('lists against a reference over random graphs', (h) => {
  it('find what the exact rule lets each caller search, in order, page by page', async () => {
    let seed = 20261202;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 16) % n;
    };
    const pick = <T>(list: readonly T[]): T => list[random(list.length)]!;
    const users: User[] = [];
    for (let k = 0; k < 4; k++) users.push(await userWithToken(h(), `lists${k}@random.dev`));
    const groups: string[] = [];
    const nodes: string[] = [];
    const relations: string[] = [];
    const item = () => {
      h().clock.advance(1 + random(3));
      const priority = random(5);
      return {
        type: pick(['Item', 'Item', 'Note']),
        data: {
          label: pick(LABELS),
          kind: pick(['a', 'b']),
          ...(priority === 0 ? {} : { priority: priority === 1 ? null : random(4) }),
        },
      };
    };
    for (const user of users) {
      groups.push(await createElement(h(), user.token, { type: 'Group' }));
      for (let k = 0; k < 3; k++) nodes.push(await createElement(h(), user.token, item()));
    }

    const randomQuery = (rows: Row[]): ListQuery => {
      const nodeTypes = random(3) === 0 ? null : ['Item'];
      const fields = ['created', 'priority', 'label.keyword', '_id'];
      const sort = Array.from({ length: 1 + random(2) }, () => ({
        [pick(fields)]: { order: pick(['asc', 'desc']), missing: pick(['_first', '_last']) },
      }));
      const track = pick([undefined, undefined, 1, 4]);
      const kind = random(3);
      if (kind === 0) return { query: { match_all: {} }, predicate: () => true, sort, nodeTypes, track };
      if (kind === 1) {
        const since = pick(rows).shown;
        return {
          query: { range: { created: { gte: since } } },
          predicate: (r) => r.shown >= since,
          sort,
          nodeTypes,
          track,
        };
      }
      return {
        query: { term: { 'kind.keyword': 'a' } },
        predicate: (r) => r.data.kind === 'a',
        sort,
        nodeTypes,
        track,
      };
    };

    const allRows = async (): Promise<Row[]> =>
      (
        await h().db.query<Row>(
          `SELECT id, type, start_id IS NULL AS node, data,
                  to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"') AS created,
                  to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"') AS shown
           FROM elements`,
        )
      ).rows;

    const reference = async (user: User, q: ListQuery): Promise<Row[]> => {
      const rows = await allRows();
      const searchable = await permittedIds(
        h().db,
        user.id,
        'SEARCH',
        rows.map((r) => r.id),
      );
      return rows
        .filter(
          (r) =>
            searchable.has(r.id) &&
            q.predicate(r) &&
            (q.nodeTypes === null || (r.node && q.nodeTypes.includes(r.type))),
        )
        .sort(comparator(q.sort));
    };

    const page = async (user: User, q: ListQuery, pageSize: number, after: unknown[] | undefined) => {
      const res = await h().request('POST', '/search', {
        token: user.token,
        body: {
          debug: true,
          steps: [
            {
              type: 'searchengine-query-dsl-mixin',
              query: q.query,
              parameters: {
                pageSize,
                sort: q.sort,
                nodeTypes: q.nodeTypes,
                ...(after ? { search_after: after } : {}),
                ...(q.track === undefined ? {} : { track_total_hits: q.track }),
              },
            },
          ],
        },
      });
      expect(res.status, res.text).toBe(200);
      return { json: res.json, hits: res.json.debug[1].input.parameters.stepResults[0].elements as Hit[] };
    };

    /** Walks the list with search_after; writes between pages when `write` says so. */
    const walk = async (user: User, q: ListQuery, what: string, write: boolean) => {
      const before = await reference(user, q);
      const pageSize = 2 + random(4);
      const walked: Hit[] = [];
      let after: unknown[] | undefined;
      for (let p = 0; p < 100; p++) {
        const { json, hits } = await page(user, q, pageSize, after);
        const now = await reference(user, q);
        const bound = q.track ?? 10_000;
        expect(json.totalHits, `${what}: totalHits of page ${p}`).toBe(Math.min(now.length, bound));
        expect(json.totalHitsRelation, `${what}: totalHitsRelation of page ${p}`).toBe(
          now.length > bound ? 'gte' : 'eq',
        );
        const searchable = new Set(now.map((r) => r.id));
        for (const hit of hits) expect(searchable.has(hit.id), `${what}: page ${p} holds ${hit.id}`).toBe(true);
        walked.push(...hits);
        after = json.searchAfter;
        if (after === undefined) break;
        if (write) nodes.push(await createElement(h(), pick(users).token, item()));
      }
      const final = await reference(user, q);
      const position = new Map(final.map((r, i) => [r.id, i]));
      const ids = walked.map((x) => x.id);
      expect(new Set(ids).size, `${what}: no hit twice`).toBe(ids.length);
      const positions = ids.map((id) => position.get(id) ?? -1);
      expect(positions, `${what}: in the order of the list`).toEqual([...positions].sort((a, b) => a - b));
      if (!write) {
        expect(ids, `${what}: the hits`).toEqual(before.map((r) => r.id));
        const values = walked.map((x) => x.metadata.sort);
        expect(values, `${what}: metadata.sort`).toEqual(before.map((r) => sortValues(r, q.sort)));
      } else for (const r of before) expect(ids, `${what}: ${r.id} found`).toContain(r.id);
    };

    let changes = 0;
    let walks = 0;
    const types = ['OWNS', 'OWNS', 'HAS_READ_ACCESS', 'IS_IN_GROUP', 'IS_IN_GROUP', 'HAS_TAG'];
    for (let step = 0; changes < 36 && step < 400; step++) {
      const actor = pick(users);
      const op = random(10);
      let res: Awaited<ReturnType<Harness['request']>>;
      if (op < 3) {
        const parent = random(3) === 0 ? pick(groups) : pick([...nodes, actor.id]);
        res = await h().request('POST', `/${parent}`, { token: actor.token, body: item() });
        if (res.status === 201) nodes.push(res.headers.get('location')!.slice(1));
      } else if (op < 7) {
        const type = pick(types);
        const start =
          type === 'HAS_TAG' || (type === 'OWNS' && random(2) === 0)
            ? pick(nodes)
            : pick([...users.map((u) => u.id), ...groups]);
        const end = type === 'IS_IN_GROUP' ? pick(groups) : pick([...groups, ...nodes]);
        res = await h().request('POST', '/', { token: actor.token, body: { type, start, end } });
        if (res.status === 201) relations.push(res.headers.get('location')!.slice(1));
      } else {
        // Deletions: mostly relations (an OWNS deleted after another was added is a move), sometimes a node.
        res = await h().request('DELETE', `/${op < 9 && relations.length > 0 ? pick(relations) : pick(nodes)}`, {
          token: actor.token,
        });
      }
      if (res.status >= 300) continue;
      changes++;
      if (changes % 6 !== 0) continue;
      for (const user of users) {
        const q = randomQuery(await allRows());
        await walk(
          user,
          q,
          `change ${changes}, ${user.identifier}, ${JSON.stringify(q.query)} ${JSON.stringify(q.sort)}`,
          walks++ % 3 === 2,
        );
      }
    }
    expect(changes).toBe(36);
    const drift = await h().db.query('SELECT * FROM trellis_access_index_drift()');
    expect(drift.rows).toEqual([]);
  }, 300_000);
});
