// Unsaved edits of an element's properties. They are kept in the tab's session storage, so that an edit survives
// signing in again after the sign-in ended; leaving the page on purpose (after the warning) drops it.

const KEY = 'trellis-explorer-drafts';

function all(): Record<string, unknown> {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? '{}') as Record<string, unknown>;
  } catch {
    return {};
  }
}

export const drafts = {
  get(id: string): unknown {
    return all()[id];
  },
  set(id: string, value: unknown): void {
    sessionStorage.setItem(KEY, JSON.stringify({ ...all(), [id]: value }));
  },
  drop(id: string): void {
    const { [id]: _dropped, ...rest } = all();
    sessionStorage.setItem(KEY, JSON.stringify(rest));
  },
  has(id: string): boolean {
    return id in all();
  },
};

/** The element whose unsaved edit is on the page now (null when none): what the navigation guard asks about. */
let dirty: string | null = null;

export function markDirty(id: string | null): void {
  dirty = id;
}

export function dirtyElement(): string | null {
  return dirty !== null && drafts.has(dirty) ? dirty : null;
}
