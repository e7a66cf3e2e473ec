// "Only what others shared with me": the ids of what the caller may read through grants to them or their groups, on
// elements they did not create, and everything those own below them, read from the graph as the access rules do.
import { type Collection, type GraphElement, request } from '../api.js';
import { currentUser } from '../header.js';

const GRANT = /^(HAS_[A-Z]+_ACCESS|OWNS)$/;

/** Every page of a collection's relations and nodes (bounded). */
async function allOf(path: string): Promise<{ nodes: GraphElement[]; relations: GraphElement[] }> {
  const nodes: GraphElement[] = [];
  const relations: GraphElement[] = [];
  let next: string | null = path;
  for (let pages = 0; next !== null && pages < 20; pages += 1) {
    const page: Collection = (await request<Collection>('GET', next)).body;
    nodes.push(...page.nodes);
    relations.push(...page.relations);
    next = page.links.next;
  }
  return { nodes, relations };
}

/** At most this many elements are gathered as shared: enough for a person's view, bounded for a huge graph. */
const MAX_SHARED = 5000;

/**
 * Ids of what others shared with the caller: the ends of grants to them (or to their groups) on what they did not
 * create, and everything those own below them (a shared folder's contents), as the service's access rules read them.
 */
export async function sharedWithMe(): Promise<Set<string>> {
  const me = await currentUser();
  if (!me) return new Set();
  const mine = (await allOf(`/${me.id}/related`)).relations.filter((r) => r.start === me.id);
  const created = new Set(mine.filter((r) => r.type === 'CREATED').map((r) => r.end));
  const groups = mine.filter((r) => r.type === 'IS_IN_GROUP').map((r) => r.end!);
  const grants = [...mine];
  for (const group of groups) {
    const related = await allOf(`/${group}/related`).catch(() => ({ relations: [] as GraphElement[] }));
    grants.push(...related.relations.filter((r) => r.start === group));
  }
  const shared = new Set<string>();
  const queue = grants.filter((r) => GRANT.test(r.type) && !created.has(r.end)).map((r) => r.end!);
  while (queue.length > 0 && shared.size < MAX_SHARED) {
    const id = queue.shift()!;
    if (shared.has(id)) continue;
    shared.add(id);
    const children = await allOf(`/${id}/children`).catch(() => ({ nodes: [] as GraphElement[] }));
    queue.push(...children.nodes.map((node) => node.id).filter((child) => !shared.has(child)));
  }
  return shared;
}
