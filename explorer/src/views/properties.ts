// An element's properties: the form and the JSON box side by side for those who may write (with unsaved edits
// kept as a draft and a warning before they are lost), a plain list for those who may only read.
import { ApiError, type GraphElement, instanceConfiguration, request } from '../api.js';
import { h } from '../dom.js';
import { dirtyElement, drafts, markDirty } from '../drafts.js';
import { jsonEditor } from '../json-editor.js';
import { type Conflict, changesBetween, mergeEdit, sameValue } from '../merge.js';
import { tell } from '../notice.js';
import { problemView } from '../problem.js';
import { inSavedOrder, propertyForm, saveOrder } from '../property-form.js';
import { mergeNotice } from './conflict.js';

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

/** What the form starts from: the stored version, or an unsaved edit, merged into it when it was made on another. */
function startingPoint(id: string, stored: Record<string, unknown>) {
  const draft = drafts.get(id);
  if (draft === undefined) return { initial: stored, conflicts: [] as Conflict[], kind: 'stored' as const };
  if (draft.base !== null && sameValue(draft.base, stored))
    return { initial: draft.value, conflicts: [] as Conflict[], kind: 'restored' as const };
  const { merged, conflicts } = mergeEdit(draft.base, draft.value, stored);
  return { initial: merged, conflicts, kind: 'merged' as const };
}

/** The object with `key` set to `value` in its place (appended when new), or removed when `value` is undefined. */
function withProperty(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return Object.fromEntries(Object.entries(object).filter(([k]) => k !== key));
  return { ...object, [key]: value };
}

/**
 * The form and the JSON box for those who may write. A save sends only what the edit changed (a merge patch, so a
 * property it did not touch stays, nulls included) and If-Match with the ETag of the version shown: the service
 * refuses a save made on a version this page did not show, and the page offers to show and merge the new one.
 */
export async function propertiesSection(
  element: GraphElement,
  etag: string | null,
  writable: boolean,
  onChanged: () => void,
): Promise<HTMLElement> {
  const stored = await editableOf(element);
  if (!writable) return readOnlyList(stored);
  const start = startingPoint(element.id, stored);
  const status = h('div', { class: 'save-status' });
  const editor = jsonEditor('Properties (JSON object)', start.initial, { rows: 12, objectOnly: true });
  const remember = (value: Record<string, unknown>) => {
    // While a choice between two versions is on screen the edit stays a draft, so that a live change cannot wipe it.
    if (sameValue(value, stored) && start.conflicts.length === 0) drafts.drop(element.id);
    else drafts.set(element.id, { value, base: stored, etag });
  };
  const form = propertyForm(start.initial, () => {
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
  const choose = (key: string, value: unknown) => {
    const current = editor.value() as Record<string, unknown> | undefined;
    const next = withProperty(current ?? start.initial, key, value);
    form.setValue(next);
    editor.setValue(next);
    remember(next);
  };
  if (start.kind === 'merged') remember(start.initial);
  markDirty(element.id);
  const section = h(
    'form',
    { 'aria-labelledby': 'properties-heading' },
    h('h2', { id: 'properties-heading' }, 'Properties'),
    start.kind === 'restored'
      ? h('p', { class: 'notice', role: 'status' }, 'Your unsaved changes are restored. Save to keep them.')
      : null,
    start.kind === 'merged' ? mergeNotice(start.conflicts, choose) : null,
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
    void save(element.id, stored, value, etag, status, onChanged);
  });
  return section;
}

/** Sends the changes from the version shown to `value`; a refusal because the element changed offers the new one. */
async function save(
  id: string,
  stored: Record<string, unknown>,
  value: Record<string, unknown>,
  etag: string | null,
  status: HTMLElement,
  onChanged: () => void,
): Promise<void> {
  const patch = changesBetween(stored, value);
  if (Object.keys(patch).length === 0) {
    drafts.drop(id);
    status.replaceChildren(h('p', { role: 'status' }, 'Nothing to save: the properties are as stored.'));
    return;
  }
  status.replaceChildren();
  try {
    await request('PATCH', `/${id}`, patch, etag ? { 'If-Match': etag } : {});
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 412) return void status.replaceChildren(problemView(error));
    status.replaceChildren(
      h(
        'div',
        { class: 'problem', role: 'alert', 'data-status': 412 },
        h('strong', null, 'Not saved: this element was changed elsewhere since you opened it'),
        ' (in another tab, or by someone else). Your edit is kept. ',
        h('button', { type: 'button', class: 'small', onclick: onChanged }, 'Show the new version'),
      ),
    );
    return;
  }
  saveOrder(id, value);
  // Typing went on while the save was on its way: that edit stays a draft, merged into the version just saved.
  const later = drafts.get(id);
  if (later !== undefined && !sameValue(later.value, value)) {
    tell('Properties saved. Your later changes are kept: save again to keep them too.');
    return onChanged();
  }
  drafts.drop(id);
  // The service keeps no null on a change (a merge patch's null removes the property): said, not hidden.
  const emptied = Object.keys(patch).filter((key) => patch[key] === null && key in value);
  tell(
    emptied.length === 0
      ? 'Properties saved.'
      : `Properties saved. Set to Empty, ${emptied.map((k) => `“${k}”`).join(', ')} ${emptied.length === 1 ? 'is' : 'are'} removed.`,
  );
  if (dirtyElement() === null) onChanged();
}
