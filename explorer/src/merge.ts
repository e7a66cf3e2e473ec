// Comparing versions of an element's properties: what a save changes (sent as a merge patch, so that nothing it
// did not change is touched, nulls included), and a three-way merge of an unsaved edit into a newer version.

type Properties = Record<string, unknown>;

/** The same JSON value, whatever the order of object keys (the service does not keep it). */
export function sameValue(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Properties)[key])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/**
 * The merge patch (RFC 7396) that turns `from` into `to`: changed and new properties, and null for each removed
 * one. Properties that did not change are left out, so a null the element holds stays as it is.
 */
export function changesBetween(from: Properties, to: Properties): Properties {
  const patch: Properties = {};
  for (const [key, value] of Object.entries(to)) if (!(key in from) || !sameValue(from[key], value)) patch[key] = value;
  for (const key of Object.keys(from)) if (!(key in to)) patch[key] = null;
  return patch;
}

/** A property both sides changed, each differently: `undefined` stands for "removed". */
export interface Conflict {
  key: string;
  mine: unknown;
  theirs: unknown;
}

/**
 * Merges my edit (made on `base`) into `theirs`, a newer version: what only I changed is mine, what only they changed
 * is theirs, and a property both changed differently is a conflict that starts as theirs. Without a known base,
 * every property that differs is a conflict. Keys keep my order, theirs new ones after.
 */
export function mergeEdit(
  base: Properties | null,
  mine: Properties,
  theirs: Properties,
): { merged: Properties; conflicts: Conflict[] } {
  const merged: Properties = {};
  const conflicts: Conflict[] = [];
  const keys = [...new Set([...Object.keys(mine), ...Object.keys(theirs)])];
  for (const key of keys) {
    const m = key in mine ? mine[key] : undefined;
    const t = key in theirs ? theirs[key] : undefined;
    const b = base && key in base ? base[key] : undefined;
    let value = t;
    if (!sameValue(m, t)) {
      if (base !== null && sameValue(t, b)) value = m;
      else if (base === null || !sameValue(m, b)) conflicts.push({ key, mine: m, theirs: t });
    }
    if (value !== undefined) merged[key] = value;
  }
  return { merged, conflicts };
}
