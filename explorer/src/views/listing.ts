// Sorted lists over POST /search: the "Sort by" control, and the pages, each continued with the `searchAfter` of the
// last answer so that a later page neither repeats nor skips a hit, whatever was added meanwhile.
import { ApiError, type GraphElement, request, type SearchResponse } from '../api.js';
import { field, h, replace } from '../dom.js';
import { attempt } from '../problem.js';
import {
  DESCENDING_FIRST,
  LABELS,
  PAGE_SIZE,
  RELEVANCE,
  type Sort,
  type SortBy,
  sortKeys,
  sortRefusal,
  totalOf,
} from '../sorting.js';

export interface SortControl {
  element: HTMLElement;
  value: () => Sort;
}

/** "Sort by" (with a box for the property's name) and "Order"; `changed` runs when the choice is complete. */
export function sortControl(initial: Sort, changed: () => void): SortControl {
  const by = h(
    'select',
    { name: 'sort' },
    Object.entries(LABELS).map(([value, label]) => h('option', { value }, label)),
  );
  by.value = initial.by;
  const property = h('input', { type: 'text', name: 'property', value: initial.property, autocomplete: 'off' });
  const order = h(
    'select',
    { name: 'order' },
    h('option', { value: 'asc' }, 'Ascending'),
    h('option', { value: 'desc' }, 'Descending'),
  );
  order.value = initial.desc ? 'desc' : 'asc';
  const propertyField = field('Property to sort by', property, 'Its name as in a query: priority, address.city.');
  const showProperty = () => {
    propertyField.hidden = by.value !== 'property';
  };
  showProperty();
  by.addEventListener('change', () => {
    order.value = DESCENDING_FIRST.has(by.value as SortBy) ? 'desc' : 'asc';
    showProperty();
    if (by.value === 'property' && property.value.trim() === '') property.focus();
    else changed();
  });
  property.addEventListener('change', () => {
    if (property.value.trim() !== '') changed();
  });
  order.addEventListener('change', changed);
  const value = (): Sort => {
    const name = property.value.trim();
    if (by.value === 'property' && name === '') return { ...RELEVANCE, desc: order.value === 'desc' };
    return { by: by.value as SortBy, property: by.value === 'property' ? name : '', desc: order.value === 'desc' };
  };
  return {
    element: h(
      'div',
      { class: 'sort', role: 'group', 'aria-label': 'Sort' },
      field('Sort by', by),
      propertyField,
      field('Order', order),
    ),
    value,
  };
}

/** One page of a sorted search: the first when `after` is null, else the one right after those values. */
export async function sortedPage(
  query: unknown,
  parameters: Record<string, unknown>,
  sort: Sort,
  after: unknown[] | null,
): Promise<SearchResponse> {
  const step = {
    type: 'searchengine-query-dsl-mixin',
    query,
    parameters: { ...parameters, pageSize: PAGE_SIZE, sort: sortKeys(sort), ...(after ? { search_after: after } : {}) },
  };
  try {
    return (await request<SearchResponse>('POST', '/search', { steps: [step] })).body;
  } catch (error) {
    const plain =
      error instanceof ApiError && error.status === 400 ? sortRefusal(error.problem?.detail ?? '', sort) : null;
    throw plain === null ? error : new Error(plain);
  }
}

/** "More results": loads the page after the last one when pressed (again after a failure); absent when complete. */
function moreButton(
  response: SearchResponse,
  shown: number,
  load: (after: unknown[]) => Promise<boolean>,
): HTMLElement | null {
  const after = response.searchAfter;
  // A full last page still carries searchAfter; the exact count says there is nothing after it.
  if (!after || (response.totalHitsRelation === 'eq' && (response.totalHits ?? 0) <= shown)) return null;
  const button = h('button', { type: 'button' }, 'More results');
  button.addEventListener('click', () => {
    button.disabled = true;
    void load(after).then((loaded) => {
      button.disabled = loaded;
    });
  });
  return h('div', { class: 'pager' }, button);
}

/**
 * Shows the first page in `slot` (throwing when it fails), then each next page under it on "More results", while
 * `current()` holds: an answer to an older search never lands on a newer one's list.
 */
export async function showPages(
  slot: HTMLElement,
  load: (after: unknown[] | null) => Promise<SearchResponse>,
  item: (element: GraphElement) => HTMLElement,
  current: () => boolean = () => true,
): Promise<void> {
  const total = h('p', { class: 'count' });
  const list = h('ol', { class: 'elements' });
  const more = h('div');
  const status = h('div');
  const show = (page: SearchResponse) => {
    list.append(...page.results.map(item));
    total.textContent = totalOf(page);
    const next = async (after: unknown[]) => {
      const answer = await load(after);
      if (!current()) return;
      const shown = list.childElementCount;
      show(answer);
      // Keyboard users go on from the first element of the new page.
      list.children[shown]?.querySelector('a')?.focus();
    };
    replace(
      more,
      moreButton(page, list.childElementCount, (after) => attempt(status, () => next(after))),
    );
  };
  const first = await load(null);
  if (!current()) return;
  replace(slot, total, first.results.length > 0 ? list : null, more, status);
  show(first);
}

export interface Structure {
  nodeTypes: string[];
  relationTypes: string[];
}

/**
 * The types in use (GET /graph-structure), asked anew for each list so that a type made meanwhile is not left out;
 * null when the service does not say (the list is then not restricted by type).
 */
export function graphStructure(): Promise<Structure | null> {
  return request<Structure>('GET', '/graph-structure').then(
    (answer) => answer.body,
    () => null,
  );
}

/** The step's type parameters for nodes only, without the person's sign-in Token nodes (the service's own). */
export function nodesOnly(known: Structure | null): Record<string, string[]> {
  return known === null ? {} : { nodeTypes: known.nodeTypes.filter((t) => t !== 'Token'), relationTypes: [] };
}
