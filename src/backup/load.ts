// backup:load: reads a backup folder (format.ts) into the database.
//
// Two passes over the files, so that memory holds an index of ids and not the data:
//   1. validate: parse every file, check every rule (JSON, fields, ids, duplicates, relation endpoints, users,
//      tokens, files, summary counts). Any violation throws a BackupError naming the file; nothing is written.
//   2. write, in ONE transaction: nodes (with their users rows), then the tokens rows, then relations ordered so
//      that a relation whose start or end is a relation comes after it. Rows go in batches through one multi-row
//      INSERT each (json_to_recordset). File bytes are copied into the blob store while hashing them; if anything
//      fails, the transaction rolls back and the copied bytes are removed again.
// One transaction rather than resumable batches: a load either happens completely or not at all, so a failed load
// never leaves a half-filled database that the emptiness check would then refuse.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, extname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { fileTypeFromBuffer } from 'file-type';
import { hashToken, TOKEN_PATTERN } from '../domain/accounts/tokens.js';
import { isPlainObject, isUuid } from '../domain/values.js';
import type { Db, Queryable } from '../storage/db.js';
import {
  existingElements,
  existingUsers,
  insertElementRows,
  insertTokenRows,
  insertUserRows,
  isDatabaseEmpty,
  takenIdentifiers,
  takenTokenHashes,
  type BackupElementRow,
  type BackupTokenRow,
  type BackupUserRow,
} from '../storage/queries/backup.js';
import type { FileMeta } from '../storage/queries/elements.js';
import { BackupError, FILE_DIR, fileOwnerId, NODE_DIR, RELATION_DIR, SUMMARY_FILE, TOKEN_STATES, type BackupTokenState } from './format.js';
import { silentProgress, type Progress } from './progress.js';

export interface LoadContext {
  db: Db;
  /** Where file bytes go: DATA_DIR/files/<aa>/<id> (the blob store). */
  blobs: { pathOf(key: string): string; readonly tmpDir: string };
  /** The User property holding the login identifier (settings.register.uniqueIdentifier). */
  identifierKey: string;
  /** `created`/`updated` (and token issue dates) of elements that carry none. */
  now: Date;
}

export interface LoadOptions {
  /** Load into a database that already holds elements (ids must not collide). */
  force?: boolean;
  progress?: Progress;
  /** Elements per INSERT statement. */
  batchSize?: number;
}

export interface LoadReport {
  nodes: number;
  relations: number;
  files: number;
  users: number;
  tokens: number;
  warnings: string[];
  seconds: number;
}

export class DatabaseNotEmptyError extends Error {
  constructor() {
    super('the database already holds elements; use --force to load into it anyway (ids must not collide)');
    this.name = 'DatabaseNotEmptyError';
  }
}

const KIND_NODE = 0;
const KIND_USER = 1;
const KIND_TOKEN = 2;
const KIND_RELATION = 3;

const READ_CONCURRENCY = 64;
const DB_LOOKUP_BATCH = 5000;
const MAX_WARNINGS_KEPT = 200;

// ---------------------------------------------------------------------------------------------------------------
// One element file

interface ParsedToken {
  hash: string | null;
  state: BackupTokenState;
  expires: string | null;
}

interface ParsedElement {
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
  const normalized = m ? `${m[1]}T${m[2]!.replace(/(\.\d{3})\d+$/, '$1')}${m[3]!.length === 3 ? `${m[3]}:00` : m[3]}` : '';
  if (!m || Number.isNaN(Date.parse(normalized))) throw new BackupError(file, `'${key}' must be an ISO 8601 timestamp with an offset, got ${JSON.stringify(value)}`);
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
  if (!Number.isSafeInteger(contentLength) || (contentLength as number) < 0) fail('needs a non-negative integer contentLength');
  if (typeof extension !== 'string') fail('needs a string extension');
  if (typeof mimeType !== 'string') fail('needs a string mimeType');
  let sha256: string | null = null;
  if (hash !== undefined && hash !== null) {
    if (!isPlainObject(hash)) return fail("has a 'hash' that is not an object");
    if (hash.sha256 !== undefined && hash.sha256 !== null) {
      if (typeof hash.sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(hash.sha256)) fail('has a hash.sha256 that is not 64 hex digits');
      sha256 = (hash.sha256 as string).toLowerCase();
    }
  }
  return { contentLength: contentLength as number, extension: extension as string, mimeType: mimeType as string, hash: { sha256 } };
}

