// A confirmation in a modal dialog: a question, what it means, and two buttons; resolves true on confirm.
import { h } from '../dom.js';

type Content = Node | string | null;

export function confirmDialog(question: string, confirmLabel: string, ...details: Content[]): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = h(
      'dialog',
      { 'aria-labelledby': 'confirm-text' },
      h('p', { id: 'confirm-text' }, h('strong', null, question)),
      ...details,
      h(
        'form',
        { method: 'dialog', class: 'buttons' },
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
