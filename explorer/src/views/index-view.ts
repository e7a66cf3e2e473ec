// Browse: the index (GET /), the top-level nodes the user may read, paged; or every node they may search, newest
// (or last changed) first, over POST /search paged with search_after; and a form to create a node.
import { createElement, type GraphElement, labelOf } from '../api.js';
import { field, h, replace } from '../dom.js';
import { jsonEditor } from '../json-editor.js';
import { tell } from '../notice.js';
import { attempt } from '../problem.js';
import { saveOrder } from '../property-form.js';
import { navigate } from '../router.js';
import { type Sort, sortedValue } from '../sorting.js';
import { typeBadge } from '../types.js';
import { collectionSection } from './collection.js';
import { typeField } from './create.js';
import { graphStructure, nodesOnly, showPages, sortedPage } from './listing.js';

/** What Browse lists, as the address keeps it (`#/?order=newest`). */
const ORDERS = {
  index: 'Top-level nodes (the index)',
  newest: 'All nodes, newest first',
  updated: 'All nodes, last changed first',
} as const;
type Order = keyof typeof ORDERS;

function orderOf(hash: string): Order {
  const order = new URLSearchParams(hash.split('?')[1] ?? '').get('order') ?? 'index';
  return Object.hasOwn(ORDERS, order) ? (order as Order) : 'index';
}

const indexSection = () =>
  collectionSection({
    heading: 'Index',
    path: '/',
    anchor: null,
    pageSize: 25,
    // A sign-in token is the service's own record of a session, not something the person made.
    shown: (node) => node.type !== 'Token',
  });

/** Every node the caller may search (no Token nodes), newest or last changed first, page after page. */
function sortedSection(order: 'newest' | 'updated'): HTMLElement {
  const sort: Sort = { by: order === 'newest' ? 'created' : 'updated', property: '', desc: true };
  const body = h('div', { class: 'collection-body' }, h('p', null, 'Loading…'));
  const item = (node: GraphElement) =>
    h(
      'li',
      { 'data-id': node.id },
      h('a', { href: `#/${node.id}` }, labelOf(node)),
      ' ',
      typeBadge(node.type),
      h('span', { class: 'sorted' }, ` ${sortedValue(node, sort)}`),
    );
  void attempt(body, async () => {
    const parameters = nodesOnly(await graphStructure());
    await showPages(body, (after) => sortedPage({ match_all: {} }, parameters, sort, after), item);
  });
  return h(
    'section',
    { class: 'collection', 'aria-labelledby': 'sorted-heading', 'data-collection': order },
    h('h2', { id: 'sorted-heading' }, order === 'newest' ? 'Newest first' : 'Last changed first'),
    body,
  );
}

/** The "Show" choice and the list it shows, redrawn in place when it changes. */
function browseList(): HTMLElement {
  const order = h(
    'select',
    { name: 'order' },
    Object.entries(ORDERS).map(([value, label]) => h('option', { value }, label)),
  );
  order.value = orderOf(location.hash);
  const list = h('div');
  const show = () => {
    const chosen = order.value as Order;
    replace(list, chosen === 'index' ? indexSection() : sortedSection(chosen));
  };
  order.addEventListener('change', () => {
    // Replaced, not pushed, as the search does: a reload shows the same list.
    history.replaceState(null, '', order.value === 'index' ? '#/' : `#/?order=${order.value}`);
    show();
  });
  show();
  return h('div', null, h('div', { class: 'filters' }, field('Show', order)), list);
}

export async function renderIndex(main: HTMLElement): Promise<void> {
  const type = typeField(
    'Type',
    'A letter, then letters, digits or _, such as Note or Project; User, Token and Upload are the service’s own.',
  );
  const data = jsonEditor('Properties (JSON object)', { name: '' }, { rows: 4, objectOnly: true });
  const status = h('div');
  const form = h(
    'form',
    { 'aria-labelledby': 'new-node-heading', class: 'compact', novalidate: true },
    h('h2', { id: 'new-node-heading' }, 'New node'),
    type.element,
    data.element,
    h('button', { type: 'submit' }, 'Create node'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = data.value();
    if (type.check() === null) return void type.input.reportValidity();
    if (value === undefined) return;
    void attempt(status, async () => {
      const id = await createElement({ type: type.input.value, data: value });
      saveOrder(id, value as Record<string, unknown>);
      tell('Node created.');
      navigate(`#/${id}`);
    });
  });
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Browse'),
    h(
      'div',
      { class: 'element-layout' },
      h('div', { class: 'element-main' }, browseList()),
      h('div', { class: 'element-side' }, form),
    ),
  );
}
