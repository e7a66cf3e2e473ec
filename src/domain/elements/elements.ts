// Element CRUD (spec "Element endpoints"; the design notes' section 3). Every operation checks the permission it needs
// through the access module; denied and missing are the same 404.

import type { BlobStore } from '../../blob/blob-store.js';
import type { Clock } from '../../clock.js';
import type { Settings } from '../../config/schema.js';
import { notFound, Problem } from '../../errors.js';
import { type ElementId, isPlainObject, newId, parseElementId } from '../../values.js';
import { type Authentication, unauthorized } from '../accounts/authentication.js';
import type { Caller, Credentials } from '../accounts/types.js';
import type { Transactions, Tx } from '../transactions.js';
import { elementAllow } from './allowed-methods.js';
import type { Collections } from './collections.js';
import {
  type Conditions,
  checkReadPreconditions,
  checkWritePreconditions,
  hasConditions,
  NO_ETAG,
} from './conditions.js';
import { checkDataLimits, dataLimitProblem, mergedLimitParams } from './data-limits.js';
import type { ElementStore, NewElement, StoredElement } from './ports.js';
import { checkNewType, checkProperties, checkPropertiesOrNull, reservedProperties } from './properties.js';
import { etagOf, renderElement } from './representation.js';
import type { Permission } from './types.js';

const ACCESS_GRANTING = /^(OWNS|IS_IN_GROUP|HAS_(READ|SEARCH|CREATE|UPDATE|DELETE)_ACCESS)$/;
const PRINCIPAL_TYPES = new Set(['User', 'Group']);
// A token belongs to exactly one user, through its one OWNS (as in the reference implementation, whose maintainers say
// "no owner is not possible, multiple owners would cause merged personalities"). Backups carry that binding only as
// the OWNS, so a second owner, or none, would leave a token that works here but not after backup:load.
const TOKEN_OWNER = "A token is owned by its user alone: its 'OWNS' cannot be added to or taken away.";

export type Rendered = { body: string; etag: string };

/** A create's body once checked: a node, or a relation with its ends. */
interface NewElementBody {
  type: string;
  data: Record<string, unknown>;
  ends: { start: ElementId; end: ElementId } | null;
}

export class Elements {
  /** Per type, the properties a replace keeps from the stored data ('*': every other type). */
  private readonly keptOnReplace: Record<string, string[]>;
  /** Properties reserved for at least one type: a body without them validates the same whatever the type. */
  private readonly reservedSomewhere: Set<string>;

  constructor(
    private readonly transactions: Transactions,
    private readonly store: ElementStore,
    private readonly authentication: Authentication,
    private readonly settings: Settings,
    private readonly clock: Clock,
    private readonly blobs: BlobStore,
    /** For the preconditions of POST /, whose target is the index collection. */
    private readonly collections: Collections,
  ) {
    this.keptOnReplace = Object.fromEntries(['User', 'Token', '*'].map((type) => [type, [...this.reserved(type)]]));
    this.reservedSomewhere = new Set(Object.values(this.keptOnReplace).flat());
  }

  private reserved(type: string) {
    return reservedProperties(type, this.settings.register.uniqueIdentifier);
  }

  /**
   * The element if the caller may do `permission` on it, else 404 (the same answer as a missing element). `lock`
   * locks its row for the transaction; `render` adds its rendering (`body`), whose ETag a conditional write compares.
   */
  async require(
    tx: Tx,
    caller: Caller,
    id: ElementId,
    permission: Permission,
    options: { lock?: boolean; render?: boolean } = {},
  ): Promise<StoredElement> {
    const found = await this.store.withPermission(tx, id, caller.userId, permission, options);
    if (!found?.allowed) throw notFound();
    return found.element;
  }

  /** The element if the caller may read it, else 404; with whether it may also UPDATE it, in the same statement. */
  async requireReadable(
    tx: Tx,
    caller: Caller,
    id: ElementId,
  ): Promise<{ element: StoredElement; mayUpdate: boolean }> {
    const found = await this.store.withPermission(tx, id, caller.userId, 'READ', { alsoUpdate: true });
    if (!found?.allowed) throw notFound();
    return { element: found.element, mayUpdate: found.mayUpdate === true };
  }

