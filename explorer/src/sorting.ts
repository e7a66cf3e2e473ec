// What a sorted list asks for, without the page: the order a person picks (relevance, name, created, updated or a
// property they name, either way), as the address keeps it and as the step's Elasticsearch `sort` says it, and what
// the answer's count and a refused sort mean in words.
import type { GraphElement, SearchResponse } from './api.js';
import { count, formatDate } from './format.js';

export type SortBy = 'relevance' | 'name' | 'created' | 'updated' | 'property';

export interface Sort {
  by: SortBy;
  /** The data property's name as queries spell it (`priority`, `address.city`), for `by: 'property'`. */
  property: string;
  desc: boolean;
}

export const LABELS: Record<SortBy, string> = {
  relevance: 'Relevance',
  name: 'Name',
  created: 'Created',
  updated: 'Updated',
  property: 'A property',
};

/** The direction a choice starts in: the best, newest or last changed first; names and values from the smallest. */
export const DESCENDING_FIRST = new Set<SortBy>(['relevance', 'created', 'updated']);

export const RELEVANCE: Sort = { by: 'relevance', property: '', desc: true };

/** Hits per page, in the search and in Browse. */
export const PAGE_SIZE = 25;

/** The sort an address asks for (`sort=created&order=desc`, `sort=property&property=priority`), else relevance. */
export function sortOf(params: URLSearchParams): Sort {
  const by = params.get('sort');
  if (by === null || !Object.hasOwn(LABELS, by)) return RELEVANCE;
  const property = (params.get('property') ?? '').trim();
  if (by === 'property' && property === '') return RELEVANCE;
  const order = params.get('order');
  return { by: by as SortBy, property, desc: order === null ? DESCENDING_FIRST.has(by as SortBy) : order === 'desc' };
}

/** Adds the sort to an address's parameters (nothing for the default, relevance). */
export function putSort(params: URLSearchParams, sort: Sort): void {
  if (sort.by === 'relevance' && sort.desc) return;
  params.set('sort', sort.by);
  if (sort.by === 'property') params.set('property', sort.property);
  params.set('order', sort.desc ? 'desc' : 'asc');
}

/**
 * The step's `sort`. Names sort as whole strings (`name.keyword`), since `name` is a data property like any other;
 * the service breaks ties by the id, so every one of these is a total order that `search_after` can continue.
 */
export function sortKeys(sort: Sort): unknown[] {
  const order = sort.desc ? 'desc' : 'asc';
  if (sort.by === 'relevance') return [{ _score: order }];
  if (sort.by === 'name') return [{ 'name.keyword': order }];
  if (sort.by === 'property') return [{ [sort.property]: { order, missing: '_last' } }];
  return [{ [sort.by]: order }];
}

const nameOf = (sort: Sort) => (sort.by === 'property' ? `'${sort.property}'` : LABELS[sort.by].toLowerCase());

/**
 * A refused sort in plain words, from the detail of the service's 400, which names `sort[0]` and says why (values
 * of several kinds, objects, names that are not strings); null when the refusal is not about the sort.
 */
export function sortRefusal(detail: string, sort: Sort): string | null {
  // `…sort[0] (code): why` for the hits' values, `…sort[0].a..b: why` for the key itself.
  const reason = /\.sort\[0\](?: \([^)]*\)|\.[^:]*)?: (.*)$/.exec(detail)?.[1];
  if (reason === undefined) return null;
  const what = `Cannot sort by ${nameOf(sort)}`;
  const kinds = /several kinds there \(([^)]*)\)/.exec(reason)?.[1];
  if (kinds !== undefined) return `${what}: its values are of different kinds (${kinds.replace(/, /g, ' and ')}).`;
  if (/objects or arrays/.test(reason)) return `${what}: some of its values are objects or lists.`;
  if (/\.keyword sorts strings/.test(reason)) return `${what}: some of its values are not text.`;
  return `${what}: ${reason}.`;
}

/** "42 elements.", "At least 10,000 elements." (the service counts exactly up to 10,000), "No elements match." */
export function totalOf(response: SearchResponse): string {
  const total = response.totalHits ?? response.results.length;
  if (response.totalHitsRelation === 'gte') return `At least ${count(total, 'element')}.`;
  return total === 0 ? 'No elements match.' : `${count(total, 'element')}.`;
}

/** The value a list is sorted by, for showing beside each element ("Created 2 Dec 2026, 10:04"). */
export function sortedValue(element: GraphElement, sort: Sort): string | null {
  if (sort.by === 'created' || sort.by === 'updated') return `${LABELS[sort.by]} ${formatDate(element.data[sort.by])}`;
  if (sort.by !== 'property') return null;
  let value: unknown = element.data;
  for (const part of sort.property.split('.'))
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[part] : undefined;
  return `${sort.property}: ${value === undefined || value === null ? '(none)' : JSON.stringify(value)}`;
}
