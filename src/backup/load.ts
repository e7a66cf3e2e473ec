// backup:load: reads a backup folder (format.ts) into the database in one transaction, so that a failed load never
// leaves a half-filled database. One pass over the element files checks each file and writes it in batches, nodes
// first; what depends on the whole backup (users' identifiers, relations attached to relations, tokens, the access
// index) follows the pass. Any violation is a BackupError naming the file: nothing is written, and the file bytes
// already copied are removed again. Memory holds an index of ids, not the data
// (docs/decisions/019-backup-load-one-pass.md).
import type { BlobStore, Replacement } from '../blob/blob-store.js';
import type { DataLimits } from '../domain/elements/data-limits.js';
import type { Db, Queryable } from '../storage/db.js';
import { deferAccessIndex, rebuildAccessIndex } from '../storage/queries/access.js';
import {
  type BackupElementRow,
  type BackupTokenRow,
  type BackupUserRow,
  existingElements,
  existingUsers,
  insertElementRows,
  insertTokenRows,
  insertUserRows,
  isDatabaseEmpty,
  keepUnboundTokenHashes,
  takenIdentifiers,
  takenTokenHashes,
} from '../storage/queries/backup.js';
import { copyIntoBlobStore, settlePlaced } from './blob-copy.js';
import { elementFileSizeRefusal, maxElementFileBytes, type ParsedElement, parseElement } from './element-file.js';
import { BackupFolder, checkCount, chunks, listElementFiles, readSummary } from './folder.js';
import { BackupError, FILE_DIR, fileOwnerId, NODE_DIR, RELATION_DIR } from './format.js';
import { type Index, KIND_RELATION, KIND_USER, newIndex, PassIndex } from './load-index.js';
import { type Progress, silentProgress } from './progress.js';

export interface LoadContext {
  db: Db;
  /** Where file bytes go (the blob store). */
  blobs: BlobStore;
  /** The User property holding the login identifier (settings.register.uniqueIdentifier). */
  identifierKey: string;
  /** What one element may hold (settings.element): the API's limits, which a load enforces as well. */
  limits: DataLimits;
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

// Element files are small and usually in the page cache: reading them synchronously is several times faster than
// through fs.promises (no thread-pool hop and promise per file; docs/decisions/019-backup-load-one-pass.md). The
// event loop is given back after every batch, so a server running the load keeps answering.
const READ_BATCH = 500;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
const DB_LOOKUP_BATCH = 5000;
const MAX_WARNINGS_KEPT = 200;

/** The backup folder as listed before anything is read: element files (nodes first), file bytes by element id. */
interface Folder {
  at: BackupFolder;
  paths: string[];
  nodeCount: number;
  /** Element id -> path of its bytes below file/. */
  files: Map<string, string>;
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
  const folder = await readFolder(await BackupFolder.at(dir), warn);
  const placed: Replacement[] = [];
  let written: { users: number; tokens: number };
  progress.start('loading', folder.paths.length);
  try {
    written = await ctx.db.transaction(async (tx) => {
      await deferAccessIndex(tx);
      const load = new Load(ctx, tx, folder, placed, progress, warn, batchSize, await isDatabaseEmpty(tx));
      const result = await load.run();
      await rebuildAccessIndex(tx);
      return result;
    });
  } catch (error) {
    await settlePlaced(placed, false);
    throw error;
  }
  await settlePlaced(placed, true);
  progress.done();
  if (warningCount > warnings.length) warnings.push(`... and ${warningCount - warnings.length} more warnings`);
  return {
    nodes: folder.nodeCount,
    relations: folder.paths.length - folder.nodeCount,
    files: placed.length,
    users: written.users,
    tokens: written.tokens,
    warnings,
    seconds: (performance.now() - began) / 1000,
  };
}

/** Lists the folder and checks what the summary says of it. */
async function readFolder(at: BackupFolder, warn: (line: string) => void): Promise<Folder> {
  const summary = readSummary(at);
  const nodePaths = await listElementFiles(at, NODE_DIR, warn);
  const relationPaths = await listElementFiles(at, RELATION_DIR, warn);
  const filePaths: string[] = [];
  await at.walk(FILE_DIR, filePaths);
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
    if (files.has(owner))
      throw new BackupError(path, `a second file for element ${owner} (the first is ${files.get(owner)})`);
    files.set(owner, path);
  }
  return { at, paths: [...nodePaths, ...relationPaths], nodeCount: nodePaths.length, files };
}

