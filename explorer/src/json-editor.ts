// The JSON editor: a labelled textarea that checks the text as it is typed and shows where it stops being JSON.
// A native textarea keeps what assistive technology and the keyboard expect (Tab leaves it, the label is read),
// and the documents it edits are small (an element's data is at most 64 KiB by default).
import { h, uid } from './dom.js';

interface JsonEditor {
  element: HTMLElement;
  /** The parsed value, or undefined (with the reason shown) when the text is not valid JSON of the wanted kind. */
  value(): unknown;
  setValue(value: unknown): void;
}

export function jsonEditor(
  label: string,
  initial: unknown,
  options: { rows?: number; objectOnly?: boolean } = {},
): JsonEditor {
  const id = uid('json');
  const textarea = h('textarea', {
    id,
    class: 'json',
    rows: options.rows ?? 10,
    spellcheck: 'false',
    autocapitalize: 'off',
    'aria-describedby': `${id}-status`,
  });
  const status = h('p', { id: `${id}-status`, class: 'json-status', 'aria-live': 'polite' });
  const check = (): unknown => {
    try {
      const parsed: unknown = JSON.parse(textarea.value);
      if (options.objectOnly && (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)))
        throw new Error('Expected a JSON object ({ … }).');
      textarea.removeAttribute('aria-invalid');
      status.textContent = 'Valid JSON.';
      status.className = 'json-status ok';
      return parsed;
    } catch (error) {
      textarea.setAttribute('aria-invalid', 'true');
      status.textContent = `Not valid: ${(error as Error).message}${positionOf(textarea.value, error as Error)}`;
      status.className = 'json-status invalid';
      return undefined;
    }
  };
  textarea.addEventListener('input', () => check());
  const setValue = (value: unknown) => {
    textarea.value = JSON.stringify(value, null, 2);
    check();
  };
  setValue(initial);
  return {
    element: h('div', { class: 'field' }, h('label', { for: id }, label), textarea, status),
    value: check,
    setValue,
  };
}

/** " (line L, column C)" when the parser's message names a position. */
function positionOf(text: string, error: Error): string {
  const match = /position (\d+)/.exec(error.message);
  if (!match || /line \d+/.test(error.message)) return '';
  const before = text.slice(0, Number(match[1]));
  const line = before.split('\n').length;
  return ` (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
}
