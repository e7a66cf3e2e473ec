// The explorer's only way to the service: its public HTTP API, same origin, with the session's token.
import { session } from './session.js';

interface Problem {
  type: string;
  title?: string;
  status: number;
  detail?: string;
  [member: string]: unknown;
}

interface FileInfo {
  contentLength: number;
  extension: string;
  mimeType: string;
  hash?: { sha256?: string };
}

export interface GraphElement {
  type: string;
  id: string;
  data: Record<string, unknown>;
  start?: string;
  end?: string;
  file?: FileInfo;
}

export interface Collection {
  type: '_PartialCollection';
  id: string;
  totalNodes: number;
  links: { first: string; previous: string | null; next: string | null; last: string };
  nodes: GraphElement[];
  relations: GraphElement[];
}

export interface SearchResponse {
  type: '_SearchResultResponse';
  results: GraphElement[];
  /** How many hits the last query step has: exact when `totalHitsRelation` is "eq", a lower bound when "gte". */
  totalHits?: number;
  totalHitsRelation?: 'eq' | 'gte';
  /** With a sort and a full page: the `search_after` that continues right after the last hit. */
  searchAfter?: unknown[];
  debug?: DebugEntry[];
}

export interface DebugEntry {
  'step-handler': string;
  start: number;
  end: number;
  duration: number;
  input: { type: string };
  [member: string]: unknown;
}

/** A refusal by the service: its status and, when it sent one, its problem details. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | null,
    /** Seconds to wait before asking again, when the service said (429 Retry-After). */
    readonly retryAfter: number | null = null,
  ) {
    super(problem?.detail ?? problem?.title ?? `The service answered ${status}.`);
  }
}

/** The Authorization header for the session's token (none without one). */
export function authHeaders(): Record<string, string> {
  const token = session.token;
  return token ? { Authorization: `Bearer ${token}` } : {};
}

interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** Sends a request; JSON bodies both ways. Anything but 2xx throws an ApiError carrying the problem details. */
export async function request<T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const init: RequestInit = { method, headers: { ...authHeaders(), ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
  }
  const response = await fetch(path, init);
  // 401 with the session's token means the token is no longer good (expired, revoked, logged out elsewhere).
  if (response.status === 401 && headers.Authorization === undefined && session.token !== null) session.ended();
  const text = await response.text();
  let parsed: unknown = null;
  if (text !== '' && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  if (!response.ok) {
    const retryAfter = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
    throw new ApiError(
      response.status,
      isProblem(parsed) ? parsed : null,
      Number.isNaN(retryAfter) ? null : retryAfter,
    );
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && 'status' in value && 'type' in value;
}

/** The id in a `Location` such as `/<id>` or `/<id>/file`. */
function idFromLocation(headers: Headers): string {
  const location = headers.get('location') ?? '';
  return location.split('/')[1] ?? '';
}

export const getElement = async (id: string) => request<GraphElement>('GET', `/${id}`);

/** What the caller may do, from the `Allow` header of a GET: write (PUT) and delete (DELETE). */
export interface Abilities {
  write: boolean;
  delete: boolean;
}

/**
 * The caller's abilities on what a GET answered. A service that sends no `Allow` predates the header: everything
 * is offered then, as before, and the service's refusal is shown.
 */
export function abilitiesOf(headers: Headers): Abilities {
  const allow = headers.get('allow');
  if (allow === null) return { write: true, delete: true };
  const methods = new Set(allow.split(',').map((method) => method.trim().toUpperCase()));
  return { write: methods.has('PUT'), delete: methods.has('DELETE') };
}

export interface Principal {
  id: string;
  type: string;
  name: string | null;
}

/** A user or group by exact e-mail or name (the service throttles and caps the lookup). */
export async function findPrincipals(identifier: string): Promise<Principal[]> {
  const query = new URLSearchParams({ identifier });
  return (await request<{ items: Principal[] }>('GET', `/principals?${query}`)).body.items;
}

const names = new Map<string, Promise<Principal | null>>();
/** Users and groups by id, for naming people; ids that are not a user or group (or not known) give null. */
export async function principalsById(ids: string[]): Promise<Map<string, Principal | null>> {
  const missing = [...new Set(ids)].filter((id) => !names.has(id));
  if (missing.length > 0) {
    const query = new URLSearchParams(missing.map((id) => ['id', id]));
    const batch = request<{ items: Principal[] }>('GET', `/principals?${query}`).then(
      (answer) => answer.body.items,
      () => [] as Principal[],
    );
    for (const id of missing)
      names.set(
        id,
        batch.then((items) => items.find((item) => item.id === id) ?? null),
      );
  }
  const entries = await Promise.all(ids.map(async (id) => [id, await names.get(id)!] as const));
  return new Map(entries);
}

/** A person's or group's name for a sentence: their name, else "a user" and the start of the id. */
export function principalName(principal: Principal | null | undefined, id: string): string {
  if (principal?.name) return principal.name;
  return `${principal?.type === 'Group' ? 'a group' : 'someone'} (${id.slice(0, 8)})`;
}

export const getCollection = async (path: string) => (await request<Collection>('GET', path)).body;

export async function createElement(body: Record<string, unknown>, parent?: string): Promise<string> {
  return idFromLocation((await request('POST', parent ? `/${parent}` : '/', body)).headers);
}

/** The element's display name: its `name`, else its type and the start of its id. */
export function labelOf(element: GraphElement): string {
  const name = element.data?.name;
  return typeof name === 'string' && name !== '' ? name : `${element.type} ${element.id.slice(0, 8)}`;
}

export interface InstanceConfiguration {
  register: { enabled: boolean; uniqueIdentifier: string };
  file: { maxFileSizeInBytes: number; uploadMinChunkSizeInBytes: number; uploadMaxChunkSizeInBytes: number };
}

/** The service's defaults. */
export const DEFAULT_CONFIGURATION: InstanceConfiguration = {
  register: { enabled: true, uniqueIdentifier: 'email' },
  file: {
    maxFileSizeInBytes: 10 * 2 ** 30,
    uploadMinChunkSizeInBytes: 5 * 2 ** 20,
    uploadMaxChunkSizeInBytes: 101 * 2 ** 20,
  },
};

let configuration: Promise<InstanceConfiguration> | null = null;
/** The instance configuration, read once (it is public and fixed while the service runs). */
export function instanceConfiguration(): Promise<InstanceConfiguration> {
  configuration ??= request<InstanceConfiguration>('GET', '/instance-configuration').then(
    (answer) => answer.body,
    // Published by default; an instance that hides it gets the service's defaults.
    () => DEFAULT_CONFIGURATION,
  );
  return configuration;
}
