// The collection endpoints (`/`, `/<id>/parents`, `/<id>/children`, `/<id>/related`) as `_PartialCollection`s.
import type { Settings } from '../../config/schema.js';
import { notFound, Problem } from '../../errors.js';
import type { ElementId } from '../../values.js';
import { type Authentication, unauthorized } from '../accounts/authentication.js';
import type { Credentials } from '../accounts/types.js';
import type { Transactions } from '../transactions.js';
import { type Conditions, checkReadPreconditions, NO_ETAG } from './conditions.js';
import type { ElementStore } from './ports.js';
import { etagOf } from './representation.js';
import type { CollectionKind } from './types.js';

export interface PageRequest {
  page?: string;
  pageSize?: string;
}

/**
 * `page` from 1 and `pageSize` clamped to the configured range; non-integers are 400 bad-content. An integer of any
 * length is clamped (the design notes: "integers out of range are clamped"): the page to one whose offset is still an
 * exact number, far beyond any collection.
 */
export function pagination(query: PageRequest, limits: Settings['pageSize']): { page: number; pageSize: number } {
  const parse = (name: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined) return fallback;
    if (!/^-?\d+$/.test(raw)) throw new Problem('bad-content', `The query parameter '${name}' must be an integer.`);
    return Number(raw);
  };
  const page = Math.min(Math.floor(Number.MAX_SAFE_INTEGER / limits.max), Math.max(1, parse('page', query.page, 1)));
  const pageSize = Math.min(limits.max, Math.max(limits.min, parse('pageSize', query.pageSize, limits.default)));
  return { page, pageSize };
}

export class Collections {
  constructor(
    private readonly transactions: Transactions,
    private readonly store: Pick<ElementStore, 'collectionPage'>,
    private readonly authentication: Authentication,
    private readonly settings: Settings,
  ) {}

  pagination(query: PageRequest): { page: number; pageSize: number } {
    return pagination(query, this.settings.pageSize);
  }

  /**
   * One collection page in one round trip: authentication, READ on the anchor and the page are one statement.
   * `credentials` come from `Accounts.credentials` (which already refused malformed headers); `anchorId` is null
   * for the index. 401 for credentials that name no user, then 400 for bad paging, then 404 for an anchor that is
   * missing or not readable (the same answer).
   */
  async list(
    credentials: Credentials,
    now: Date,
    kind: CollectionKind,
    anchorId: ElementId | null,
    path: string,
    query: PageRequest,
    requestId: string,
    conditions: Conditions = {},
  ): Promise<{ body: string; etag: string | null; notModified: boolean }> {
    let paging: { page: number; pageSize: number };
    try {
      paging = this.pagination(query);
    } catch (err) {
      return this.authentication.failAfter(credentials, now, err);
    }
    const { page, pageSize } = paging;
    const result = await this.store.collectionPage(
      this.transactions.direct,
      kind,
      credentials,
      now,
      anchorId,
      pageSize,
      (page - 1) * pageSize,
    );
    if (!result.authenticated) throw unauthorized(credentials);
    if (!result.found) throw notFound();
    const lastPage = Math.max(1, Math.ceil(result.total / pageSize));
    const link = (n: number) => {
      const params = new URLSearchParams();
      if (n > 1) params.set('page', String(n));
      if (pageSize !== this.settings.pageSize.default) params.set('pageSize', String(pageSize));
      const qs = params.toString();
      return qs ? `${path}?${qs}` : path;
    };
    // The elements arrive as JSON text from the database (storage/queries/element-json.ts) and are spliced in as
    // they are: parsing and serialising them again was most of the page's cost in this process.
    const head = JSON.stringify({
      type: '_PartialCollection',
      id: requestId,
      totalNodes: result.total,
      links: {
        first: link(1),
        previous: page > 1 ? link(Math.min(page - 1, lastPage)) : null,
        next: page < lastPage ? link(page + 1) : null,
        last: link(lastPage),
      },
    });
    const body = `${head.slice(0, -1)},"nodes":${result.nodesJson},"relations":${result.relationsJson}}`;
    const etag = result.total <= this.settings.cache.etagUpperLimitInCollectionEndpoints ? etagOf(body) : null;
    return { body, etag, notModified: checkReadPreconditions(conditions, etag ?? NO_ETAG) };
  }
}
