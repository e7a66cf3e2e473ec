// One paged `_PartialCollection` (the index, an element's parents, children or related elements) as a list, with
// the relations of the page beside the nodes they connect.
import { type Collection, type GraphElement, getCollection, labelOf } from '../api.js';
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
      replace(body, renderPage(page, options, load));
    });
  load(`${options.path}?pageSize=${options.pageSize ?? 10}`);
  return section;
}

function renderPage(page: Collection, options: CollectionOptions, load: (path: string) => void): HTMLElement[] {
  const nodeIds = new Set(page.nodes.map((node) => node.id));
  const relationsOf = (id: string) => page.relations.filter((r) => r.start === id || r.end === id);
  const items = page.nodes.map((node) =>
    h(
      'li',
      { 'data-id': node.id },
      h('a', { href: `#/${node.id}` }, labelOf(node)),
      ' ',
      typeBadge(node.type),
      relationsOf(node.id).map((relation) => relationItem(relation, options)),
    ),
  );
  // Relations whose far end the caller cannot read (a grant to another user, say): listed so they can be revoked.
  const loose = page.relations
    .filter((r) => !nodeIds.has(r.start ?? '') && !nodeIds.has(r.end ?? ''))
    .map((relation) => h('li', { 'data-id': relation.id }, relationItem(relation, options)));
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

function relationItem(relation: GraphElement, options: CollectionOptions): HTMLElement {
  const direction = relation.end === options.anchor ? '→ this' : relation.start === options.anchor ? 'this →' : '';
  return h(
    'span',
    { class: 'relation', 'data-relation': relation.id },
    ' ',
    h('a', { href: `#/${relation.id}`, 'aria-label': `relation ${relation.type} ${relation.id}` }, relation.type),
    direction ? ` ${direction}` : ` ${relation.start} → ${relation.end}`,
    options.relationActions?.(relation) ?? null,
  );
}
