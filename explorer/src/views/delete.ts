// Safe deletes: the dialog says what goes (the element, its file with its size, its relations, named by the people
// and elements at their other end) and what stays (its children, unless the person chooses to delete the ones they
// may delete too, deepest first; what could not be deleted is reported).
import {
  abilitiesOf,
  type Collection,
  type GraphElement,
  getCollection,
  getElement,
  labelOf,
  principalName,
  principalsById,
  request,
} from '../api.js';
import { announce, h } from '../dom.js';
import { count, formatSize } from '../format.js';
import { setNotice } from '../notice.js';
import { attempt, plainMessage } from '../problem.js';
import { navigate } from '../router.js';
import { confirmDialog } from './dialog.js';

/** Every page of a collection (bounded: a huge neighbourhood is summarised by its count). */
async function everything(path: string, limit = 20): Promise<{ nodes: GraphElement[]; relations: GraphElement[] }> {
  const nodes: GraphElement[] = [];
  const relations: GraphElement[] = [];
  let next: string | null = path;
  for (let pages = 0; next !== null && pages < limit; pages += 1) {
    const page: Collection = await getCollection(next);
    nodes.push(...page.nodes);
    relations.push(...page.relations);
    next = page.links.next;
  }
  return { nodes, relations };
}

/** A relation as a sentence: "Ada OWNS this", "this FOLLOWS Apollo". */
function relationText(relation: GraphElement, self: string, names: Map<string, string>): string {
  const name = (id: string) => (id === self ? 'this' : (names.get(id) ?? id.slice(0, 8)));
  return `${name(relation.start!)} ${relation.type} ${name(relation.end!)}`;
}

/**
 * The children below `id`, deepest first (each one's own children before it): those the caller may delete, and
 * those they may not (they stay).
 */
async function subtreeOf(
  id: string,
  seen = new Set<string>(),
): Promise<{ deletable: GraphElement[]; kept: GraphElement[] }> {
  const { nodes } = await everything(`/${id}/children`);
  const deletable: GraphElement[] = [];
  const kept: GraphElement[] = [];
  for (const child of nodes) {
    if (seen.has(child.id)) continue;
    seen.add(child.id);
    const below = await subtreeOf(child.id, seen);
    deletable.push(...below.deletable);
    kept.push(...below.kept);
    const answer = await getElement(child.id).catch(() => null);
    (answer && abilitiesOf(answer.headers).delete ? deletable : kept).push(child);
  }
  return { deletable, kept };
}

async function describe(element: GraphElement) {
  const [children, related, parents] = await Promise.all([
    everything(`/${element.id}/children`),
    everything(`/${element.id}/related`),
    everything(`/${element.id}/parents`, 1),
  ]);
  const ends = related.relations.flatMap((r) => [r.start!, r.end!]).filter((id) => id !== element.id);
  const people = await principalsById(ends);
  const names = new Map<string, string>();
  for (const node of related.nodes) names.set(node.id, labelOf(node));
  for (const [id, person] of people) if (person) names.set(id, principalName(person, id));
  const goes = h(
    'ul',
    { class: 'goes' },
    h('li', null, `${labelOf(element)} (${element.type})`),
    element.file ? h('li', null, `its file (${formatSize(element.file.contentLength)})`) : null,
    related.relations.map((r) => h('li', null, `the relation “${relationText(r, element.id, names)}”`)),
  );
  // Where to go afterwards: the folder it was in (a person or group owning it is no place to land).
  const parent = parents.nodes.find((node) => node.type !== 'User' && node.type !== 'Group') ?? null;
  return { children: children.nodes, goes, parent };
}

export function deleteSection(element: GraphElement): HTMLElement {
  const status = h('div');
  const run = async () => {
    const { children, goes, parent } = await describe(element);
    const subtree = h('input', { type: 'checkbox', id: 'delete-subtree' });
    const stays =
      children.length === 0
        ? null
        : [
            h('p', null, `Stays (${count(children.length, 'child')}, no longer under this element):`),
            h(
              'ul',
              { class: 'stays' },
              children.map((child) => h('li', null, labelOf(child))),
            ),
            h(
              'p',
              { class: 'checkbox' },
              subtree,
              ' ',
              h('label', { for: 'delete-subtree' }, 'Also delete the children (and theirs) that I may delete'),
            ),
          ];
    const question = `Delete ${labelOf(element)}?`;
    if (!(await confirmDialog(question, 'Delete', h('p', null, 'To be deleted:'), goes, ...(stays ?? [])))) return;
    const left: string[] = [];
    if (subtree.checked) {
      const { deletable, kept } = await subtreeOf(element.id);
      left.push(...kept.map((child) => `${labelOf(child)}: you may not delete it`));
      for (const child of deletable)
        await request('DELETE', `/${child.id}`).catch((error: unknown) =>
          left.push(`${labelOf(child)}: ${plainMessage(error)}`),
        );
    }
    await request('DELETE', `/${element.id}`);
    const said = left.length === 0 ? 'Deleted.' : `Deleted. ${count(left.length, 'child')} could not be deleted:`;
    announce(said);
    setNotice(said, left);
    navigate(parent ? `#/${parent.id}` : '#/');
  };
  return h(
    'section',
    { 'aria-labelledby': 'delete-heading', class: 'compact' },
    h('h2', { id: 'delete-heading' }, 'Delete'),
    h('button', { type: 'button', class: 'danger', onclick: () => void attempt(status, run) }, 'Delete element'),
    status,
  );
}
