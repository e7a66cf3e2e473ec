// Plain search: one box over every property (simple_query_string), the matching words highlighted, a type filter
// and "shared with me", Token nodes and relations left out unless asked for, sorted as chosen and paged with
// search_after. The query pipeline is under Advanced.
import { type GraphElement, labelOf, type SearchResponse } from '../api.js';
import { field, h, replace } from '../dom.js';
import { attempt } from '../problem.js';
import { putSort, RELEVANCE, type Sort, sortedValue, sortOf } from '../sorting.js';
import { typeBadge } from '../types.js';
import { advancedSearch } from './advanced-search.js';
import { graphStructure, nodesOnly, type Structure, showPages, sortControl, sortedPage } from './listing.js';
import { sharedWithMe } from './shared-with-me.js';

/** The search shown, as the address keeps it (`#/search?q=…&type=…&shared=1&sort=…`): a reload or a link repeats it. */
interface Asked {
  q: string;
  type: string;
  shared: boolean;
  sort: Sort;
}

function askedOf(hash: string): Asked | null {
  const query = hash.split('?')[1];
  if (query === undefined) return null;
  const params = new URLSearchParams(query);
  return {
    q: params.get('q') ?? '',
    type: params.get('type') ?? '',
    shared: params.get('shared') === '1',
    sort: sortOf(params),
  };
}

function remember(asked: Asked): void {
  const params = new URLSearchParams({ q: asked.q });
  if (asked.type) params.set('type', asked.type);
  if (asked.shared) params.set('shared', '1');
  putSort(params, asked.sort);
  // Replaced, not pushed: the address follows the search without a history entry (and a redraw) per search.
  history.replaceState(null, '', `#/search?${params}`);
  last = asked;
}

/** The last search of this tab, for coming back to Search from elsewhere. */
let last: Asked | null = null;

/** Fills the type filter, keeping the type chosen (or the one the address asked for) when it is still offered. */
function fillTypeFilter(type: HTMLSelectElement, known: Structure | null): void {
  const chosen = type.value || (last?.type ?? '');
  const types = [...new Set([...(known?.nodeTypes ?? []), ...(known?.relationTypes ?? [])])].sort();
  replace(
    type,
    h('option', { value: '' }, 'All types'),
    types.map((t) => h('option', { value: t }, t)),
  );
  type.value = types.includes(chosen) ? chosen : '';
}

/**
 * The step's type parameters: the chosen type, and unless `everything`, nodes only and no Token nodes. Asked of the
 * service (not filtered here) so that the count and the pages hold only what is shown.
 */
function typeParameters(type: string, everything: boolean, known: Structure | null): Record<string, string[]> {
  if (type === '') return everything ? {} : nodesOnly(known);
  const isNode = known === null || known.nodeTypes.includes(type) || !known.relationTypes.includes(type);
  const isRelation = known === null || known.relationTypes.includes(type) || !known.nodeTypes.includes(type);
  return {
    nodeTypes: isNode && (everything || type !== 'Token') ? [type] : [],
    relationTypes: isRelation && everything ? [type] : [],
  };
}