  /**
   * GET /<id>: authentication, the element and the access check in one round trip (the hottest path), with the
   * methods the caller may use on it (`allow`, decided in the same statement).
   */
  async read(
    credentials: Credentials,
    id: ElementId,
    conditions: Conditions = {},
  ): Promise<{ rendered: Rendered; notModified: boolean; allow: string }> {
    const { authenticated, body, writes } = await this.store.readable(
      this.transactions.direct,
      credentials,
      this.clock.now(),
      id,
    );
    if (!authenticated) throw unauthorized(credentials);
    if (body === null) throw notFound();
    const rendered = renderElement(body);
    return { rendered, notModified: checkReadPreconditions(conditions, rendered.etag), allow: elementAllow(writes) };
  }

  /** POST / (parentId undefined) or POST /<parentId>. Returns the new id. */
  async create(
    credentials: Credentials,
    body: unknown,
    parentId?: ElementId,
    conditions: Conditions = {},
  ): Promise<ElementId> {
    const now = this.clock.now();
    // Preconditions are evaluated against the target as the caller can read it, before the element is written (not
    // atomic with the insert: a new element changes neither its parent's representation nor, past its first
    // page, the index's): for POST /<parent> the parent, for POST / the index collection GET / answers.
    if (hasConditions(conditions)) {
      if (parentId !== undefined) await this.checkParentPreconditions(credentials, now, parentId, conditions);
      else await this.checkIndexPreconditions(credentials, now, conditions);
    }
    let parsed: NewElementBody;
    try {
      parsed = this.parseNew(body, parentId !== undefined);
    } catch (problem) {
      return this.authentication.failAfter(credentials, now, problem);
    }
    const { type, data, ends } = parsed;
    const id = newId();
    const { direct } = this.transactions;
    if (ends === null) {
      // A node: one statement (the common case: POST / and POST /<parent>).
      const node = { id, type, data, parentId: parentId ?? null, ownsId: newId(), createdId: newId() };
      let result: Awaited<ReturnType<ElementStore['insertNodeAs']>>;
      try {
        result = await this.transactions.retryingTransient(() =>
          this.store.insertNodeAs(direct, credentials, now, node),
        );
      } catch (error) {
        // The parent was deleted between the statement's snapshot and its foreign-key check.
        if (this.transactions.failureOf(error) === 'missing-reference') throw notFound();
        throw error;
      }
      if (!result.authenticated) throw unauthorized(credentials);
      if (!result.allowed) {
        // Only a node has children; a relation the caller can read is told so, anything else is missing.
        if (node.parentId !== null && (await this.isReadableRelation(credentials, now, node.parentId)))
          throw new Problem('bad-content', 'A relation has no children: POST /<id> creates a child of a node.');
        throw notFound();
      }
      if (!result.inserted) throw new Problem('reserved-identifier', `The id ${id} is already in use.`);
      return id;
    }
    const caller = await this.authentication.caller(credentials, now);
    const { start, end } = ends;
    try {
      await this.transactions.retryingTransient(() =>
        this.transactions.transaction(async (tx) => {
          await this.checkRelationCreate(tx, caller, type, start, end);
          await this.insertOrReserved(tx, { id, type, start, end, data, at: now });
        }),
      );
    } catch (error) {
      if (this.transactions.failureOf(error) === 'missing-reference') throw notFound(); // an end was deleted concurrently
      throw error;
    }
    return id;
  }

