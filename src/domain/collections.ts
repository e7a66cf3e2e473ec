// The collection endpoints (`/`, `/<id>/parents`, `/<id>/children`, `/<id>/related`) as `_PartialCollection`s.
import type { Settings } from '../config/schema.js';
import { Problem } from '../errors.js';
import type { Db } from '../storage/db.js';
import type { Caller } from '../storage/queries/accounts.js';
import { collectionPage, type CollectionKind } from '../storage/queries/collections.js';
import { ifNoneMatchHits, type Conditions } from './conditions.js';
import type { Elements } from './elements.js';
import { etagOf, toElementJson } from './representation.js';

export interface PageRequest {
  page?: string;
  pageSize?: string;
}

export class Collections {
  constructor(
    private readonly db: Db,
    private readonly settings: Settings,
    private readonly elements: Elements,
  ) {}

  /** `page` from 1 and `pageSize` clamped to the configured range; non-integers are 400 bad-content. */
  pagination(query: PageRequest): { page: number; pageSize: number } {
    const parse = (name: string, raw: string | undefined, fallback: number) => {
      if (raw === undefined) return fallback;
      if (!/^-?\d{1,15}$/.test(raw)) throw new Problem('bad-content', `The query parameter '${name}' must be an integer.`);
      return Number(raw);
    };
    const limits = this.settings.pageSize;
    const page = Math.max(1, parse('page', query.page, 1));
    const pageSize = Math.min(limits.max, Math.max(limits.min, parse('pageSize', query.pageSize, limits.default)));
    return { page, pageSize };
  }

  async list(
    caller: Caller,
    kind: CollectionKind,
    anchorId: string | null,
    path: string,
    query: PageRequest,
    requestId: string,
    conditions: Conditions = {},
  ): Promise<{ body: string; etag: string | null; notModified: boolean }> {
    const { page, pageSize } = this.pagination(query);
    let anchor = caller.userId;
    if (anchorId !== null) anchor = (await this.elements.require(this.db, caller, anchorId, 'READ')).id;
    const result = await collectionPage(this.db, kind, caller.userId, anchor, pageSize, (page - 1) * pageSize);
    const lastPage = Math.max(1, Math.ceil(result.total / pageSize));
    const link = (n: number) => {
      const params = new URLSearchParams();
      if (n > 1) params.set('page', String(n));
      if (pageSize !== this.settings.pageSize.default) params.set('pageSize', String(pageSize));
      const qs = params.toString();
      return qs ? `${path}?${qs}` : path;
    };
    const body = JSON.stringify({
      type: '_PartialCollection',
      id: requestId,
      totalNodes: result.total,
      links: {
        first: link(1),
        previous: page > 1 ? link(Math.min(page - 1, lastPage)) : null,
        next: page < lastPage ? link(page + 1) : null,
        last: link(lastPage),
      },
      nodes: result.nodes.map(toElementJson),
      relations: result.relations.map(toElementJson),
    });
    const etag = result.total <= this.settings.cache.etagUpperLimitInCollectionEndpoints ? etagOf(body) : null;
    return { body, etag, notModified: ifNoneMatchHits(conditions.ifNoneMatch, etag) };
  }
}