function parseToken(file: string, data: Record<string, unknown>): ParsedToken {
  let hash: string | null = null;
  if (data.hash !== undefined && data.hash !== null) {
    if (typeof data.hash !== 'string' || !/^[0-9a-f]{64}$/i.test(data.hash)) throw new BackupError(file, "the token 'hash' must be 64 hex digits (SHA3-256)");
    hash = data.hash.toLowerCase();
  } else if (typeof data.token === 'string' && TOKEN_PATTERN.test(data.token)) {
    hash = hashToken(data.token);
  }
  const state = data.state ?? 'ACTIVE';
  if (!TOKEN_STATES.includes(state as BackupTokenState))
    throw new BackupError(file, `the token 'state' must be one of ${TOKEN_STATES.join(', ')}, got ${JSON.stringify(data.state)}`);
  const expires = data.expirationDate === undefined || data.expirationDate === null ? null : isoTimeOf(file, 'expirationDate', data.expirationDate);
  // The plaintext is never stored; the hash lives in the tokens table. state/expirationDate stay as display.
  delete data.token;
  delete data.hash;
  return { hash, state: state as BackupTokenState, expires };
}

function parseElement(file: string, text: string, isRelation: boolean, identifierKey: string): ParsedElement {
  if (NUL_ESCAPE.test(text)) throw new BackupError(file, 'contains the character U+0000, which the database cannot store');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new BackupError(file, `not valid JSON (${(error as Error).message})`);
  }
  if (!isPlainObject(json)) throw new BackupError(file, 'must hold a JSON object');
  const { type, id, start, end } = json;
  if (typeof type !== 'string' || type.length === 0 || type.length > 256 || /[\u0000-\u001f]/.test(type))
    throw new BackupError(file, "'type' is missing or not a valid type name");
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
        if (value !== null && typeof value !== 'string') throw new BackupError(file, "'_passwordHash' must be a string");
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
  return parsed;
}

// ---------------------------------------------------------------------------------------------------------------
// Walking the folder

