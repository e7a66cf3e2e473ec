// A small typed helper for building DOM trees: the views are plain functions that return elements, and the widgets
// that own their DOM (the diagram, the upload) are plain objects beside them.

type Child = Node | string | number | null | undefined | false;
/** A child, or lists of them nested as `map` produces them. */
type Children = Child | readonly Children[];
type Attribute = string | number | boolean | null | undefined | ((event: Event) => void);

/** `h('button', { type: 'button', onclick: go }, 'Go')`: attributes by name, `on*` as listeners, `true` as present. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, Attribute> | null = null,
  ...children: Children[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes ?? {})) {
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (name === 'value') (element as HTMLInputElement).value = String(value ?? '');
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: readonly Children[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, child);
    else if (child !== null && child !== undefined && child !== false)
      parent.appendChild(typeof child === 'object' ? (child as Node) : document.createTextNode(String(child)));
  }
}

/** Replaces the children of `parent`. */
export function replace(parent: Element, ...children: Children[]): void {
  parent.replaceChildren();
  append(parent, children);
}

let unique = 0;
/** An id for tying a label or a description to its control. */
export function uid(prefix: string): string {
  unique += 1;
  return `${prefix}-${unique}`;
}

/** A labelled form control: the label, the control and an optional hint, tied together for assistive technology. */
export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
) {
  control.id ||= uid('f');
  const hintElement = hint ? h('small', { id: `${control.id}-hint`, class: 'hint' }, hint) : null;
  if (hintElement) control.setAttribute('aria-describedby', hintElement.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintElement);
}

/** Says `message` to screen readers (and shows it in the status line). */
export function announce(message: string): void {
  const announcer = document.getElementById('announcer');
  if (announcer) announcer.textContent = message;
}
