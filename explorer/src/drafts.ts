// Unsaved edits of an element's properties. They are kept in the tab's session storage, so that an edit survives
// signing in again after the sign-in ended; leaving the page on purpose (after the warning) drops it. Each edit
// keeps the version it was made on (its properties and ETag): a newer version is merged with it, never overwritten.

const KEY = 'trellis-explorer-drafts';

/** An unsaved edit, the properties it was made on and their ETag (null for an edit kept before these were). */
export interface Draft {
  value: Record<string, unknown>;
  base: Record<string, unknown> | null;
  etag: string | null;
}

function all(): Record<string, unknown> {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) ?? '{}') as Record<string, unknown>;
  } catch {
    return {};
  }
}

function isDraft(entry: unknown): entry is Draft {
  return typeof entry === 'object' && entry !== null && 'value' in entry && 'base' in entry && 'etag' in entry;
}

export const drafts = {
  get(id: string): Draft | undefined {
    const entry = all()[id];
    if (entry === undefined) return undefined;
    return isDraft(entry) ? entry : { value: entry as Record<string, unknown>, base: null, etag: null };
  },
  set(id: string, draft: Draft): void {
    sessionStorage.setItem(KEY, JSON.stringify({ ...all(), [id]: draft }));
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
