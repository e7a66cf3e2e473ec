// Plain search: one box over every property (simple_query_string), the matching words highlighted, a type filter
// and "shared with me", Token nodes and relations hidden unless asked for. The query pipeline is under Advanced.
import { type GraphElement, labelOf, request, type SearchResponse } from '../api.js';
import { field, h, replace } from '../dom.js';
import { count } from '../format.js';
import { currentUser } from '../header.js';
import { attempt } from '../problem.js';
import { typeBadge } from '../types.js';
import { advancedSearch } from './advanced-search.js';

let lastWords = '';

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

/** Ids of what others shared with the caller: the ends of grants to them that they did not create. */
async function sharedWithMe(): Promise<Set<string>> {
  const me = await currentUser();
  if (!me) return new Set();
  const relations: GraphElement[] = [];
  let path: string | null = `/${me.id}/related`;
  for (let pages = 0; path !== null && pages < 20; pages += 1) {
    const page: { relations: GraphElement[]; links: { next: string | null } } = (await request<never>('GET', path))
      .body;
    relations.push(...page.relations.filter((r) => r.start === me.id));
    path = page.links.next;
  }
  const created = new Set(relations.filter((r) => r.type === 'CREATED').map((r) => r.end));
  return new Set(
    relations.filter((r) => r.type !== 'CREATED' && r.type !== 'IS_IN_GROUP' && !created.has(r.end)).map((r) => r.end!),
  );
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
  const box = h('input', { type: 'search', name: 'q', value: lastWords, autocomplete: 'off' });
  const type = h('select', { name: 'type' }, h('option', { value: '' }, 'All types'));
  const shared = h('input', { type: 'checkbox', id: 'only-shared' });
  const everything = h('input', { type: 'checkbox', id: 'show-all' });
  const results = h('div', { class: 'results', 'aria-live': 'polite' });
  let found: GraphElement[] = [];
  let sharedIds: Set<string> | null = null;
  const show = async () => {
    const words = wordsOf(box.value);
    if (shared.checked) sharedIds ??= await sharedWithMe();
    const shown = found.filter(
      (e) =>
        (everything.checked || (!e.start && e.type !== 'Token')) &&
        (type.value === '' || e.type === type.value) &&
        (!shared.checked || sharedIds!.has(e.id)),
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
    lastWords = box.value;
    // A failed search leaves no earlier results under its error.
    found = [];
    replace(results);
    void attempt(results, async () => {
      const query = { simple_query_string: { query: box.value, default_operator: 'and' } };
      const steps = [{ type: 'searchengine-query-dsl-mixin', query, parameters: { pageSize: 100 } }];
      found = (await request<SearchResponse>('POST', '/search', { steps })).body.results;
      const types = [...new Set(found.map((e) => e.type))].sort();
      const chosen = type.value;
      replace(
        type,
        h('option', { value: '' }, 'All types'),
        types.map((t) => h('option', { value: t }, t)),
      );
      type.value = types.includes(chosen) ? chosen : '';
      await show();
    });
  });
  for (const control of [type, shared, everything])
    control.addEventListener('change', () => void attempt(results, show));
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
  if (lastWords !== '') form.requestSubmit();
}
