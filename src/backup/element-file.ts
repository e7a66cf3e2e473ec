// One element file of a backup: parsed, checked and split into what the service stores where. backup:load parses
// every file with it once; the relations it holds back until after its pass are parsed again (and must keep their id).

import sjson from 'secure-json-parse';
import { hashToken, TOKEN_PATTERN } from '../domain/accounts/tokens.js';
import { checkDataLimits, type DataLimits } from '../domain/elements/data-limits.js';
import { checkProperties, checkPropertyName, reservedProperties } from '../domain/elements/properties.js';
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

/** What an element file holds besides data and internal properties: type, ids, times, file metadata, hashes. */
const OUTSIDE_DATA_BYTES = 64 * 1024;

/**
 * The most bytes an element file within `limits` takes: its data and its internal properties, each at most
 * maxDataSizeInBytes as stored, written with every non-ASCII character escaped (at most three times its bytes,
 * doubled here for spaces and long forms of numbers) and indented, a line for each key, item and closing bracket,
 * two spaces per level below the element's own two. A larger file is refused from its size, before it is read: a
 * file of hundreds of megabytes would otherwise be held in memory several times over to find that out.
 */
export function maxElementFileBytes(limits: DataLimits): number {
  const { maxDataSizeInBytes, maxValues, maxNestingDepth } = limits;
  return 8 * maxDataSizeInBytes + 4 * maxValues * (2 * maxNestingDepth + 8) + OUTSIDE_DATA_BYTES;
}

/** The refusal of an element file of `size` bytes (readText's refuseSize), or null. */
export const elementFileSizeRefusal = (max: number) => (size: number) =>
  size > max ? `is ${size} bytes; an element file within the element.* settings is at most ${max} bytes` : null;

/**
 * The API's rules for property names, exactly as POST / and PATCH apply them (checkProperties). What the backup
 * format carries in data beyond a client's properties is the service's own and taken out of data by the load
 * (created, updated, file metadata, a node's User identifier and Token record), so only those of the reserved
 * names are let through. Internal properties, which no client sets, follow the rule for every name.
 */
function checkNames(
  file: string,
  id: string,
  type: string,
  isRelation: boolean,
  identifierKey: string,
  data: Record<string, unknown>,
  internal: Record<string, unknown>,
) {
  const carried = new Set(['created', 'updated', 'file', 'hasFile']);
  if (!isRelation && type === 'User') carried.add(identifierKey);
  if (!isRelation && type === 'Token') for (const key of ['token', 'hash', 'state', 'expirationDate']) carried.add(key);
  const reserved = new Set([...reservedProperties(type, identifierKey)].filter((key) => !carried.has(key)));
  try {
    checkProperties(data, reserved);
    for (const key of Object.keys(internal)) checkPropertyName(key);
  } catch (error) {
    if (!(error instanceof Problem)) throw error;
    // The message is one line: a name's control characters are shown escaped.
    const why = error.detail
      .replace(/^The /, 'the ')
      .replace(/\.$/, '')
      .replace(/[\u0000-\u001f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    throw new BackupError(file, `element ${id}: ${why} (the API's rules for property names)`);
  }
}

// Only a text with one of these can hold such a key (a key's letters may be \u escapes).
const SUSPECT_PROTOTYPE = /__proto__|constructor|\\u/;

/**
 * The API's body parser (Fastify's, with secure-json-parse) refuses a '__proto__' key, and a 'constructor' holding a
 * 'prototype', anywhere in a body; a backup's element may hold them no more. Copied into data, '__proto__' would
 * become the object's prototype: its properties would be read as the element's without being stored.
 */
function checkPrototypeKeys(file: string, id: string, text: string, json: Record<string, unknown>) {
  if (!SUSPECT_PROTOTYPE.test(text)) return;
  try {
    sjson.scan(json, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new BackupError(
      file,
      `element ${id}: holds a '__proto__' key or a 'constructor' with a 'prototype', which the API refuses (the API's rules for property names)`,
    );
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
  checkPrototypeKeys(file, id.toLowerCase(), text, json);

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
  checkNames(file, id.toLowerCase(), type, isRelation, identifierKey, data, internal);
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
