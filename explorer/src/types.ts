// Element types by colour, the same in lists and on the diagram.
import { h } from './dom.js';

/** A colour per type, stable across sessions: a hue from the type's name, dark enough for white text. */
export function colourOf(type: string): string {
  let hash = 0;
  for (const char of type) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return `hsl(${hash % 360}, 60%, 28%)`;
}

/** The type as a coloured badge (set through the CSSOM: the page's CSP allows no inline style attributes). */
export function typeBadge(type: string): HTMLElement {
  const badge = h('span', { class: 'type' }, type);
  badge.style.backgroundColor = colourOf(type);
  return badge;
}
