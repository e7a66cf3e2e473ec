// One element file of a backup: parsed, checked and split into what the service stores where. backup:load parses
// every file with it once; the relations it holds back until after its pass are parsed again (and must keep their id).
import { hashToken, TOKEN_PATTERN } from '../domain/accounts/tokens.js';
import { checkDataLimits, type DataLimits } from '../domain/elements/data-limits.js';
import type { FileMeta } from '../domain/files/types.js';
import { Problem } from '../errors.js';
import { isPlainObject, isUuid } from '../values.js';
import { BackupError, type BackupTokenState, parseJsonObject, preview, TOKEN_STATES } from './format.js';

interface ParsedToken {
  hash: string | null;
  state: BackupTokenState;
  expires: string | null;
}

export interface ParsedElement {
  id: string;
  type: string;
  start: string | null;
  end: string | null;
  data: Record<string, unknown>;
  internal: Record<string, unknown>;
  created: string | null;
  updated: string | null;
  /** undefined: the backup gives no file metadata. */
  fileMeta: FileMeta | undefined;
  identifier?: string;
  passwordHash?: string | null;
  token?: ParsedToken;
}

// ISO 8601 with a date, a time and an offset: without an offset the instant would depend on the server's zone.
const ISO_TIME = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}(?::?\d{2})?)$/;

function isoTimeOf(file: string, key: string, value: unknown): string {
  const m = typeof value === 'string' ? ISO_TIME.exec(value) : null;
  // Date.parse checks the calendar (no February 30th); it only needs milliseconds, PostgreSQL keeps the rest.
  const normalized = m
    ? `${m[1]}T${m[2]!.replace(/(\.\d{3})\d+$/, '$1')}${m[3]!.length === 3 ? `${m[3]}:00` : m[3]}`
    : '';
  if (!m || Number.isNaN(Date.parse(normalized)))
    throw new BackupError(file, `'${key}' must be an ISO 8601 timestamp with an offset, got ${preview(value)}`);
  return value as string;
}

// PostgreSQL's jsonb cannot hold U+0000; reject it here rather than failing in the middle of the load.
const NUL_ESCAPE = /(^|[^\\])(\\\\)*\\u0000/;

function parseFileMeta(file: string, value: unknown): FileMeta {
  const fail = (why: string): never => {
    throw new BackupError(file, `'file' metadata ${why}`);
  };
  if (!isPlainObject(value)) return fail('must be an object');
  const { contentLength, extension, mimeType, hash } = value;
  if (!Number.isSafeInteger(contentLength) || (contentLength as number) < 0)
    fail('needs a non-negative integer contentLength');
  if (typeof extension !== 'string') fail('needs a string extension');
  if (typeof mimeType !== 'string') fail('needs a string mimeType');
  let sha256: string | null = null;
  if (hash !== undefined && hash !== null) {
    if (!isPlainObject(hash)) return fail("has a 'hash' that is not an object");
    if (hash.sha256 !== undefined && hash.sha256 !== null) {
      if (typeof hash.sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(hash.sha256))
        fail('has a hash.sha256 that is not 64 hex digits');
      sha256 = (hash.sha256 as string).toLowerCase();
    }
  }
  return {
    contentLength: contentLength as number,
    extension: extension as string,
    mimeType: mimeType as string,
    hash: { sha256 },
  };
}

function parseToken(file: string, data: Record<string, unknown>): ParsedToken {
  let hash: string | null = null;
  if (data.hash !== undefined && data.hash !== null) {
    if (typeof data.hash !== 'string' || !/^[0-9a-f]{64}$/i.test(data.hash))
      throw new BackupError(file, "the token 'hash' must be 64 hex digits (SHA3-256)");
    hash = data.hash.toLowerCase();
  } else if (typeof data.token === 'string' && TOKEN_PATTERN.test(data.token)) {
    hash = hashToken(data.token);
  }
  const state = data.state ?? 'ACTIVE';
  if (!TOKEN_STATES.includes(state as BackupTokenState))
    throw new BackupError(
      file,
      `the token 'state' must be one of ${TOKEN_STATES.join(', ')}, got ${preview(data.state)}`,
    );
  const expires =
    data.expirationDate === undefined || data.expirationDate === null
      ? null
      : isoTimeOf(file, 'expirationDate', data.expirationDate);
  // The plaintext is never stored; the hash lives in the tokens table. state/expirationDate stay as display.
  delete data.token;
  delete data.hash;
  return { hash, state: state as BackupTokenState, expires };
}

