// The properties as a form: one row per property (key, type, value; nested values as JSON), in the user's order.
// It edits the same object as the JSON box beside it: a change on either side shows on the other.
import { h, replace, uid } from './dom.js';

type Kind = 'text' | 'number' | 'boolean' | 'null' | 'json';
const KINDS: { kind: Kind; label: string }[] = [
  { kind: 'text', label: 'Text' },
  { kind: 'number', label: 'Number' },
  { kind: 'boolean', label: 'Yes/no' },
  { kind: 'null', label: 'Empty' },
  { kind: 'json', label: 'List or object (JSON)' },
];

function kindOf(value: unknown): Kind {
  if (value === null) return 'null';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'text';
  return 'json';
}

function textOf(value: unknown, kind: Kind): string {
  if (kind === 'json') return JSON.stringify(value);
  if (kind === 'null') return '';
  return String(value);
}

interface Row {
  key: HTMLInputElement;
  kind: HTMLSelectElement;
  value: HTMLInputElement;
  element: HTMLElement;
}

/** The value a row holds, or an Error saying plainly why it is not one. */
function rowValue(row: Row): unknown {
  const text = row.value.value;
  switch (row.kind.value as Kind) {
    case 'number': {
      const n = Number(text);
      return text.trim() === '' || Number.isNaN(n) ? new Error(`“${row.key.value}” is not a number.`) : n;
    }
    case 'boolean':
      if (/^(true|yes)$/i.test(text.trim())) return true;
      if (/^(false|no)$/i.test(text.trim())) return false;
      return new Error(`“${row.key.value}” is not yes or no.`);
    case 'null':
      return null;
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return new Error(`“${row.key.value}” is not valid JSON.`);
      }
    default:
      return text;
  }
}

/** Marks the rows whose value does not fit their type, and says the first beside the form. */
function markInvalid(rows: Row[], problem: HTMLElement): void {
  let first: Error | null = null;
  for (const row of rows) {
    const v = row.key.value.trim() === '' ? null : rowValue(row);
    if (v instanceof Error) row.value.setAttribute('aria-invalid', 'true');
    else row.value.removeAttribute('aria-invalid');
    if (v instanceof Error) first ??= v;
  }
  // The JSON box is left at the last valid value: said, so that the two are not taken to agree.
  problem.textContent = first ? `${first.message} The JSON box keeps the last valid value.` : '';
}

export interface PropertyForm {
  element: HTMLElement;
  /** The object the rows make, or an Error naming the first row that is not valid. */
  value(): Record<string, unknown> | Error;
  setValue(value: Record<string, unknown>): void;
}

export function propertyForm(initial: Record<string, unknown>, onChange: () => void): PropertyForm {
  const rows: Row[] = [];
  const body = h('div', { class: 'property-rows' });
  const problem = h('p', { class: 'form-error', 'aria-live': 'polite' });
  const check = () => markInvalid(rows, problem);
  const changed = () => {
    check();
    onChange();
  };
  const makeRow = (key: string, value: unknown): Row => {
    const id = uid('prop');
    const kind = kindOf(value);
    const keyInput = h('input', { id: `${id}-key`, value: key, 'aria-label': 'Property name', autocomplete: 'off' });
    const kindSelect = h(
      'select',
      { 'aria-label': `Type of ${key || 'the new property'}` },
      KINDS.map((k) => h('option', { value: k.kind, selected: k.kind === kind }, k.label)),
    );
    const valueInput = h('input', {
      value: textOf(value, kind),
      'aria-label': `Value of ${key || 'the new property'}`,
    });
    const row: Row = { key: keyInput, kind: kindSelect, value: valueInput, element: h('div') };
    const remove = h(
      'button',
      { type: 'button', class: 'small link', 'aria-label': `Remove ${key || 'this property'}` },
      'Remove',
    );
    remove.addEventListener('click', () => {
      rows.splice(rows.indexOf(row), 1);
      row.element.remove();
      changed();
    });
    row.element = h('div', { class: 'property-row' }, keyInput, kindSelect, valueInput, remove);
    for (const control of [keyInput, kindSelect, valueInput]) control.addEventListener('input', changed);
    return row;
  };
  const setValue = (value: Record<string, unknown>) => {
    rows.splice(0, rows.length, ...Object.entries(value).map(([key, v]) => makeRow(key, v)));
    replace(
      body,
      rows.map((row) => row.element),
    );
    check();
  };
  setValue(initial);
  const addRow = () => {
    const row = makeRow('', '');
    rows.push(row);
    body.append(row.element);
    row.key.focus();
  };
  const element = h(
    'fieldset',
    { class: 'property-form' },
    h('legend', null, 'Properties as a form'),
    body,
    problem,
    h('button', { type: 'button', class: 'small', onclick: addRow }, 'Add property'),
  );
  const value = (): Record<string, unknown> | Error => {
    const result: Record<string, unknown> = {};
    for (const row of rows) {
      if (row.key.value.trim() === '') continue;
      const v = rowValue(row);
      if (v instanceof Error) return v;
      result[row.key.value.trim()] = v;
    }
    return result;
  };
  return { element, value, setValue };
}

const ORDER_KEY = 'trellis-explorer-key-order';

/**
 * The object with its keys in the order the user last saved them (the service stores JSON without key order),
 * new keys after; kept in this browser.
 */
export function inSavedOrder(id: string, value: Record<string, unknown>): Record<string, unknown> {
  const saved = (JSON.parse(localStorage.getItem(ORDER_KEY) ?? '{}') as Record<string, string[]>)[id] ?? [];
  const keys = [...saved.filter((key) => key in value), ...Object.keys(value).filter((key) => !saved.includes(key))];
  return Object.fromEntries(keys.map((key) => [key, value[key]]));
}

export function saveOrder(id: string, value: Record<string, unknown>): void {
  const all = JSON.parse(localStorage.getItem(ORDER_KEY) ?? '{}') as Record<string, string[]>;
  all[id] = Object.keys(value);
  localStorage.setItem(ORDER_KEY, JSON.stringify(all));
}
