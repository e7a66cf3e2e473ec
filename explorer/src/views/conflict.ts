// An unsaved edit met a newer version: the notice that says so, and for each property both changed, a choice
// between the new version's value and the person's own, the new version's chosen until they pick theirs.
import { h, uid } from '../dom.js';
import type { Conflict } from '../merge.js';

function shown(value: unknown): string {
  if (value === undefined) return '(removed)';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The notice above the form after a merge, with the choices when both sides changed the same properties. */
export function mergeNotice(conflicts: Conflict[], choose: (key: string, value: unknown) => void): HTMLElement {
  return h(
    'div',
    { class: 'notice merge', role: 'status' },
    h(
      'p',
      null,
      h('strong', null, 'This element was changed elsewhere while you edited it'),
      ' (in another tab, or by someone else). Shown is the new version with your changes in it. ',
      'Nothing is saved until you save.',
    ),
    conflicts.length === 0 ? null : h('p', null, 'You both changed these properties: choose which value to keep.'),
    conflicts.map((conflict) => choice(conflict, choose)),
  );
}

function choice(conflict: Conflict, choose: (key: string, value: unknown) => void): HTMLElement {
  const name = uid('conflict');
  const option = (label: string, value: unknown, checked: boolean) => {
    const id = uid('choice');
    const input = h('input', { type: 'radio', name, id, checked });
    input.addEventListener('change', () => choose(conflict.key, value));
    return h('div', { class: 'checkbox' }, input, ' ', h('label', { for: id }, `${label}: ${shown(value)}`));
  };
  return h(
    'fieldset',
    { class: 'conflict', 'data-key': conflict.key },
    h('legend', null, `“${conflict.key}”`),
    option('New version', conflict.theirs, true),
    option('Yours', conflict.mine, false),
  );
}
