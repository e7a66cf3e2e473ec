// One paged `_PartialCollection` (the index, an element's parents, children or related elements) as a list, each
// relation of the page said as a sentence in its direction with the name at its other end ("this OWNS Budget",
// "Ada OWNS this"), the node's link in its place.
import {
  type Collection,
  type GraphElement,
  getCollection,
  labelOf,
  type Principal,
  principalName,
  principalsById,
} from '../api.js';
import { h, replace } from '../dom.js';
import { attempt } from '../problem.js';
import { typeBadge } from '../types.js';

interface CollectionOptions {
  heading: string;
  /** The collection's path without paging, e.g. `/<id>/children`. */
  path: string;
  pageSize?: number;
  /** The element the collection belongs to (null for the index). */
  anchor: string | null;
  /** Extra controls for a relation of the page (a revoke button on a grant, say). */
  relationActions?: (relation: GraphElement) => HTMLElement | null;
  /** Which nodes to list (all when absent): the index leaves out the person's own sign-in tokens. */
  shown?: (node: GraphElement) => boolean;
  /** Called with every page loaded (the diagram adds what it holds). */
  onPage?: (page: Collection) => void;
}

export function collectionSection(options: CollectionOptions): HTMLElement {
  const headingId = `${options.heading.toLowerCase().replace(/\W+/g, '-')}-heading`;
  const body = h('div', { class: 'collection-body' }, h('p', null, 'Loading…'));
  const section = h(
    'section',
    { class: 'collection', 'aria-labelledby': headingId, 'data-collection': options.heading.toLowerCase() },
    h('h2', { id: headingId }, options.heading),
    body,
  );
  const load = (path: string) =>
    void attempt(body, async () => {
      const page = await getCollection(path);
      options.onPage?.(page);
      replace(body, renderPage(page, options, load, await farEnds(page, options.anchor)));
    });
  load(`${options.path}?pageSize=${options.pageSize ?? 10}`);
  return section;
}

/** Names for the ends of the page's relations that are not among its nodes (a person given access, say). */
async function farEnds(page: Collection, anchor: string | null): Promise<Map<string, Principal | null>> {
  const nodeIds = new Set(page.nodes.map((node) => node.id));
  const ends = page.relations.flatMap((r) => [r.start!, r.end!]).filter((id) => id !== anchor && !nodeIds.has(id));
  return ends.length === 0 ? new Map() : principalsById(ends);
}

function renderPage(
  page: Collection,
  options: CollectionOptions,
  load: (path: string) => void,
  people: Map<string, Principal | null>,
): HTMLElement[] {
  const nodeIds = new Set(page.nodes.map((node) => node.id));
  const relationsOf = (id: string) => page.relations.filter((r) => r.start === id || r.end === id);
  const nameOf = (id: string): string => {
    const person = people.get(id);
    if (person) return principalName(person, id);
    return `an element you cannot see (${id.slice(0, 8)})`;
  };
  const items = page.nodes.filter(options.shown ?? (() => true)).map((node) => {
    const link = h('a', { href: `#/${node.id}` }, labelOf(node));
    const relations = relationsOf(node.id);
    if (relations.length === 0) return h('li', { 'data-id': node.id }, link, ' ', typeBadge(node.type));
    // The node's link stands in its first sentence, later ones name it in plain text; its type closes the item.
    const sentences = relations.map((relation, index) =>
      relationSentence(relation, options, (id) => (id === node.id ? (index === 0 ? link : labelOf(node)) : nameOf(id))),
    );
    return h(
      'li',
      { 'data-id': node.id },
      sentences.flatMap((sentence, index) => (index ? ['; ', sentence] : sentence)),
      ' ',
      typeBadge(node.type),
    );
  });
  // Relations whose far end the caller cannot read (a grant to another user, say): listed so they can be revoked.
  const loose = page.relations
    .filter((r) => !nodeIds.has(r.start ?? '') && !nodeIds.has(r.end ?? ''))
    .map((relation) => h('li', { 'data-id': relation.id }, relationSentence(relation, options, nameOf)));
  const pageNumber = Number(new URLSearchParams(page.id.split('?')[1] ?? '').get('page') ?? '1');
  const lastPage = Number(new URLSearchParams(page.links.last.split('?')[1] ?? '').get('page') ?? '1');
  const pager = h(
    'div',
    { class: 'pager' },
    h(
      'button',
      { type: 'button', disabled: page.links.previous === null, onclick: () => load(page.links.previous!) },
      'Previous page',
    ),
    h('span', null, `Page ${pageNumber} of ${Math.max(lastPage, 1)} · ${page.totalNodes} in all`),
    h(
      'button',
      { type: 'button', disabled: page.links.next === null, onclick: () => load(page.links.next!) },
      'Next page',
    ),
  );
  if (items.length === 0 && loose.length === 0) return [h('p', { class: 'empty' }, 'None.')];
  return [h('ul', { class: 'elements' }, items, loose), page.totalNodes > page.nodes.length ? pager : h('span')];
}

/** "<start> TYPE <end>", the anchor said as "this", the type a link to the relation itself. */
function relationSentence(
  relation: GraphElement,
  options: CollectionOptions,
  name: (id: string) => string | HTMLElement,
): HTMLElement {
  const end = (id: string) => (id === options.anchor ? 'this' : name(id));
  return h(
    'span',
    { class: 'relation', 'data-relation': relation.id },
    end(relation.start!),
    ' ',
    h('a', { href: `#/${relation.id}`, 'aria-label': `relation ${relation.type} ${relation.id}` }, relation.type),
    ' ',
    end(relation.end!),
    options.relationActions?.(relation) ?? null,
  );
}
