// Sizes and dates as people read them.

const UNITS = ['bytes', 'KB', 'MB', 'GB', 'TB'];

/** `1.5 MB`, `312 KB`, `12 bytes`: decimal units, as file managers show them, with the exact count for a title. */
export function formatSize(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  if (unit === 0) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
  return `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

const dates = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A timestamp in the reader's locale and time zone (the text itself when it is not a date). */
export function formatDate(value: unknown): string {
  const date = new Date(String(value));
  return Number.isNaN(date.getTime()) ? String(value) : dates.format(date);
}

/** "1 element", "3 elements". */
export function count(n: number, noun: string): string {
  return `${n.toLocaleString()} ${noun}${n === 1 ? '' : 's'}`;
}
