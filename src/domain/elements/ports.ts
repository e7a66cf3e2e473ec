// What the element and collection capabilities need from the database, in the domain's words. The SQL adapter is
// storage/element-store.ts; src/services.ts wires it. Every method takes the Tx it runs in (domain/transactions.ts).
import type { ElementId } from '../../values.js';
import type { Credentials } from '../accounts/types.js';
import type { FileMeta } from '../files/types.js';
import type { Tx } from '../transactions.js';
import type { CollectionKind, Permission } from './types.js';

/** An element as stored. */
export interface StoredElement {
  id: ElementId;
  type: string;
  /** A relation's ends; null for a node. */
  startId: ElementId | null;
  endId: ElementId | null;
  data: Record<string, unknown>;
  file: FileMeta | null;
  created: Date;
  updated: Date;
  /** Its rendering as clients see it, where asked for (`render`). */
  body?: string;
}

export interface NewElement {
  id: ElementId;
  type: string;
  start?: ElementId | null;
  end?: ElementId | null;
  data: Record<string, unknown>;
  /** Server-side properties that never leave the server. */
  internal?: Record<string, unknown>;
  at: Date;
}

/** A node created by a caller: with its OWNS (from the parent, else from the caller) and its CREATED. */
interface NewNode {
  id: ElementId;
  type: string;
  data: Record<string, unknown>;
  parentId: ElementId | null;
  ownsId: ElementId;
  createdId: ElementId;
}

/** A PATCH or PUT of client properties that needs nothing of the stored element first. */
interface DataChange {
  id: ElementId;
  mode: 'replace' | 'merge';
  set: Record<string, unknown>;
  remove: string[];
  /** Per type, the properties a replace keeps from the stored data ('*': every other type). */
  keep: Record<string, string[]>;
  /** The data limits the merged result is checked against (data-limits.ts mergedLimitParams). */
  limits: [number, number];
}

interface CollectionPage {
  /** False when the credentials name no user (401); nothing else is then known. */
  authenticated: boolean;
  /** False when the anchor is missing or the caller may not read it (404); the page is then empty. */
  found: boolean;
  total: number;
  /** The JSON arrays of the page's nodes and relations, ordered by member id, then relation id. */
  nodesJson: string;
  relationsJson: string;
}

export interface ElementStore {
  /** Inserts the element; false (and nothing inserted) when its id is taken. */
  insert(tx: Tx, element: NewElement): Promise<boolean>;
  byId(tx: Tx, id: ElementId, lock?: boolean): Promise<StoredElement | null>;
  /**
   * The element and whether `userId` may do `permission` on it, in one statement; `render` adds `body`, `alsoUpdate`
   * decides UPDATE in the same statement (`mayUpdate`).
   */
  withPermission(
    tx: Tx,
    id: ElementId,
    userId: ElementId,
    permission: Permission,
    options?: { lock?: boolean; render?: boolean; alsoUpdate?: boolean },
  ): Promise<{ element: StoredElement; allowed: boolean; mayUpdate?: boolean } | null>;
  /** The element's rendering, or null when it does not exist. */
  bodyById(tx: Tx, id: ElementId): Promise<string | null>;
  /**
   * GET /<id> in one statement: the credentials resolved, READ checked, the element rendered (null: not readable),
   * and UPDATE and DELETE decided (`writes`; both false when not readable).
   */
  readable(
    tx: Tx,
    credentials: Credentials,
    now: Date,
    id: ElementId,
  ): Promise<{ authenticated: boolean; body: string | null; writes: { update: boolean; delete: boolean } }>;
  /** A node created in one statement: the caller resolved, CREATE on the parent checked, the node inserted. */
  insertNodeAs(
    tx: Tx,
    credentials: Credentials,
    now: Date,
    node: NewNode,
  ): Promise<{ authenticated: boolean; allowed: boolean; inserted: boolean }>;
  /** A data change in one statement: the caller resolved, UPDATE checked, the data changed. */
  updateDataAs(
    tx: Tx,
    credentials: Credentials,
    now: Date,
    change: DataChange,
  ): Promise<{ authenticated: boolean; updated: boolean }>;
  replaceData(tx: Tx, id: ElementId, data: Record<string, unknown>, at: Date): Promise<void>;
  /** Deletes the element and its relations; the ids of the deleted elements that had files. */
  delete(tx: Tx, id: ElementId): Promise<ElementId[]>;
  /** Whether `userId` (or one of its groups) owns `id`. */
  owns(tx: Tx, userId: ElementId, id: ElementId): Promise<boolean>;
  /** The node and relation types in use, without `_`-prefixed ones. */
  types(tx: Tx): Promise<{ nodeTypes: string[]; relationTypes: string[] }>;
  /** One collection page in one statement (credentials, READ on the anchor, the page). */
  collectionPage(
    tx: Tx,
    kind: CollectionKind,
    credentials: Credentials,
    now: Date,
    anchorId: ElementId | null,
    limit: number,
    offset: number,
  ): Promise<CollectionPage>;
}