async function walk(root: string, rel: string, out: string[], ignored: string[]): Promise<void> {
  let entries;
  try {
    entries = await readdir(join(root, rel), { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(rel, entry.name);
    if (entry.isDirectory()) await walk(root, path, out, ignored);
    else if (entry.name.startsWith('.')) continue; // .gitignore, editor files
    else out.push(path);
  }
}

async function listElementFiles(root: string, dir: string, warn: (line: string) => void): Promise<string[]> {
  const all: string[] = [];
  await walk(root, dir, all, []);
  return all.filter((path) => {
    if (path.endsWith('.json')) return true;
    warn(`${path}: ignored (not a .json file)`);
    return false;
  });
}

/** Runs `fn` over `items` with at most `limit` calls in flight, keeping the order of the results. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Pass 1: the index built while validating

interface TokenPlan {
  hash: string | null;
  state: BackupTokenState;
  issued: string | null;
  expires: string | null;
  owners: string[];
}

interface Plan {
  paths: string[];
  ids: string[];
  index: Map<string, number>;
  kind: Uint8Array;
  nodeCount: number;
  /** Relation element indexes in insertion order (relations on relations after what they attach to). */
  relationOrder: number[];
  /** Element id -> path of its bytes below file/. */
  files: Map<string, string>;
  /** User element index -> the identifier stored in users (differs from data for shadowed duplicates). */
  identifiers: Map<number, string>;
  tokens: Map<number, TokenPlan>;
}

export async function loadBackup(ctx: LoadContext, dir: string, options: LoadOptions = {}): Promise<LoadReport> {
  const began = performance.now();
  const progress = options.progress ?? silentProgress;
  const batchSize = options.batchSize ?? 1000;
  const warnings: string[] = [];
  let warningCount = 0;
  const warn = (line: string) => {
    warningCount++;
    if (warnings.length < MAX_WARNINGS_KEPT) {
      warnings.push(line);
      progress.note(`warning: ${line}`);
    } else if (warningCount === MAX_WARNINGS_KEPT + 1) progress.note('warning: (further warnings are not shown)');
  };

  if (!options.force && !(await isDatabaseEmpty(ctx.db))) throw new DatabaseNotEmptyError();
  const plan = await validate(ctx, dir, progress, warn);
  const written = await write(ctx, dir, plan, progress, batchSize);
  if (warningCount > warnings.length) warnings.push(`... and ${warningCount - warnings.length} more warnings`);
  return {
    nodes: plan.nodeCount,
    relations: plan.paths.length - plan.nodeCount,
    files: written.files,
    users: plan.identifiers.size,
    tokens: written.tokens,
    warnings,
    seconds: (performance.now() - began) / 1000,
  };
}

async function readSummary(dir: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(join(dir, SUMMARY_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new BackupError(SUMMARY_FILE, 'missing: this is not a backup folder');
    throw error;
  }
  let summary: unknown;
  try {
    summary = JSON.parse(text);
  } catch (error) {
    throw new BackupError(SUMMARY_FILE, `not valid JSON (${(error as Error).message})`);
  }
  if (!isPlainObject(summary)) throw new BackupError(SUMMARY_FILE, 'must hold a JSON object');
  return summary;
}

function checkCount(summary: Record<string, unknown>, key: string, actual: number) {
  const stated = summary[key];
  if (stated === undefined) return;
  if (stated !== actual) throw new BackupError(SUMMARY_FILE, `'${key}' is ${JSON.stringify(stated)} but the backup holds ${actual} (incomplete copy?)`);
}

async function validate(ctx: LoadContext, dir: string, progress: Progress, warn: (line: string) => void): Promise<Plan> {
  const summary = await readSummary(dir);
  const nodePaths = await listElementFiles(dir, NODE_DIR, warn);
  const relationPaths = await listElementFiles(dir, RELATION_DIR, warn);
  const filePaths: string[] = [];
  await walk(dir, FILE_DIR, filePaths, []);
  checkCount(summary, 'nodeCount', nodePaths.length);
  checkCount(summary, 'relationCount', relationPaths.length);
  checkCount(summary, 'fileCount', filePaths.length);

  const files = new Map<string, string>();
  for (const path of filePaths) {
    const owner = fileOwnerId(path.split('/').pop()!);
    if (owner === null) {
      warn(`${path}: ignored (its name does not start with an element id)`);
      continue;
    }
    if (files.has(owner)) throw new BackupError(path, `a second file for element ${owner} (the first is ${files.get(owner)})`);
    files.set(owner, path);
  }

  const paths = [...nodePaths, ...relationPaths];
  const total = paths.length;
  const ids = new Array<string>(total);
  const index = new Map<string, number>();
  const kind = new Uint8Array(total);
  const identifiers = new Map<number, string>();
  const identifierOwner = new Map<string, number>();
  const tokens = new Map<number, TokenPlan>();
  const tokenHashes = new Map<string, number>();
  // Relations whose start or end is not a node seen before them: a relation, an element of the database, or missing.
  const pending: Array<{ at: number; start: string; end: string }> = [];
  const usedFiles = new Set<string>();

  progress.start('validating', total);
  const read = (i: number) => readFile(join(dir, paths[i]!), 'utf8');
  for (const batch of chunks([...Array(total).keys()], READ_CONCURRENCY * 4)) {
    const texts = await mapLimit(batch, READ_CONCURRENCY, read);
    for (let b = 0; b < batch.length; b++) {
      const at = batch[b]!;
      const path = paths[at]!;
      const isRelation = at >= nodePaths.length;
      const el = parseElement(path, texts[b]!, isRelation, ctx.identifierKey);
      const seen = index.get(el.id);
      if (seen !== undefined) throw new BackupError(path, `duplicate id ${el.id} (also in ${paths[seen]})`);
      index.set(el.id, at);
      ids[at] = el.id;
      kind[at] = isRelation ? KIND_RELATION : el.type === 'User' ? KIND_USER : el.type === 'Token' ? KIND_TOKEN : KIND_NODE;

      if (el.fileMeta !== undefined || files.has(el.id)) {
        const bytes = files.get(el.id);
        if (bytes === undefined) warn(`${path}: has file metadata but file/ holds no bytes for ${el.id}; loaded without a file`);
        else {
          usedFiles.add(el.id);
          const size = (await stat(join(dir, bytes))).size;
          if (el.fileMeta && el.fileMeta.contentLength !== size)
            throw new BackupError(bytes, `holds ${size} bytes but ${path} says contentLength ${el.fileMeta.contentLength}`);
        }
      }

      if (el.identifier !== undefined) {
        // The identifier must be unique. The reference dataset repeats two; the smaller id keeps it for logging in,
        // the other user is stored under a substitute identifier (its tokens still work, its data is unchanged).
        const other = identifierOwner.get(el.identifier);
        if (other === undefined) {
          identifierOwner.set(el.identifier, at);
          identifiers.set(at, el.identifier);
        } else {
          const [keep, shadow] = ids[other]! < el.id ? [other, at] : [at, other];
          identifierOwner.set(el.identifier, keep);
          identifiers.set(keep, el.identifier);
          const substitute = `duplicate-identifier:${ids[shadow]}:${el.identifier}`;
          identifiers.set(shadow, substitute);
          warn(`${paths[shadow]}: identifier ${JSON.stringify(el.identifier)} is also used by ${paths[keep]}; this user logs in as ${JSON.stringify(substitute)}`);
        }
      }
      if (el.token) {
        if (el.token.hash !== null) {
          const other = tokenHashes.get(el.token.hash);
          if (other !== undefined) throw new BackupError(path, `the same token hash as ${paths[other]}`);
          tokenHashes.set(el.token.hash, at);
        }
        tokens.set(at, { hash: el.token.hash, state: el.token.state, issued: el.created, expires: el.token.expires, owners: [] });
      }
      if (isRelation) {
        const s = index.get(el.start!);
        const e = index.get(el.end!);
        const endsAtNodes = s !== undefined && e !== undefined && kind[s] !== KIND_RELATION && kind[e] !== KIND_RELATION;
        if (!endsAtNodes) pending.push({ at, start: el.start!, end: el.end! });
        if (el.type === 'OWNS' && e !== undefined && kind[e] === KIND_TOKEN && (s === undefined || kind[s] === KIND_USER))
          tokens.get(e)!.owners.push(el.start!);
      }
    }
    progress.tick(batch.length);
  }
  progress.done();
  for (const id of files.keys()) if (!usedFiles.has(id)) warn(`${files.get(id)}: ignored (no element ${id} in the backup)`);

  const empty = await isDatabaseEmpty(ctx.db);
  if (!empty) await checkAgainstDatabase(ctx.db, ids, index, paths, identifiers, tokenHashes);
  const relationOrder = await orderRelations(ctx.db, empty, nodePaths.length, total, pending, index, kind, paths);
  await resolveTokenOwners(ctx.db, empty, tokens, index, kind, paths, warn);
  return { paths, ids, index, kind, nodeCount: nodePaths.length, relationOrder, files, identifiers, tokens };
}

/** Loading into a non-empty database (--force): ids, identifiers and token hashes must not be taken already. */
async function checkAgainstDatabase(
  db: Db,
  ids: string[],
  index: Map<string, number>,
  paths: string[],
  identifiers: Map<number, string>,
  tokenHashes: Map<string, number>,
) {
  for (const batch of chunks(ids, DB_LOOKUP_BATCH))
    for (const id of (await existingElements(db, batch)).keys()) throw new BackupError(paths[index.get(id)!]!, `id ${id} already exists in the database`);
  const byIdentifier = new Map([...identifiers].map(([at, identifier]) => [identifier, at]));
  for (const batch of chunks([...byIdentifier.keys()], DB_LOOKUP_BATCH))
    for (const identifier of await takenIdentifiers(db, batch))
      throw new BackupError(paths[byIdentifier.get(identifier)!]!, `a user with the identifier ${JSON.stringify(identifier)} already exists in the database`);
  for (const batch of chunks([...tokenHashes.keys()], DB_LOOKUP_BATCH))
    for (const hash of await takenTokenHashes(db, batch))
      throw new BackupError(paths[tokenHashes.get(hash)!]!, 'a token with the same hash already exists in the database');
}

/**
 * Relations in an order that inserts every relation after its start and end: level 1 ends at nodes (or at
 * elements already in the database), level n+1 at a relation of level n. A cycle of relations cannot be inserted.
 */
async function orderRelations(
  db: Db,
  empty: boolean,
  first: number,
  total: number,
  pending: Array<{ at: number; start: string; end: string }>,
  index: Map<string, number>,
  kind: Uint8Array,
  paths: string[],
): Promise<number[]> {
  const external = new Set<string>();
  for (const p of pending) for (const id of [p.start, p.end]) if (!index.has(id)) external.add(id);
  const inDb = empty ? new Map() : await existingIn(db, [...external]);
  for (const p of pending)
    for (const [role, id] of [['start', p.start], ['end', p.end]] as const)
      if (!index.has(id) && !inDb.has(id)) throw new BackupError(paths[p.at]!, `its ${role} ${id} exists neither in the backup nor in the database`);

  // Levels of the relations that depend on relations; all others are level 1.
  const deps = new Map<number, number[]>();
  for (const p of pending) {
    const on = [p.start, p.end].map((id) => index.get(id)).filter((i): i is number => i !== undefined && kind[i] === KIND_RELATION);
    if (on.length > 0) deps.set(p.at, on);
  }
  const level = new Map<number, number>();
  const visiting = new Set<number>();
  const levelOf = (at: number): number => {
    const known = level.get(at);
    if (known !== undefined) return known;
    const on = deps.get(at);
    if (!on) return 1;
    // Iterative deepening would be safer for very deep chains; relation-on-relation chains are short in practice.
    if (visiting.has(at)) throw new BackupError(paths[at]!, 'is part of a cycle of relations attached to each other');
    visiting.add(at);
    const l = 1 + Math.max(...on.map(levelOf));
    visiting.delete(at);
    level.set(at, l);
    return l;
  };
  const order: number[] = [];
  const later: Array<[number, number]> = [];
  for (let at = first; at < total; at++) {
    if (!deps.has(at)) order.push(at);
    else later.push([levelOf(at), at]);
  }
  later.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  for (const [, at] of later) order.push(at);
  return order;
}

async function existingIn(db: Db, ids: string[]): Promise<Map<string, { type: string; isNode: boolean }>> {
  const found = new Map<string, { type: string; isNode: boolean }>();
  for (const batch of chunks(ids, DB_LOOKUP_BATCH)) for (const [id, v] of await existingElements(db, batch)) found.set(id, v);
  return found;
}

/**
 * A token works only with exactly one owning user, as in the reference implementation (ember-nexus/api#118: "no
 * owner is not possible, multiple owners would cause merged personalities"). Other tokens are loaded as elements
 * without a tokens row, so they never authenticate; the reference dataset has one of each on purpose.
 */
async function resolveTokenOwners(
  db: Db,
  empty: boolean,
  tokens: Map<number, TokenPlan>,
  index: Map<string, number>,
  kind: Uint8Array,
  paths: string[],
  warn: (line: string) => void,
) {
  const outside = new Set<string>();
  for (const t of tokens.values()) for (const owner of t.owners) if (!index.has(owner)) outside.add(owner);
  const users = empty ? new Set<string>() : await existingUsers(db, [...outside]);
  for (const [at, t] of tokens) {
    t.owners = [...new Set(t.owners.filter((owner) => {
      const i = index.get(owner);
      return i !== undefined ? kind[i] === KIND_USER : users.has(owner);
    }))];
    if (t.owners.length !== 1) {
      warn(`${paths[at]}: token has ${t.owners.length === 0 ? 'no owning user' : `${t.owners.length} owning users`}; loaded, but it will not authenticate`);
      continue;
    }
    if (t.hash === null) throw new BackupError(paths[at]!, "a token with an owner needs its 'hash'");
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Pass 2: writing

interface Placed {
  final: string;
}

async function copyBytes(
  ctx: LoadContext,
  dir: string,
  source: string,
  el: ParsedElement,
  placed: Placed[],
): Promise<FileMeta> {
  const final = ctx.blobs.pathOf(el.id);
  const temp = join(ctx.blobs.tmpDir, `backup-${randomBytes(12).toString('hex')}`);
  const hash = createHash('sha256');
  let size = 0;
  const head: Buffer[] = [];
  let headSize = 0;
  const observe = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      size += chunk.length;
      if (headSize < 4100) {
        head.push(chunk.subarray(0, 4100 - headSize));
        headSize += Math.min(chunk.length, 4100 - headSize);
      }
      callback(null, chunk);
    },
  });
  try {
    await pipeline(createReadStream(join(dir, source)), observe, createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
    const sha256 = hash.digest('hex');
    const given = el.fileMeta;
    if (given && given.hash.sha256 !== null && given.hash.sha256 !== sha256)
      throw new BackupError(source, `SHA-256 ${sha256} does not match the metadata's ${given.hash.sha256}`);
    if (given && given.contentLength !== size) throw new BackupError(source, `holds ${size} bytes, the metadata says ${given.contentLength}`);
    await mkdir(dirname(final), { recursive: true });
    await rename(temp, final);
    placed.push({ final });
    if (given) return { ...given, hash: { sha256 } };
    const ext = extname(source).slice(1);
    const detected = size > 0 ? await fileTypeFromBuffer(Buffer.concat(head)) : undefined;
    return { contentLength: size, extension: ext || 'bin', mimeType: detected?.mime ?? 'application/octet-stream', hash: { sha256 } };
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

async function write(ctx: LoadContext, dir: string, plan: Plan, progress: Progress, batchSize: number) {
  const nowIso = ctx.now.toISOString();
  const placed: Placed[] = [];
  let tokenRows = 0;
  const readBatch = (batch: number[]) =>
    mapLimit(batch, READ_CONCURRENCY, async (at) => parseElement(plan.paths[at]!, await readFile(join(dir, plan.paths[at]!), 'utf8'), at >= plan.nodeCount, ctx.identifierKey));

  const insertBatch = async (tx: Queryable, batch: number[], parsed: ParsedElement[]) => {
    const rows: BackupElementRow[] = [];
    const users: BackupUserRow[] = [];
    for (let b = 0; b < batch.length; b++) {
      const at = batch[b]!;
      const el = parsed[b]!;
      // The file may have changed since it was validated; the id is what the plan was built on.
      if (el.id !== plan.ids[at]) throw new BackupError(plan.paths[at]!, 'changed while the backup was being loaded');
      const bytes = plan.files.get(el.id);
      const file = bytes === undefined ? null : await copyBytes(ctx, dir, bytes, el, placed);
      const created = el.created ?? nowIso;
      rows.push({ id: el.id, type: el.type, start_id: el.start, end_id: el.end, data: el.data, internal: el.internal, file, created, updated: el.updated ?? created });
      const identifier = plan.identifiers.get(at);
      if (identifier !== undefined) users.push({ id: el.id, identifier, password_hash: el.passwordHash ?? null });
    }
    await insertElementRows(tx, rows);
    await insertUserRows(tx, users);
    progress.tick(batch.length);
  };

  /** Inserts the elements in order, reading the next batch while the database works on the current one. */
  const insertAll = async (tx: Queryable, order: number[]) => {
    const batches = chunks(order, batchSize);
    let next = batches.length > 0 ? readBatch(batches[0]!) : null;
    for (let i = 0; i < batches.length; i++) {
      const parsed = await next!;
      next = i + 1 < batches.length ? readBatch(batches[i + 1]!) : null;
      // A rejected prefetch must not go unhandled while this batch is inserted; it is awaited (and thrown) next round.
      next?.catch(() => {});
      await insertBatch(tx, batches[i]!, parsed);
    }
  };

  progress.start('loading', plan.paths.length);
  try {
    await ctx.db.transaction(async (tx) => {
      await insertAll(tx, [...Array(plan.nodeCount).keys()]);
      const tokens: BackupTokenRow[] = [];
      for (const [at, t] of plan.tokens) {
        if (t.owners.length !== 1) continue;
        const issued = t.issued ?? nowIso;
        // The table knows ACTIVE and REVOKED; an EXPIRED token of the reference is as dead as a revoked one (its
        // element keeps showing state EXPIRED).
        tokens.push({ id: plan.ids[at]!, hash: t.hash!, user_id: t.owners[0]!, state: t.state === 'ACTIVE' ? 'ACTIVE' : 'REVOKED', issued, expires: t.expires });
      }
      for (const batch of chunks(tokens, batchSize)) await insertTokenRows(tx, batch);
      tokenRows = tokens.length;
      await insertAll(tx, plan.relationOrder);
    });
  } catch (error) {
    await Promise.all(placed.map((p) => rm(p.final, { force: true })));
    throw error;
  }
  progress.done();
  return { files: placed.length, tokens: tokenRows };
}
