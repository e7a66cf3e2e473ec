// Forms to create a child (staying on the parent with "Create another", or opening the child) and a relation to a
// node found by its name; the type rule is stated next to the field instead of the browser's pattern message.
import { createElement, type GraphElement, getElement, labelOf, request, type SearchResponse } from '../api.js';
import { announce, field, h, replace, uid } from '../dom.js';
import { jsonEditor } from '../json-editor.js';
import { tell } from '../notice.js';
import { attempt } from '../problem.js';
import { saveOrder } from '../property-form.js';
import { navigate } from '../router.js';
import { typeBadge } from '../types.js';

const TYPE_RULE = /^[A-Za-z][A-Za-z0-9_]*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TYPE_HINT = 'A letter, then letters, digits or _ (for example Note or Folder).';
const RELATION_HINT = 'A letter, then letters, digits or _, usually in capitals, such as FOLLOWS or HAS_TAG.';

/** A type field that states its rule and says plainly when the text breaks it. */
export function typeField(label: string, hint = TYPE_HINT) {
  const input = h('input', { name: 'type', required: true, autocomplete: 'off' });
  const element = field(label, input, hint);
  const check = (): string | null => {
    const ok = TYPE_RULE.test(input.value);
    input.setCustomValidity(ok ? '' : `Not a valid type. ${TYPE_HINT}`);
    if (ok) input.removeAttribute('aria-invalid');
    else input.setAttribute('aria-invalid', 'true');
    return ok ? input.value : null;
  };
  input.addEventListener('input', () => {
    if (input.value !== '') check();
  });
  return { element, input, check };
}

export function createChildSection(parent: string): HTMLElement {
  const type = typeField('Type');
  const data = jsonEditor('Properties of the child', {}, { rows: 3, objectOnly: true });
  const status = h('div', { role: 'status' });
  const create = async (another: boolean) => {
    const value = data.value();
    if (type.check() === null || value === undefined) return type.input.reportValidity();
    await attempt(status, async () => {
      const id = await createElement({ type: type.input.value, data: value }, parent);
      saveOrder(id, value as Record<string, unknown>);
      if (!another) {
        tell('Child created.');
        return navigate(`#/${id}`);
      }
      announce('Child created.');
      data.setValue({});
      replace(
        status,
        'Created ',
        h('a', { href: `#/${id}` }, labelOf({ id, type: type.input.value, data: value as Record<string, unknown> })),
        '. Add another, or open it.',
      );
      type.input.focus();
    });
  };
  const form = h(
    'form',
    { 'aria-labelledby': 'child-heading', class: 'compact', novalidate: true },
    h('h2', { id: 'child-heading' }, 'New child'),
    type.element,
    data.element,
    h('button', { type: 'submit' }, 'Create child'),
    ' ',
    h('button', { type: 'button', onclick: () => void create(true) }, 'Create another'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void create(false);
  });
  return form;
}

/** The words as a person types them: the last one may be the start of a word ("Budg" finds "Budget"). */
function asTyped(words: string): string {
  return /[\p{L}\p{N}]$/u.test(words) ? `${words}*` : words;
}

/** Nodes whose properties match the words, for picking the other end of a relation. */
async function findNodes(words: string): Promise<GraphElement[]> {
  const steps = [
    {
      type: 'searchengine-query-dsl-mixin',
      query: { simple_query_string: { query: asTyped(words), default_operator: 'and' } },
      parameters: { pageSize: 10 },
    },
  ];
  const answer = await request<SearchResponse>('POST', '/search', { steps });
  return answer.body.results.filter((node) => !node.start && node.type !== 'Token');
}

/** An input that searches nodes by name and keeps the one picked. */
function nodePicker(self: string) {
  const input = h('input', { name: 'other', autocomplete: 'off', type: 'search' });
  const listId = uid('picks');
  const choices = h('ul', { id: listId, class: 'picks', 'aria-label': 'Matching elements' });
  let picked: GraphElement | null = null;
  const pick = (node: GraphElement) => {
    picked = node;
    input.value = labelOf(node);
    replace(choices, h('li', null, 'Chosen: ', h('strong', null, labelOf(node)), ' ', typeBadge(node.type)));
  };
  const search = () =>
    void attempt(choices, async () => {
      picked = null;
      const nodes = (await findNodes(input.value.trim())).filter((node) => node.id !== self);
      replace(
        choices,
        nodes.length === 0
          ? h('li', null, 'No element matches.')
          : nodes.map((node) =>
              h(
                'li',
                null,
                h('button', { type: 'button', class: 'link', onclick: () => pick(node) }, labelOf(node)),
                ' ',
                typeBadge(node.type),
              ),
            ),
      );
    });
  let timer = 0;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const text = input.value.trim();
    // A pasted id is taken as it is, when the caller may read that element.
    if (UUID.test(text)) void getElement(text.toLowerCase()).then((answer) => pick(answer.body), search);
    else if (text.length >= 2) timer = window.setTimeout(search, 250);
  });
  const element = h('div', null, field('Other element (search by name)', input), choices);
  return { element, picked: () => picked };
}

export function createRelationSection(self: string): HTMLElement {
  const type = typeField('Relation type', RELATION_HINT);
  const other = nodePicker(self);
  const direction = h(
    'select',
    { name: 'direction' },
    h('option', { value: 'out' }, 'from this element to the other'),
    h('option', { value: 'in' }, 'from the other element to this'),
  );
  const status = h('div');
  const form = h(
    'form',
    { 'aria-labelledby': 'relation-heading', class: 'compact', novalidate: true },
    h('h2', { id: 'relation-heading' }, 'New relation'),
    type.element,
    other.element,
    field('Direction', direction),
    h('button', { type: 'submit' }, 'Create relation'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void attempt(status, async () => {
      if (type.check() === null) throw new Error(`The relation type is not valid. ${RELATION_HINT}`);
      const target = other.picked();
      if (!target) throw new Error('Search for the other element by name and choose it from the list.');
      const [start, end] = direction.value === 'out' ? [self, target.id] : [target.id, self];
      await createElement({ type: type.input.value, start, end, data: {} });
      tell(
        direction.value === 'out'
          ? `Relation created: this ${type.input.value} ${labelOf(target)}.`
          : `Relation created: ${labelOf(target)} ${type.input.value} this.`,
      );
      navigate(`#/${self}`);
    });
  });
  return form;
}