/** One load, inside its transaction. */
class Load {
  private readonly index: Index;
  private readonly nowIso: string;
  /** An element file larger than any element within the element.* settings is refused before it is read. */
  private readonly refuseSize: (size: number) => string | null;
  /** The INSERT being executed while the next batch is read (at most one: the files are read no faster than that). */
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly ctx: LoadContext,
    private readonly tx: Queryable,
    private readonly folder: Folder,
    private readonly placed: Replacement[],
    private readonly progress: Progress,
    private readonly warn: (line: string) => void,
    private readonly batchSize: number,
    /** An empty database holds nothing a backup element could collide with or attach to: no lookups. */
    private readonly empty: boolean,
  ) {
    const total = folder.paths.length;
    this.nowIso = ctx.now.toISOString();
    this.refuseSize = elementFileSizeRefusal(maxElementFileBytes(ctx.limits));
    this.index = newIndex(total);
  }

  async run(): Promise<{ users: number; tokens: number }> {
    try {
      await this.pass();
    } finally {
      // Whatever failed, the INSERT (and its file copies) in flight must end before the caller removes the copies.
      await this.inFlight.catch(() => {});
    }
    const { files, paths } = this.folder;
    for (const id of files.keys())
      if (!this.index.usedFiles.has(id)) this.warn(`${files.get(id)}: ignored (no element ${id} in the backup)`);
    const users = await this.writeUsers();
    const order = await this.orderPending();
    await this.resolveTokenOwners();
    for (const batch of chunks(order, this.batchSize)) {
      const parsed = batch.map((at) => {
        const el = this.parse(at);
        // The file may have changed since it was read in the pass; the id is what the index was built on.
        if (el.id !== this.index.ids[at])
          throw new BackupError(paths[at]!, 'changed while the backup was being loaded');
        return el;
      });
      await this.insert(parsed);
    }
    const tokens = await this.writeTokens();
    return { users, tokens };
  }

  private parse(at: number): ParsedElement {
    const path = this.folder.paths[at]!;
    return parseElement(
      path,
      this.folder.at.readText(path, this.refuseSize),
      at >= this.folder.nodeCount,
      this.ctx.identifierKey,
      this.ctx.limits,
    );
  }

  /** Reads and checks every element file; writes the nodes and the relations between two nodes as it goes. */
  private async pass() {
    const { paths, nodeCount } = this.folder;
    const index = new PassIndex(this.index, paths, this.warn);
    let parsed: ParsedElement[] = [];
    const send = async () => {
      await this.inFlight;
      const batch = parsed;
      parsed = [];
      this.inFlight = this.insert(batch);
      // Awaited before the next batch (or by run()); this only keeps a failure from being reported as unhandled.
      this.inFlight.catch(() => {});
    };

    for (let at = 0; at < paths.length; at++) {
      if (at % READ_BATCH === 0 && at > 0) await yieldToEventLoop();
      const isRelation = at >= nodeCount;
      const el = this.parse(at);
      index.add(at, el, isRelation);
      this.checkFile(paths[at]!, el);
      index.noteIdentifier(at, el);
      index.noteToken(at, el);
      if (isRelation && !index.relationReady(at, el)) continue;
      parsed.push(el);
      if (parsed.length >= this.batchSize) await send();
    }
    if (parsed.length > 0) await send();
    await this.inFlight;
  }

  /** The element's bytes below file/: there when its metadata says so, and as long as it says. */
  private checkFile(path: string, el: ParsedElement): void {
    const { files } = this.folder;
    if (el.fileMeta === undefined && !files.has(el.id)) return;
    const bytes = files.get(el.id);
    if (bytes === undefined) {
      this.warn(`${path}: has file metadata but file/ holds no bytes for ${el.id}; loaded without a file`);
      return;
    }
    this.index.usedFiles.add(el.id);
    const size = this.folder.at.size(bytes);
    if (el.fileMeta && el.fileMeta.contentLength !== size)
      throw new BackupError(bytes, `holds ${size} bytes but ${path} says contentLength ${el.fileMeta.contentLength}`);
  }

  /** Inserts elements (copying their file bytes first); on a database that is not empty, after checking their ids. */
  private async insert(parsed: ParsedElement[]) {
    if (!this.empty)
      for (const id of (
        await existingElements(
          this.tx,
          parsed.map((el) => el.id),
        )
      ).keys())
        throw new BackupError(this.folder.paths[this.index.at.get(id)!]!, `id ${id} already exists in the database`);
    const rows: BackupElementRow[] = [];
    for (const el of parsed) {
      const bytes = this.folder.files.get(el.id);
      const file =
        bytes === undefined
          ? null
          : await copyIntoBlobStore(this.ctx.blobs, this.folder.at, bytes, el.id, el.fileMeta, this.placed);
      const created = el.created ?? this.nowIso;
      rows.push({
        id: el.id,
        type: el.type,
        start_id: el.start,
        end_id: el.end,
        data: el.data,
        internal: el.internal,
        file,
        created,
        updated: el.updated ?? created,
      });
    }
    await insertElementRows(this.tx, rows);
    this.progress.tick(parsed.length);
  }

  /** The users rows, once every User is known (which of two users sharing an identifier keeps it). */
  private async writeUsers(): Promise<number> {
    const { identifiers, passwords, ids } = this.index;
    if (!this.empty) {
      const byIdentifier = new Map([...identifiers].map(([user, identifier]) => [identifier, user]));
      for (const batch of chunks([...byIdentifier.keys()], DB_LOOKUP_BATCH))
        for (const identifier of await takenIdentifiers(this.tx, batch))
          throw new BackupError(
            this.folder.paths[byIdentifier.get(identifier)!]!,
            `a user with the identifier ${JSON.stringify(identifier)} already exists in the database`,
          );
    }
    const rows: BackupUserRow[] = [...identifiers].map(([user, identifier]) => ({
      id: ids[user]!,
      identifier,
      password_hash: passwords.get(user) ?? null,
    }));
    for (const batch of chunks(rows, this.batchSize)) await insertUserRows(this.tx, batch);
    passwords.clear();
    return rows.length;
  }

  /**
   * The relations not written during the pass, in an order that inserts every relation after its start and end:
   * level 1 ends at nodes or relations already written, or at elements of the database; level n+1 at a relation of
   * level n. A cycle of relations cannot be inserted.
   */
  private async orderPending(): Promise<number[]> {
    const { pending, at: index, kind } = this.index;
    const paths = this.folder.paths;
    const external = new Set<string>();
    for (const p of pending) for (const id of [p.start, p.end]) if (!index.has(id)) external.add(id);
    const inDb = this.empty ? new Map() : await this.existingIn([...external]);
    for (const p of pending)
      for (const [role, id] of [
        ['start', p.start],
        ['end', p.end],
      ] as const)
        if (!index.has(id) && !inDb.has(id))
          throw new BackupError(paths[p.at]!, `its ${role} ${id} exists neither in the backup nor in the database`);

    // Levels of the pending relations that depend on pending relations; all others are level 1.
    const isPending = new Set(pending.map((p) => p.at));
    const deps = new Map<number, number[]>();
    for (const p of pending) {
      const on = [p.start, p.end]
        .map((id) => index.get(id))
        .filter((i): i is number => i !== undefined && kind[i] === KIND_RELATION && isPending.has(i));
      if (on.length > 0) deps.set(p.at, on);
    }
    // Depth-first without recursion (a long chain must not exhaust the stack). A dependency met again while it is
    // still being expanded lies on the current path: a cycle.
    const level = new Map<number, number>();
    const expanding = new Set<number>();
    const levelOf = (root: number): number => {
      const stack = [root];
      while (stack.length > 0) {
        const at = stack[stack.length - 1]!;
        const on = deps.get(at);
        if (!on || level.has(at)) {
          stack.pop();
          continue;
        }
        if (!expanding.has(at)) {
          expanding.add(at);
          for (const d of on) {
            if (level.has(d) || !deps.has(d)) continue;
            if (expanding.has(d))
              throw new BackupError(paths[d]!, 'is part of a cycle of relations attached to each other');
            stack.push(d);
          }
          continue;
        }
        level.set(at, 1 + Math.max(...on.map((d) => level.get(d) ?? 1)));
        expanding.delete(at);
        stack.pop();
      }
      return level.get(root) ?? 1;
    };
    const order: number[] = [];
    const later: Array<[number, number]> = [];
    for (const p of pending) {
      if (!deps.has(p.at)) order.push(p.at);
      else later.push([levelOf(p.at), p.at]);
    }
    later.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [, at] of later) order.push(at);
    return order;
  }

  private async existingIn(ids: string[]): Promise<Map<string, { type: string; isNode: boolean }>> {
    const found = new Map<string, { type: string; isNode: boolean }>();
    for (const batch of chunks(ids, DB_LOOKUP_BATCH))
      for (const [id, v] of await existingElements(this.tx, batch)) found.set(id, v);
    return found;
  }

  /**
   * A token works only with exactly one owning user, as in the reference implementation (its maintainers: "no
   * owner is not possible, multiple owners would cause merged personalities"). Other tokens are loaded as elements
   * without a tokens row, so they never authenticate; the reference dataset has one of each on purpose.
   */
  private async resolveTokenOwners() {
    const { tokens, at: index, kind } = this.index;
    const paths = this.folder.paths;
    const outside = new Set<string>();
    for (const t of tokens.values()) for (const owner of t.owners) if (!index.has(owner)) outside.add(owner);
    const users = this.empty ? new Set<string>() : await existingUsers(this.tx, [...outside]);
    for (const [at, t] of tokens) {
      t.owners = [
        ...new Set(
          t.owners.filter((owner) => {
            const i = index.get(owner);
            return i !== undefined ? kind[i] === KIND_USER : users.has(owner);
          }),
        ),
      ];
      if (t.owners.length !== 1) {
        this.warn(
          `${paths[at]}: token has ${t.owners.length === 0 ? 'no owning user' : `${t.owners.length} owning users`}; loaded, but it will not authenticate`,
        );
        continue;
      }
      if (t.hash === null) throw new BackupError(paths[at]!, "a token with an owner needs its 'hash'");
    }
  }

  /** The tokens rows of the tokens with exactly one owning user; the others keep their hash (keepUnboundTokenHashes). */
  private async writeTokens(): Promise<number> {
    const { tokens, tokenHashes, ids } = this.index;
    if (!this.empty)
      for (const batch of chunks([...tokenHashes.keys()], DB_LOOKUP_BATCH))
        for (const hash of await takenTokenHashes(this.tx, batch))
          throw new BackupError(
            this.folder.paths[tokenHashes.get(hash)!]!,
            'a token with the same hash already exists in the database',
          );
    const rows: BackupTokenRow[] = [];
    const unbound: Array<{ id: string; hash: string }> = [];
    for (const [at, t] of tokens) {
      if (t.owners.length !== 1) {
        if (t.hash !== null) unbound.push({ id: ids[at]!, hash: t.hash });
        continue;
      }
      const issued = t.issued ?? this.nowIso;
      // The table knows ACTIVE and REVOKED; an EXPIRED token of the reference is as dead as a revoked one (its
      // element keeps showing state EXPIRED).
      rows.push({
        id: ids[at]!,
        hash: t.hash!,
        user_id: t.owners[0]!,
        state: t.state === 'ACTIVE' ? 'ACTIVE' : 'REVOKED',
        issued,
        expires: t.expires,
      });
    }
    for (const batch of chunks(rows, this.batchSize)) await insertTokenRows(this.tx, batch);
    for (const batch of chunks(unbound, this.batchSize)) await keepUnboundTokenHashes(this.tx, batch);
    return rows.length;
  }
}
