// What one element may hold. Writing an element builds its search document in the same transaction, at a cost that
// grows with every key, array item and word of its data; on the embedded database that work holds up every other
// request. These limits bound it (the element.* settings; SECURITY.md gives the worst case they allow).
import { Problem } from '../../errors.js';
import { isPlainObject } from '../../values.js';

export interface DataLimits {
  /** Bytes of the data as the database prints it: JSON with a space after each ':' and ','. */
  maxDataSizeInBytes: number;
  /** Levels of objects and arrays inside data (data itself is level 1). */
  maxNestingDepth: number;
  /** Items of any one array. */
  maxArrayLength: number;
  /** Keys of objects and items of arrays, at every level, together. */
  maxValues: number;
}

/** The SQLSTATE and hint prefix of trellis_checked_data (schema/tables.ts), which checks a merged element. */
const DATA_LIMIT_SQLSTATE = '54000';
const DATA_LIMIT_HINT = 'trellis:';

const tooLarge = (what: string, rule: string) => new Problem('bad-content', `'${what}' ${rule}.`);

/** Refuses `data` (400 bad-content naming the limit) when it exceeds one of `limits`. */
export function checkDataLimits(data: Record<string, unknown>, limits: DataLimits, what = 'data'): void {
  let values = 0;
  let bytes = 0;
  const walk = (value: unknown, depth: number): void => {
    if (Array.isArray(value) || isPlainObject(value)) {
      if (depth > limits.maxNestingDepth)
        throw tooLarge(what, `nests objects and arrays more than ${limits.maxNestingDepth} levels deep`);
      const entries = Array.isArray(value) ? value.map((v) => [null, v] as const) : Object.entries(value);
      if (Array.isArray(value) && value.length > limits.maxArrayLength)
        throw tooLarge(
          what,
          `holds an array of ${value.length} items; an array holds at most ${limits.maxArrayLength}`,
        );
      values += entries.length;
      if (values > limits.maxValues)
        throw tooLarge(what, `holds more than ${limits.maxValues} keys and array items together`);
      // Brackets, and a ', ' between items; each key is its JSON string and ': '.
      bytes += 2 + Math.max(0, entries.length - 1) * 2;
      for (const [key, item] of entries) {
        if (key !== null) bytes += Buffer.byteLength(JSON.stringify(key)) + 2;
        walk(item, depth + 1);
      }
    } else bytes += Buffer.byteLength(JSON.stringify(value) ?? 'null');
  };
  walk(data, 1);
  if (bytes > limits.maxDataSizeInBytes)
    throw tooLarge(what, `is ${bytes} bytes as stored; an element holds at most ${limits.maxDataSizeInBytes} bytes`);
}

/** The limits checked by the database on a merged element, as the parameters of trellis_checked_data. */
export const mergedLimitParams = (limits: DataLimits): [number, number] => [
  limits.maxDataSizeInBytes,
  limits.maxValues,
];

/** The 400 for trellis_checked_data's error, or null when `error` is something else. */
export function dataLimitProblem(error: unknown, limits: DataLimits): Problem | null {
  const e = error as { code?: string; hint?: string };
  if (e?.code !== DATA_LIMIT_SQLSTATE || !e.hint?.startsWith(DATA_LIMIT_HINT)) return null;
  return e.hint === `${DATA_LIMIT_HINT}maxValues`
    ? tooLarge('data', `would hold more than ${limits.maxValues} keys and array items together after the change`)
    : tooLarge('data', `would be more than ${limits.maxDataSizeInBytes} bytes as stored after the change`);
}