  /** The body of POST / or POST /<parent>, checked (400s) before the database is asked. */
  private parseNew(body: unknown, asChild: boolean): NewElementBody {
    if (!isPlainObject(body)) throw new Problem('bad-content', 'The request body must be a JSON object.');
    const type = checkNewType(body.type);
    const data = checkProperties(body.data, this.reserved(type));
    checkDataLimits(data, this.settings.element);
    // The spec: an id is "Assigned once at creation. Cannot be set by clients." (the design notes let a client choose it;
    // where the two disagree the spec wins.) A chosen id that was in use would also have told the caller that an
    // element it may not see exists.
    if (body.id !== undefined && body.id !== null)
      throw new Problem('forbidden-property', "The property 'id' is assigned by the service and cannot be set.");
    const hasStart = body.start !== undefined && body.start !== null;
    const hasEnd = body.end !== undefined && body.end !== null;
    if (hasStart !== hasEnd)
      throw new Problem(
        'incomplete-mutual-dependency',
        "A relation needs both 'start' and 'end'; only one of them was given.",
      );
    if (hasStart && asChild)
      throw new Problem('bad-content', 'Relations are created with POST /, not as children of an element.');
    let ends: NewElementBody['ends'] = null;
    if (hasStart) {
      const start = parseElementId(body.start);
      const end = parseElementId(body.end);
      if (start === null || end === null) throw new Problem('bad-content', "'start' and 'end' must be UUIDs.");
      ends = { start, end };
    }
    if (type === 'CREATED') throw new Problem('reserved-type', "'CREATED' relations are written by the service only.");
    return { type, data, ends };
  }

  private async checkParentPreconditions(
    credentials: Credentials,
    now: Date,
    parentId: ElementId,
    conditions: Conditions,
  ) {
    const found = await this.store.readable(this.transactions.direct, credentials, now, parentId);
    if (!found.authenticated) throw unauthorized(credentials);
    // An unreadable parent has no ETag the caller could know: If-Match fails, If-None-Match passes, and the create
    // itself decides between 201 and 404.
    checkWritePreconditions(conditions, found.body === null ? null : renderElement(found.body).etag);
  }

  private async checkIndexPreconditions(credentials: Credentials, now: Date, conditions: Conditions) {
    const { etag } = await this.collections.list(credentials, now, 'index', null, '/', {}, '/');
    checkWritePreconditions(conditions, etag ?? NO_ETAG);
  }

  private async isReadableRelation(credentials: Credentials, now: Date, id: ElementId): Promise<boolean> {
    const { body } = await this.store.readable(this.transactions.direct, credentials, now, id);
    return body !== null && (JSON.parse(body) as { start?: unknown }).start !== undefined;
  }

  private async insertOrReserved(tx: Tx, element: NewElement) {
    if (!(await this.store.insert(tx, element)))
      throw new Problem('reserved-identifier', `The id ${element.id} is already in use.`);
  }

  /**
   * Relation rules of the design notes: an access-granting relation needs ownership of its end, and its start must be a
   * User or Group (sharing by id) or an element the caller owns (moving within its own tree). Nobody can grant
   * what they do not own. Any other relation needs CREATE on its start and READ on its end, both nodes.
   */
  private async checkRelationCreate(tx: Tx, caller: Caller, type: string, start: ElementId, end: ElementId) {
    if (ACCESS_GRANTING.test(type)) {
      const endRow = await this.require(tx, caller, end, 'READ');
      if (!(await this.store.owns(tx, caller.userId, endRow.id))) throw notFound();
      const startRow = await this.store.byId(tx, start);
      if (!startRow) throw notFound();
      const principal = PRINCIPAL_TYPES.has(startRow.type);
      // Users and groups are shared with by id; any other start must be the caller's own, and one that is not is
      // answered as missing before its type is looked at (else a 400 would tell that it exists).
      if (!principal && !(await this.store.owns(tx, caller.userId, start))) throw notFound();
      if (type === 'IS_IN_GROUP' && (!principal || endRow.type !== 'Group'))
        throw new Problem('bad-content', "'IS_IN_GROUP' leads from a User or Group to a Group.");
      if (type === 'OWNS' && endRow.type === 'Token') throw new Problem('bad-content', TOKEN_OWNER);
      return;
    }
    const startRow = await this.require(tx, caller, start, 'CREATE');
    const endRow = await this.require(tx, caller, end, 'READ');
    // Relations connect nodes, as in the reference implementation's graph (Neo4j's relationships join nodes), and
    // as the access rules assume: a relation is read with READ on both of its ends as nodes (trellis_allows), so one
    // attached to a relation could be created but never read or deleted again. Asked after the permissions, so that
    // the answer tells nothing about an element the caller cannot see.
    if (startRow.startId !== null || endRow.startId !== null)
      throw new Problem('bad-content', 'A relation connects two nodes; its start and its end cannot be relations.');
  }

