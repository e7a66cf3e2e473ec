// The backup folder format of the reference implementation, shared by backup:create and backup:load; its layout and
// what a backup carries inside `data` are in docs/operations.md ("Backups"). `load` accepts any folder structure
// below node/, relation/ and file/; `create` writes one layout, sharded by the first two characters of the id, with
// a fixed key order, so that the same database state always gives the same bytes.
import { join } from 'node:path';
import { isPlainObject, isUuid } from '../values.js';

export const SUMMARY_FILE = 'summary.json';
export const NODE_DIR = 'node';
export const RELATION_DIR = 'relation';
export const FILE_DIR = 'file';
export const BACKUP_VERSION = 'dev';
/** The reference implementation's version of this format (its summary.json says so; the fixture's is 0.0.28). */
export const BACKUP_FORMAT_VERSION = '0.0.28';

export interface BackupElement {
  type: string;
  id: string;
  start?: string;
  end?: string;
  data: Record<string, unknown>;
}

export interface BackupSummary {
  backupCreated: string;
  nodeCount: number;
  relationCount: number;
  fileCount: number;
  hostname: string;
  version: string;
  backupVersion?: string;
}

/**
 * A backup that cannot be loaded; `file` is the path (relative to the backup folder) of the offending file. The
 * message is one line: a path with control characters in its name is quoted.
 */
export class BackupError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${/[\u0000-\u001f\u007f]/.test(file) ? JSON.stringify(file) : file}: ${message}`);
    this.name = 'BackupError';
  }
}

/**
 * A value of a backup as an error message shows it: short, and never by serializing a whole object or array (one
 * nested thousands of levels deep would overflow the stack, a large one would flood the terminal).
 */
export function preview(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** The JSON object that `file` (its path inside the backup, for messages) holds; anything else is a BackupError. */
export function parseJsonObject(file: string, text: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new BackupError(file, `not valid JSON (${(error as Error).message})`);
  }
  if (!isPlainObject(json)) throw new BackupError(file, 'must hold a JSON object');
  return json;
}

/** Token states a backup may carry. EXPIRED comes from the reference implementation. */
export const TOKEN_STATES = ['ACTIVE', 'REVOKED', 'EXPIRED'] as const;
export type BackupTokenState = (typeof TOKEN_STATES)[number];

const shard = (id: string) => id.slice(0, 2);

/** Where `create` writes an element, relative to the backup folder. */
export const elementPath = (isRelation: boolean, id: string) =>
  join(isRelation ? RELATION_DIR : NODE_DIR, shard(id), `${id}.json`);

/** Where `create` writes the bytes of an element's file, relative to the backup folder. */
export const filePath = (id: string) => join(FILE_DIR, shard(id), id);

/** The element id a file below file/ belongs to: its name up to the first dot, when that is a UUID. */
export function fileOwnerId(name: string): string | null {
  const base = name.split('.')[0]!;
  return isUuid(base) ? base.toLowerCase() : null;
}

/** A copy of a JSON value with the keys of every object sorted (code unit order), for byte-stable output. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
  return out;
}

/** The bytes of one element file. */
export function serializeElement(element: BackupElement): string {
  const ordered: BackupElement =
    element.start === undefined
      ? { type: element.type, id: element.id, data: sortKeys(element.data) as Record<string, unknown> }
      : {
          type: element.type,
          id: element.id,
          start: element.start,
          end: element.end!,
          data: sortKeys(element.data) as Record<string, unknown>,
        };
  return `${JSON.stringify(ordered, null, 2)}\n`;
}

/** "YYYY-MM-DD HH:MM:SS UTC", as the reference writes `backupCreated`. */
export function summaryTime(date: Date): string {
  return date
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, ' UTC');
}
