// One element: its properties in the JSON editor, its parents, children and related elements, the neighbourhood
// on the diagram, forms to create children and relations and to share it, its file, and deletion.
import {
  type Collection,
  createElement,
  type GraphElement,
  getElement,
  instanceConfiguration,
  labelOf,
  request,
} from '../api.js';
import { Diagram } from '../diagram.js';
import { announce, field, h, replace } from '../dom.js';
import { jsonEditor } from '../json-editor.js';
import { attempt, problemView } from '../problem.js';
import { navigate } from '../router.js';
import { typeBadge } from '../types.js';
import { collectionSection } from './collection.js';
import { fileSection } from './file.js';

/** Properties the service sets: shown, never sent back (sending one is a 400 forbidden-property). */
const SERVICE_PROPERTIES = ['id', 'created', 'updated', 'file', 'hasFile'];

/** The relation types that grant access, offered when sharing and revocable from the parents list. */
const GRANT_TYPES = [
  'OWNS',
  'HAS_READ_ACCESS',
  'HAS_SEARCH_ACCESS',
  'HAS_CREATE_ACCESS',
  'HAS_UPDATE_ACCESS',
  'HAS_DELETE_ACCESS',
];

// One diagram while the user goes from element to element: following nodes adds their neighbourhoods to the same
// picture. Coming from another view starts a new one.
let diagram: Diagram | null = null;

/** Drops the diagram, so that the next element view starts from that element alone. */
export function forgetDiagram(): void {
  diagram?.destroy();
  diagram = null;
}

function sharedDiagram(): Diagram {
  diagram ??= new Diagram('Neighbourhood diagram', (id) => navigate(`#/${id}`));
  return diagram;
}

/** Renders the element again, unless the user has moved on to another view meanwhile (an upload ends late, say). */
function refresh(main: HTMLElement, id: string): void {
  if (location.hash.toLowerCase() === `#/${id}`) void renderElement(main, id);
}

export async function renderElement(main: HTMLElement, id: string): Promise<void> {
  const shown = location.hash;
  let answer: Awaited<ReturnType<typeof getElement>>;
  try {
    answer = await getElement(id);
  } catch (error) {
    if (location.hash !== shown) return;
    replace(
      main,
      h('h1', { tabindex: '-1' }, 'Element'),
      problemView(error),
      h('p', null, h('a', { href: '#/' }, 'Back to the index')),
    );
    return;
  }
  // A slow answer for a view the user has already left is dropped.
  if (location.hash !== shown) return;
  const element = answer.body;
  const etag = answer.headers.get('etag');
  const view = sharedDiagram();
  view.add([element]);
  const addPage = (page: Collection) => {
    view.add([...page.nodes, ...page.relations]);
    view.focus(id);
  };
  if (element.start && element.end) void loadEnds(element, view);

  const heading = h('h1', { tabindex: '-1' }, labelOf(element), ' ', typeBadge(element.type));
  replace(
    main,
    heading,
    factsList(element),
    h(
      'div',
      { class: 'element-layout' },
      h(
        'div',
        { class: 'element-main' },
        await propertiesSection(element, etag),
        fileSection(element, () => refresh(main, id)),
        collections(main, id, addPage),
      ),
      h(
        'div',
        { class: 'element-side' },
        diagramSection(element, view),
        element.start ? null : createChildSection(id),
        element.start ? null : createRelationSection(id),
        shareSection(id),
        deleteSection(element),
      ),
    ),
  );
  view.focus(id);
}

/** Id, the ends of a relation, and when it was created and updated. */
function factsList(element: GraphElement): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    h('dt', null, 'Id'),
    h('dd', null, h('code', null, element.id)),
    element.start
      ? [h('dt', null, 'Start'), h('dd', null, h('a', { href: `#/${element.start}` }, element.start))]
      : null,
    element.end ? [h('dt', null, 'End'), h('dd', null, h('a', { href: `#/${element.end}` }, element.end))] : null,
    ['created', 'updated'].map((key) =>
      element.data[key] ? [h('dt', null, key), h('dd', null, String(element.data[key]))] : null,
    ),
  );
}

/** Parents (a grant to this element can be revoked there), children and related elements, each page drawn. */
function collections(main: HTMLElement, id: string, addPage: (page: Collection) => void): HTMLElement {
  const relationActions = (relation: GraphElement) =>
    relation.end === id && GRANT_TYPES.includes(relation.type) ? revokeButton(relation, main) : null;
  return h(
    'div',
    { class: 'collections' },
    collectionSection({
      heading: 'Parents',
      path: `/${id}/parents`,
      anchor: id,
      relationActions,
      onPage: addPage,
    }),
    collectionSection({ heading: 'Children', path: `/${id}/children`, anchor: id, onPage: addPage }),
    collectionSection({ heading: 'Related', path: `/${id}/related`, anchor: id, onPage: addPage }),
  );
}

function diagramSection(element: GraphElement, view: Diagram): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': 'diagram-heading' },
    h('h2', { id: 'diagram-heading' }, 'Diagram'),
    view.element,
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          view.clear();
          view.add([element]);
          view.focus(element.id);
        },
      },
      'Reset diagram',
    ),
  );
}

async function loadEnds(relation: GraphElement, view: Diagram): Promise<void> {
  const ends = await Promise.allSettled([getElement(relation.start!), getElement(relation.end!)]);
  view.add([...ends.flatMap((end) => (end.status === 'fulfilled' ? [end.value.body] : [])), relation]);
}