  /** PUT (replace all client properties) or PATCH (merge; null removes). */
  async update(
    credentials: Credentials,
    id: ElementId,
    body: unknown,
    mode: 'replace' | 'merge',
    conditions: Conditions = {},
  ): Promise<void> {
    const now = this.clock.now();
    if (!isPlainObject(body))
      return this.authentication.failAfter(
        credentials,
        now,
        new Problem('bad-content', 'The request body must be a JSON object of properties.'),
      );
    // One statement when nothing depends on the stored element before writing: no preconditions (they compare the
    // ETag of the rendered element) and no property that is reserved for any type (the check depends on the type).
    if (!hasConditions(conditions) && !this.touchesReserved(body)) {
      const props = checkPropertiesOrNull(body);
      if (props) {
        checkDataLimits(props, this.settings.element, 'body');
        const set: Record<string, unknown> = {};
        const remove: string[] = [];
        for (const [key, value] of Object.entries(props)) {
          if (value !== null) set[key] = value;
          else remove.push(key);
        }
        const change = {
          id,
          mode,
          set,
          remove,
          keep: this.keptOnReplace,
          limits: mergedLimitParams(this.settings.element),
        };
        const result = await this.transactions
          .retryingTransient(() => this.store.updateDataAs(this.transactions.direct, credentials, now, change))
          .catch((error: unknown) => {
            throw dataLimitProblem(error, this.settings.element) ?? error;
          });
        if (!result.authenticated) throw unauthorized(credentials);
        if (!result.updated) throw notFound();
        return;
      }
    }
    const caller = await this.authentication.caller(credentials, now);
    await this.transactions.transaction(async (tx) => {
      // The row lock makes If-Match a compare-and-set: concurrent writers queue here and see each other's change.
      const row = await this.require(tx, caller, id, 'UPDATE', { lock: true, render: hasConditions(conditions) });
      // Rendered exactly when there are preconditions to compare with.
      if (row.body !== undefined) checkWritePreconditions(conditions, etagOf(row.body));
      const props = checkProperties(body, this.reserved(row.type), 'body');
      checkDataLimits(props, this.settings.element, 'body');
      let data: Record<string, unknown>;
      if (mode === 'replace') {
        data = Object.fromEntries(Object.entries(props).filter(([, v]) => v !== null));
        // Properties the client cannot see or set survive a replace (e.g. a User's identifier).
        for (const key of this.reserved(row.type)) if (key in row.data) data[key] = row.data[key];
      } else {
        data = { ...row.data };
        for (const [key, value] of Object.entries(props)) {
          if (value === null) delete data[key];
          else data[key] = value;
        }
        checkDataLimits(data, this.settings.element);
      }
      await this.store.replaceData(tx, row.id, data, this.clock.now());
    });
  }

  private touchesReserved(body: Record<string, unknown>): boolean {
    return Object.keys(body).some((key) => this.reservedSomewhere.has(key));
  }

  async delete(caller: Caller, id: ElementId, conditions: Conditions = {}): Promise<void> {
    const withFiles = await this.transactions.retryingTransient(() =>
      this.transactions.transaction(async (tx) => {
        const row = await this.require(tx, caller, id, 'DELETE', { lock: true, render: hasConditions(conditions) });
        if (row.type === 'User') throw new Problem('forbidden', 'User nodes cannot be deleted through this endpoint.');
        if (row.type === 'OWNS' && (await this.store.byId(tx, row.endId!))?.type === 'Token')
          throw new Problem('bad-content', `${TOKEN_OWNER} Delete the token instead (DELETE /${row.endId}).`);
        // Rendered exactly when there are preconditions to compare with.
        if (row.body !== undefined) checkWritePreconditions(conditions, etagOf(row.body));
        return this.store.delete(tx, row.id);
      }),
    );
    // The rows are gone for good (committed); the bytes follow. A crash here, or a blob store that fails now, leaves
    // orphan blobs that the sweep removes, never an element pointing at missing bytes: the deletion has succeeded.
    await Promise.all(withFiles.map((fileId) => this.blobs.delete(fileId).catch(() => {})));
  }

  async graphStructure() {
    return this.store.types(this.transactions.direct);
  }
}
