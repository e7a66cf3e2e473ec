// A message for the next view (what a delete left behind, say): shown once at the top of <main>, then gone.
import { announce, h } from './dom.js';

let pending: { text: string; items: string[] } | null = null;

export function setNotice(text: string, items: string[] = []): void {
  pending = { text, items };
}

/** An outcome said aloud and shown on the view drawn next (signed in, uploaded, created), not only to a screen reader. */
export function tell(text: string): void {
  announce(text);
  setNotice(text);
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
