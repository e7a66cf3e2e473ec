// An element's properties: the form and the JSON box side by side for those who may write (with unsaved edits
// kept as a draft and a warning before they are lost), a plain list for those who may only read.
import { type GraphElement, instanceConfiguration, request } from '../api.js';
import { announce, h } from '../dom.js';
import { dirtyElement, drafts, markDirty } from '../drafts.js';
import { jsonEditor } from '../json-editor.js';
import { attempt } from '../problem.js';
import { inSavedOrder, propertyForm, saveOrder } from '../property-form.js';

/** Properties the service sets: shown, never sent back (sending one is a 400 forbidden-property). */
const SERVICE_PROPERTIES = ['id', 'created', 'updated', 'file', 'hasFile'];

async function editableOf(element: GraphElement): Promise<Record<string, unknown>> {
  const reserved = new Set(SERVICE_PROPERTIES);
  if (element.type === 'User') reserved.add((await instanceConfiguration()).register.uniqueIdentifier);
  if (element.type === 'Token') reserved.add('token');
  const editable = Object.fromEntries(Object.entries(element.data).filter(([key]) => !reserved.has(key)));
  return inSavedOrder(element.id, editable);
}

function readOnlyList(values: Record<string, unknown>): HTMLElement {
  return h(
    'section',
    { 'aria-labelledby': 'properties-heading' },
    h('h2', { id: 'properties-heading' }, 'Properties'),
    h(
      'dl',
      { class: 'facts properties' },
      Object.entries(values).map(([key, value]) => [
        h('dt', null, key),
        h('dd', null, typeof value === 'string' ? value : JSON.stringify(value)),
      ]),
    ),
  );
}

export async function propertiesSection(
  element: GraphElement,
  etag: string | null,
  writable: boolean,
  onSaved: () => void,
): Promise<HTMLElement> {
  const stored = await editableOf(element);
  if (!writable) return readOnlyList(stored);
  const draft = drafts.get(element.id) as Record<string, unknown> | undefined;
  const status = h('div', { class: 'save-status' });
  const editor = jsonEditor('Properties (JSON object)', draft ?? stored, { rows: 12, objectOnly: true });
  const remember = (value: unknown) => {
    if (JSON.stringify(value) === JSON.stringify(stored)) drafts.drop(element.id);
    else drafts.set(element.id, value);
  };
  const form = propertyForm(draft ?? stored, () => {
    const value = form.value();
    if (value instanceof Error) return;
    editor.setValue(value);
    remember(value);
  });
  editor.element.querySelector('textarea')!.addEventListener('input', () => {
    const value = editor.value() as Record<string, unknown> | undefined;
    if (value === undefined) return;
    form.setValue(value);
    remember(value);
  });
  markDirty(element.id);
  const section = h(
    'form',
    { 'aria-labelledby': 'properties-heading' },
    h('h2', { id: 'properties-heading' }, 'Properties'),
    draft ? h('p', { class: 'notice', role: 'status' }, 'Your unsaved changes are restored. Save to keep them.') : null,
    h('div', { class: 'properties-editors' }, form.element, editor.element),
    h('button', { type: 'submit' }, 'Save properties'),
    status,
  );
  section.addEventListener('submit', (event) => {
    event.preventDefault();
    const fromForm = form.value();
    if (fromForm instanceof Error) return void status.replaceChildren(h('p', { role: 'alert' }, fromForm.message));
    const value = editor.value() as Record<string, unknown> | undefined;
    if (value === undefined) return;
    void attempt(status, async () => {
      // PUT replaces the client's properties; If-Match refuses (412) when someone changed the element meanwhile.
      await request('PUT', `/${element.id}`, value, etag ? { 'If-Match': etag } : {});
      drafts.drop(element.id);
      saveOrder(element.id, value);
      announce('Properties saved.');
      if (dirtyElement() === null) onSaved();
    });
  });
  return section;
}