/** The words to highlight: the query without its operators and quotes. */
function wordsOf(query: string): string[] {
  return query
    .split(/[\s"+|()~*-]+/)
    .map((word) => word.trim().toLowerCase())
    .filter((word) => word.length > 0 && !['and', 'or', 'not'].includes(word));
}

/** The text with each word marked, matched case-insensitively at the start of a word. */
function highlighted(text: string, words: string[]): (Node | string)[] {
  if (words.length === 0) return [text];
  const escaped = words.map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const pattern = new RegExp(`(${escaped.join('|')})`, 'gi');
  return text.split(pattern).map((part, index) => (index % 2 === 1 ? h('mark', null, part) : part));
}

/** The first property other than the name whose text holds one of the words, as "key: value". */
function matchingProperty(element: GraphElement, words: string[]): [string, string] | null {
  for (const [key, value] of Object.entries(element.data)) {
    if (key === 'name' || key === 'created' || key === 'updated') continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (words.some((word) => text.toLowerCase().includes(word))) return [key, text.slice(0, 160)];
  }
  return null;
}

/** Ids per search when limited to what was shared: well under the service's clause limit with the words. */
const IDS_PER_SEARCH = 800;

/** A search as sent: the words, the order, the type parameters, and the ids shared with the caller when asked. */
interface Search {
  words: string;
  sort: Sort;
  parameters: Record<string, unknown>;
  shared: Set<string> | null;
}

/**
 * One page of the search (the first when `after` is null). Over what was shared it is one search while the ids fit
 * one query; beyond that, the first hits of each part of the ids, in the order asked within a part and not paged.
 */
async function findPage(search: Search, after: unknown[] | null): Promise<SearchResponse> {
  const text =
    search.words.trim() === ''
      ? { match_all: {} }
      : { simple_query_string: { query: search.words, default_operator: 'and' } };
  if (search.shared === null) return sortedPage(text, search.parameters, search.sort, after);
  const ids = [...search.shared];
  const within = (part: string[]) => ({ bool: { must: [text], filter: [{ ids: { values: part } }] } });
  if (ids.length <= IDS_PER_SEARCH) return sortedPage(within(ids), search.parameters, search.sort, after);
  const results: GraphElement[] = [];
  for (let i = 0; i < ids.length && results.length < 100; i += IDS_PER_SEARCH) {
    const part = ids.slice(i, i + IDS_PER_SEARCH);
    results.push(...(await sortedPage(within(part), search.parameters, search.sort, null)).results);
  }
  return { type: '_SearchResultResponse', results: results.slice(0, 100) };
}

function resultItem(element: GraphElement, words: string[], sort: Sort): HTMLElement {
  const other = matchingProperty(element, words);
  const sorted = sortedValue(element, sort);
  return h(
    'li',
    { 'data-id': element.id },
    h('a', { href: `#/${element.id}` }, highlighted(labelOf(element), words)),
    ' ',
    typeBadge(element.type),
    sorted ? h('span', { class: 'sorted' }, ` ${sorted}`) : null,
    other ? h('div', { class: 'match' }, `${other[0]}: `, highlighted(other[1], words)) : null,
  );
}

function searchForm(box: HTMLInputElement, filters: HTMLElement): HTMLFormElement {
  return h(
    'form',
    { role: 'search', 'aria-label': 'Search', class: 'plain-search' },
    field('Words to find', box, 'Any property; "quotes" for a phrase, -word to leave out, word* for a prefix.'),
    h('button', { type: 'submit', class: 'primary' }, 'Search'),
    filters,
  );
}

function advancedSection(): HTMLElement {
  const advanced = h('details', { class: 'advanced' }, h('summary', null, 'Advanced: the query pipeline (JSON)'));
  advanced.addEventListener('toggle', () => {
    if (advanced.open && advanced.childElementCount === 1) void advancedSearch().then((view) => advanced.append(view));
  });
  return advanced;
}

export async function renderSearch(main: HTMLElement): Promise<void> {
  const asked = askedOf(location.hash) ?? last;
  last = asked;
  const box = h('input', { type: 'search', name: 'q', value: asked?.q ?? '', autocomplete: 'off' });
  const type = h('select', { name: 'type' }, h('option', { value: '' }, 'All types'));
  const shared = h('input', { type: 'checkbox', id: 'only-shared', checked: asked?.shared ?? false });
  const everything = h('input', { type: 'checkbox', id: 'show-all' });
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  const sort = sortControl(asked?.sort ?? RELEVANCE, () => form.requestSubmit());
  const form = searchForm(
    box,
    h(
      'div',
      { class: 'filters' },
      field('Type', type),
      sort.element,
      h('p', { class: 'checkbox' }, shared, ' ', h('label', { for: 'only-shared' }, 'Only what others shared with me')),
      h('p', { class: 'checkbox' }, everything, ' ', h('label', { for: 'show-all' }, 'Include relations and tokens')),
    ),
  );
  let sharedIds: Set<string> | null = null;
  let generation = 0;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const wanted = { q: box.value, type: type.value, shared: shared.checked, sort: sort.value() };
    const all = everything.checked;
    remember(wanted);
    generation += 1;
    const mine = generation;
    // A failed search leaves no earlier results under its error (attempt empties the slot first).
    void attempt(results, async () => {
      try {
        const known = await graphStructure();
        if (wanted.shared) sharedIds ??= await sharedWithMe();
        const parameters = typeParameters(wanted.type, all, known);
        const search = { words: wanted.q, sort: wanted.sort, parameters, shared: wanted.shared ? sharedIds : null };
        const words = wordsOf(search.words);
        const current = () => mine === generation;
        const item = (element: GraphElement) => resultItem(element, words, wanted.sort);
        await showPages(results, (after) => findPage(search, after), item, current);
        if (mine === generation) fillTypeFilter(type, known);
      } catch (error) {
        if (mine === generation) throw error;
      }
    });
  });
  // Each filter is asked of the service, so that the count and the pages hold only what is shown.
  for (const control of [type, everything, shared]) control.addEventListener('change', () => form.requestSubmit());
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Search'),
    form,
    h('section', { 'aria-labelledby': 'results-heading' }, h('h2', { id: 'results-heading' }, 'Results'), results),
    advancedSection(),
  );
  fillTypeFilter(type, await graphStructure());
  if (asked) form.requestSubmit();
}