/**
 * The API's limits on what one element holds (the element.* settings), for what the element stores in data and,
 * apart, in its internal properties: a load stores no element larger than the API lets one be, and no value the
 * database's serialization would have to recurse into thousands of levels deep.
 */
function checkLimits(file: string, id: string, data: Record<string, unknown>, what: string, limits: DataLimits) {
  try {
    checkDataLimits(data, limits, what);
  } catch (error) {
    if (!(error instanceof Problem)) throw error;
    throw new BackupError(file, `element ${id}: ${error.detail.replace(/\.$/, '')} (the element.* settings)`);
  }
}

export function parseElement(
  file: string,
  text: string,
  isRelation: boolean,
  identifierKey: string,
  limits: DataLimits,
): ParsedElement {
  if (NUL_ESCAPE.test(text))
    throw new BackupError(file, 'contains the character U+0000, which the database cannot store');
  const json = parseJsonObject(file, text);
  const { type, id, start, end } = json;
  if (typeof type !== 'string' || type.length === 0 || type.length > 256 || /[\u0000-\u001f]/.test(type))
    throw new BackupError(file, "'type' is missing or not a valid type name");
  // A type starting with '_' is internal (spec: it can never be read or written through the API), and the API
  // renders every element's type: such an element could only be served or refused, so it is refused here.
  if (type.startsWith('_')) throw new BackupError(file, `the type '${type}' starts with '_', which marks it internal`);
  if (!isUuid(id)) throw new BackupError(file, "'id' is missing or not a UUID");
  if (isRelation) {
    if (!isUuid(start) || !isUuid(end)) throw new BackupError(file, "a relation needs 'start' and 'end' UUIDs");
  } else if (start !== undefined || end !== undefined) {
    throw new BackupError(file, "a node has no 'start'/'end' (relations belong below relation/)");
  }
  if (!isPlainObject(json.data)) throw new BackupError(file, "'data' is missing or not an object");

  const data: Record<string, unknown> = {};
  const internal: Record<string, unknown> = {};
  let passwordHash: string | null | undefined;
  for (const [key, value] of Object.entries(json.data)) {
    if (key.startsWith('_')) {
      if (key === '_passwordHash' && type === 'User' && !isRelation) {
        if (value !== null && typeof value !== 'string')
          throw new BackupError(file, "'_passwordHash' must be a string");
        passwordHash = value as string | null;
      } else internal[key] = value;
    } else data[key] = value;
  }
  const created = data.created === undefined ? null : isoTimeOf(file, 'created', data.created);
  const updated = data.updated === undefined ? null : isoTimeOf(file, 'updated', data.updated);
  const fileMeta = data.file === undefined || data.file === null ? undefined : parseFileMeta(file, data.file);
  for (const key of ['created', 'updated', 'file', 'hasFile']) delete data[key];

  const parsed: ParsedElement = {
    id: id.toLowerCase(),
    type,
    start: isRelation ? (start as string).toLowerCase() : null,
    end: isRelation ? (end as string).toLowerCase() : null,
    data,
    internal,
    created,
    updated,
    fileMeta,
  };
  if (!isRelation && type === 'User') {
    const identifier = data[identifierKey];
    if (typeof identifier !== 'string' || identifier.length === 0)
      throw new BackupError(file, `a User needs its identifier property '${identifierKey}' (a non-empty string)`);
    parsed.identifier = identifier;
    parsed.passwordHash = passwordHash ?? null;
  }
  if (!isRelation && type === 'Token') parsed.token = parseToken(file, data);
  checkLimits(file, parsed.id, data, 'data', limits);
  checkLimits(file, parsed.id, internal, 'internal properties', limits);
  return parsed;
}
