// Plain search: one box over every property (simple_query_string), the matching words highlighted, a type filter
// and "shared with me", Token nodes and relations hidden unless asked for. The query pipeline is under Advanced.
import { type Collection, type GraphElement, labelOf, request, type SearchResponse } from '../api.js';
import { field, h, replace } from '../dom.js';
import { count } from '../format.js';
import { currentUser } from '../header.js';
import { attempt } from '../problem.js';
import { typeBadge } from '../types.js';
import { advancedSearch } from './advanced-search.js';

/** The search shown, as the address keeps it (`#/search?q=…&type=…&shared=1`): a reload or a link repeats it. */
interface Asked {
  q: string;
  type: string;
  shared: boolean;
}

function askedOf(hash: string): Asked | null {
  const query = hash.split('?')[1];
  if (query === undefined) return null;
  const params = new URLSearchParams(query);
  return { q: params.get('q') ?? '', type: params.get('type') ?? '', shared: params.get('shared') === '1' };
}

function remember(asked: Asked): void {
  const params = new URLSearchParams({ q: asked.q });
  if (asked.type) params.set('type', asked.type);
  if (asked.shared) params.set('shared', '1');
  // Replaced, not pushed: the address follows the search without a history entry (and a redraw) per search.
  history.replaceState(null, '', `#/search?${params}`);
  last = asked;
}

/** The last search of this tab, for coming back to Search from elsewhere. */
let last: Asked | null = null;

/** Fills the type filter, keeping the type chosen (or the one the address asked for) when it is still offered. */
async function fillTypeFilter(type: HTMLSelectElement, more: string[]): Promise<void> {
  const chosen = type.value || (last?.type ?? '');
  const types = [...new Set([...(await typesInUse()), ...more])].sort();
  replace(
    type,
    h('option', { value: '' }, 'All types'),
    types.map((t) => h('option', { value: t }, t)),
  );
  type.value = types.includes(chosen) ? chosen : '';
}

/** The types to filter by: those the service knows (GET /graph-structure) and those among the results. */
let knownTypes: Promise<string[]> | null = null;
function typesInUse(): Promise<string[]> {
  knownTypes ??= request<{ nodeTypes: string[]; relationTypes: string[] }>('GET', '/graph-structure').then(
    (answer) => [...answer.body.nodeTypes, ...answer.body.relationTypes],
    () => [],
  );
  return knownTypes;
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
async function sharedWithMe(): Promise<Set<string>> {
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

/** One search for the words (everything when there are none), limited to `ids` when given. */
async function searchFor(words: string, ids: string[] | null): Promise<GraphElement[]> {
  const text =
    words.trim() === '' ? { match_all: {} } : { simple_query_string: { query: words, default_operator: 'and' } };
  const query = ids === null ? text : { bool: { must: [text], filter: [{ ids: { values: ids } }] } };
  const steps = [{ type: 'searchengine-query-dsl-mixin', query, parameters: { pageSize: 100 } }];
  return (await request<SearchResponse>('POST', '/search', { steps })).body.results;
}

/** Ids per search when limited to what was shared: well under the service's clause limit with the words. */
const IDS_PER_SEARCH = 800;

/** The search, over what others shared with the caller when `shared`, at most 100 results. */
async function find(words: string, shared: Set<string> | null): Promise<GraphElement[]> {
  if (shared === null) return searchFor(words, null);
  const ids = [...shared];
  const found: GraphElement[] = [];
  for (let i = 0; i < ids.length && found.length < 100; i += IDS_PER_SEARCH)
    found.push(...(await searchFor(words, ids.slice(i, i + IDS_PER_SEARCH))));
  return found.slice(0, 100);
}

function resultItem(element: GraphElement, words: string[]): HTMLElement {
  const other = matchingProperty(element, words);
  return h(
    'li',
    { 'data-id': element.id },
    h('a', { href: `#/${element.id}` }, highlighted(labelOf(element), words)),
    ' ',
    typeBadge(element.type),
    other ? h('div', { class: 'match' }, `${other[0]}: `, highlighted(other[1], words)) : null,
  );
}

export async function renderSearch(main: HTMLElement): Promise<void> {
  const asked = askedOf(location.hash) ?? last;
  last = asked;
  const box = h('input', { type: 'search', name: 'q', value: asked?.q ?? '', autocomplete: 'off' });
  const type = h('select', { name: 'type' }, h('option', { value: '' }, 'All types'));
  const shared = h('input', { type: 'checkbox', id: 'only-shared', checked: asked?.shared ?? false });
  const fillTypes = (more: string[]) => fillTypeFilter(type, more);
  const everything = h('input', { type: 'checkbox', id: 'show-all' });
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  let found: GraphElement[] = [];
  let sharedIds: Set<string> | null = null;
  const show = async () => {
    const words = wordsOf(box.value);
    const shown = found.filter(
      (e) => (everything.checked || (!e.start && e.type !== 'Token')) && (type.value === '' || e.type === type.value),
    );
    replace(
      results,
      h('p', { class: 'count' }, shown.length === 0 ? 'No elements match.' : `${count(shown.length, 'element')}.`),
      shown.length > 0
        ? h(
            'ol',
            { class: 'elements' },
            shown.map((e) => resultItem(e, words)),
          )
        : null,
    );
  };
  const form = h(
    'form',
    { role: 'search', 'aria-label': 'Search', class: 'plain-search' },
    field('Words to find', box, 'Any property; "quotes" for a phrase, -word to leave out, word* for a prefix.'),
    h('button', { type: 'submit', class: 'primary' }, 'Search'),
    h(
      'div',
      { class: 'filters' },
      field('Type', type),
      h('p', { class: 'checkbox' }, shared, ' ', h('label', { for: 'only-shared' }, 'Only what others shared with me')),
      h('p', { class: 'checkbox' }, everything, ' ', h('label', { for: 'show-all' }, 'Include relations and tokens')),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    remember({ q: box.value, type: type.value, shared: shared.checked });
    // A failed search leaves no earlier results under its error.
    found = [];
    replace(results);
    void attempt(results, async () => {
      if (shared.checked) sharedIds ??= await sharedWithMe();
      found = await find(box.value, shared.checked ? sharedIds : null);
      await fillTypes(found.map((e) => e.type));
      await show();
    });
  });
  type.addEventListener('change', () => remember({ q: box.value, type: type.value, shared: shared.checked }));
  for (const control of [type, everything]) control.addEventListener('change', () => void attempt(results, show));
  // What was shared is asked of the service, so that a result beyond the first page is not missed.
  shared.addEventListener('change', () => form.requestSubmit());
  const advanced = h('details', { class: 'advanced' }, h('summary', null, 'Advanced: the query pipeline (JSON)'));
  advanced.addEventListener('toggle', () => {
    if (advanced.open && advanced.childElementCount === 1) void advancedSearch().then((view) => advanced.append(view));
  });
  replace(
    main,
    h('h1', { tabindex: '-1' }, 'Search'),
    form,
    h('section', { 'aria-labelledby': 'results-heading' }, h('h2', { id: 'results-heading' }, 'Results'), results),
    advanced,
  );
  await fillTypes([]);
  if (asked) form.requestSubmit();
}
