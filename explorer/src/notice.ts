// A message for the next view (what a delete left behind, say): shown once at the top of <main>, then gone.
import { h } from './dom.js';

let pending: { text: string; items: string[] } | null = null;

export function setNotice(text: string, items: string[] = []): void {
  pending = { text, items };
}

/** The pending message as an element (null when there is none); taking it clears it. */
export function takeNotice(): HTMLElement | null {
  if (pending === null) return null;
  const { text, items } = pending;
  pending = null;
  return h(
    'div',
    { class: 'notice', role: 'status' },
    text,
    items.length > 0
      ? h(
          'ul',
          null,
          items.map((item) => h('li', null, item)),
        )
      : null,
  );
}
