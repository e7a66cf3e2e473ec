// The domain's ElementStore port (domain/elements/ports.ts) in SQL: each method is one of the statements of
// queries/elements.ts, queries/collections.ts or queries/access.ts, with rows turned into the domain's shapes.

import type { ElementStore, StoredElement } from '../domain/elements/ports.js';
import type { CollectionKind, Permission } from '../domain/elements/types.js';
import type { Tx } from '../domain/transactions.js';
import { type ElementId, storedElementId } from '../values.js';
import type { AccessDecisions } from './access-decisions.js';
import { owns } from './queries/access.js';
import { collectionPage } from './queries/collections.js';
import * as sql from './queries/elements.js';
import { queryable } from './transactions.js';

/** A stored row as the domain sees it. */
function storedElement(row: sql.ElementRow & { body?: string }): StoredElement {
  const element: StoredElement = {
    id: storedElementId(row.id),
    type: row.type,
    startId: row.start_id === null ? null : storedElementId(row.start_id),
    endId: row.end_id === null ? null : storedElementId(row.end_id),
    data: row.data,
    file: row.file,
    created: row.created,
    updated: row.updated,
  };
  if (row.body !== undefined) element.body = row.body;
  return element;
}

/** `decisions`: the access decisions of this process (access-decisions.ts), for the reads and writes that keep them. */
export function sqlElementStore(decisions?: AccessDecisions): ElementStore {
  return {
    insert: (tx, element) => sql.insertElement(queryable(tx), element),
    async byId(tx, id, lock) {
      const row = await sql.elementById(queryable(tx), id, lock);
      return row && storedElement(row);
    },
    async withPermission(tx, id, userId, permission: Permission, options) {
      const found = await sql.elementWithPermission(queryable(tx), id, userId, permission, options);
      return found && { element: storedElement(found.row), allowed: found.allowed, mayUpdate: found.mayUpdate };
    },
    bodyById: (tx, id) => sql.elementBodyById(queryable(tx), id),
    readable: (tx, credentials, now, id) => sql.readableElement(queryable(tx), credentials, now, id, decisions),
    insertNodeAs: (tx, credentials, now, node) => sql.insertNodeAs(queryable(tx), credentials, now, node),
    updateDataAs: (tx, credentials, now, change) =>
      sql.updateDataAs(queryable(tx), credentials, now, change, decisions),
    replaceData: (tx, id, data, at) => sql.replaceData(queryable(tx), id, data, at),
    delete: async (tx, id) => (await sql.deleteElement(queryable(tx), id)).map(storedElementId),
    owns: (tx, userId, id) => owns(queryable(tx), userId, id),
    types: (tx) => sql.elementTypes(queryable(tx)),
    collectionPage: (tx: Tx, kind: CollectionKind, credentials, now, anchorId: ElementId | null, limit, offset) =>
      collectionPage(queryable(tx), kind, credentials, now, anchorId, limit, offset, decisions),
  };
}