async function propertiesSection(element: GraphElement, etag: string | null): Promise<HTMLElement> {
  const reserved = new Set(SERVICE_PROPERTIES);
  if (element.type === 'User') reserved.add((await instanceConfiguration()).register.uniqueIdentifier);
  if (element.type === 'Token') reserved.add('token');
  const editable = Object.fromEntries(Object.entries(element.data).filter(([key]) => !reserved.has(key)));
  const editor = jsonEditor('Properties (JSON object)', editable, { rows: 12, objectOnly: true });
  const status = h('div', { class: 'save-status' });
  const form = h(
    'form',
    { 'aria-labelledby': 'properties-heading' },
    h('h2', { id: 'properties-heading' }, 'Properties'),
    editor.element,
    h('button', { type: 'submit' }, 'Save properties'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = editor.value();
    if (value === undefined) return;
    void attempt(status, async () => {
      // PUT replaces the client's properties; If-Match refuses (412) when someone changed the element meanwhile.
      await request('PUT', `/${element.id}`, value, etag ? { 'If-Match': etag } : {});
      announce('Properties saved.');
      navigate(`#/${element.id}`);
    });
  });
  return form;
}

function typeInput(): HTMLInputElement {
  return h('input', { name: 'type', required: true, pattern: '[A-Za-z][A-Za-z0-9_]*', autocomplete: 'off' });
}

function createChildSection(parent: string): HTMLElement {
  const type = typeInput();
  const data = jsonEditor('Properties of the child', {}, { rows: 3, objectOnly: true });
  const status = h('div');
  const form = h(
    'form',
    { 'aria-labelledby': 'child-heading', class: 'compact' },
    h('h2', { id: 'child-heading' }, 'New child'),
    field('Type', type),
    data.element,
    h('button', { type: 'submit' }, 'Create child'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = data.value();
    if (value === undefined) return;
    void attempt(status, async () => {
      const id = await createElement({ type: type.value, data: value }, parent);
      announce('Child created.');
      navigate(`#/${id}`);
    });
  });
  return form;
}

function createRelationSection(self: string): HTMLElement {
  const type = typeInput();
  const other = h('input', { name: 'other', required: true, autocomplete: 'off' });
  const direction = h(
    'select',
    { name: 'direction' },
    h('option', { value: 'out' }, 'from this element to the other'),
    h('option', { value: 'in' }, 'from the other element to this'),
  );
  const status = h('div');
  const form = h(
    'form',
    { 'aria-labelledby': 'relation-heading', class: 'compact' },
    h('h2', { id: 'relation-heading' }, 'New relation'),
    field('Relation type', type),
    field('Other element id', other),
    field('Direction', direction),
    h('button', { type: 'submit' }, 'Create relation'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const [start, end] = direction.value === 'out' ? [self, other.value.trim()] : [other.value.trim(), self];
    void attempt(status, async () => {
      await createElement({ type: type.value, start, end, data: {} });
      announce('Relation created.');
      navigate(`#/${self}`);
    });
  });
  return form;
}

function shareSection(id: string): HTMLElement {
  const principal = h('input', { name: 'principal', required: true, autocomplete: 'off' });
  const grant = h(
    'select',
    { name: 'grant' },
    GRANT_TYPES.map((type) => h('option', { value: type }, type)),
  );
  const status = h('div');
  const form = h(
    'form',
    { 'aria-labelledby': 'share-heading', class: 'compact' },
    h('h2', { id: 'share-heading' }, 'Share'),
    field('User or group id', principal, 'The id the other user sees on their Account page.'),
    field('Access', grant),
    h('button', { type: 'submit' }, 'Share'),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void attempt(status, async () => {
      await createElement({ type: grant.value, start: principal.value.trim(), end: id, data: {} });
      announce(`Shared: ${grant.value}.`);
      navigate(`#/${id}`);
    });
  });
  return form;
}

/** A confirmation in a modal dialog: resolves true when the user confirms. */
function confirmDialog(question: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = h(
      'dialog',
      { 'aria-labelledby': 'confirm-text' },
      h('p', { id: 'confirm-text' }, question),
      h(
        'form',
        { method: 'dialog' },
        h('button', { value: 'cancel', autofocus: true }, 'Cancel'),
        ' ',
        h('button', { value: 'confirm', class: 'danger' }, confirmLabel),
      ),
    );
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'confirm');
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

function revokeButton(relation: GraphElement, main: HTMLElement): HTMLElement {
  const status = h('span');
  return h(
    'span',
    null,
    ' ',
    h(
      'button',
      {
        type: 'button',
        class: 'small danger',
        'aria-label': `Revoke ${relation.type} from ${relation.start}`,
        onclick: async () => {
          if (!(await confirmDialog(`Revoke the ${relation.type} grant from ${relation.start}?`, 'Revoke'))) return;
          await attempt(status, async () => {
            await request('DELETE', `/${relation.id}`);
            announce(`${relation.type} revoked.`);
            if (relation.end) refresh(main, relation.end);
          });
        },
      },
      'Revoke',
    ),
    status,
  );
}

function deleteSection(element: GraphElement): HTMLElement {
  const status = h('div');
  return h(
    'section',
    { 'aria-labelledby': 'delete-heading', class: 'compact' },
    h('h2', { id: 'delete-heading' }, 'Delete'),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: async () => {
          const question = `Delete ${labelOf(element)} (${element.type})${element.file ? ' and its file' : ''}?`;
          if (!(await confirmDialog(question, 'Delete'))) return;
          await attempt(status, async () => {
            await request('DELETE', `/${element.id}`);
            diagram?.clear();
            announce('Deleted.');
            navigate('#/');
          });
        },
      },
      'Delete element',
    ),
    status,
  );
}
