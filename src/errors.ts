// The one catalogue of problem types the service can emit (RFC 9457 problem details). Every error response is
// rendered from here by the HTTP error handler; domain code throws `Problem`s and never builds responses.

export const PROBLEMS = {
  'bad-content': { status: 400, title: 'Bad content', detail: 'The request content is malformed or violates a rule.' },
  'forbidden-property': { status: 400, title: 'Forbidden property', detail: 'The request sets a reserved property.' },
  'incomplete-mutual-dependency': {
    status: 400,
    title: 'Incomplete mutual dependency',
    detail: 'Properties that depend on each other are only partly given.',
  },
  'missing-property': { status: 400, title: 'Missing property', detail: 'A required property is absent.' },
  'reserved-identifier': { status: 400, title: 'Reserved identifier', detail: 'The identifier is already in use.' },
  'reserved-type': { status: 400, title: 'Reserved type', detail: 'The type is reserved and cannot be used here.' },
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    detail:
      'Authorization failed: the token is invalid, expired or revoked, the credentials are wrong, or no user is available.',
  },
  forbidden: { status: 403, title: 'Forbidden', detail: 'The endpoint, element or action is forbidden.' },
  'not-found': { status: 404, title: 'Not Found', detail: 'The requested resource was not found.' },
  'method-not-allowed': {
    status: 405,
    title: 'Method Not Allowed',
    detail: 'The method is not allowed for this resource.',
  },
  conflict: { status: 409, title: 'Conflict', detail: 'The request conflicts with the current state of the resource.' },
  gone: { status: 410, title: 'Gone', detail: 'The resource is no longer available.' },
  'precondition-failed': {
    status: 412,
    title: 'Precondition Failed',
    detail: 'A precondition of the request was not met.',
  },
  'range-not-satisfiable': {
    status: 416,
    title: 'Range Not Satisfiable',
    detail: 'The requested range cannot be served for this file.',
  },
  // Failed credential checks back off (domain/accounts/throttle.ts), registrations are counted per address
  // (registration-throttle.ts); the response carries Retry-After.
  'too-many-requests': {
    status: 429,
    title: 'Too Many Requests',
    detail: 'Too many attempts: wait as long as Retry-After says before the next one.',
  },
  'internal-server-error': {
    status: 500,
    title: 'Internal Server Error',
    detail: 'The server failed to handle the request.',
  },
  'not-implemented': { status: 501, title: 'Not Implemented', detail: 'The operation is not implemented.' },
  'service-unavailable': {
    status: 503,
    title: 'Service Unavailable',
    detail: 'The service cannot take this request right now; retry after the number of seconds in Retry-After.',
  },
  // Below storage.minFreeSpaceInBytes (domain/capacity.ts): writes stop before the disk fills, reads go on.
  'insufficient-storage': {
    status: 507,
    title: 'Insufficient Storage',
    detail: 'The server is short of disk space: it takes no writes until space is freed; reads go on.',
  },
} as const satisfies Record<string, { status: number; title: string; detail: string }>;

export type ProblemSlug = keyof typeof PROBLEMS;

export type ProblemExtensions = Record<string, string | number | boolean | null>;

export class Problem extends Error {
  readonly status: number;
  constructor(
    readonly slug: ProblemSlug,
    readonly detail: string = PROBLEMS[slug].detail,
    readonly extensions: ProblemExtensions = {},
    /** Extra response headers (e.g. `Allow`, `Upload-Offset`, `Content-Range`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(`${slug}: ${detail}`);
    this.name = 'Problem';
    this.status = PROBLEMS[slug].status;
  }
}

export interface ProblemBody extends Record<string, unknown> {
  type: string;
  title: string;
  status: number;
  detail: string;
}

export function problemBody(
  baseUrl: string,
  slug: ProblemSlug,
  detail?: string,
  extensions: ProblemExtensions = {},
): ProblemBody {
  const entry = PROBLEMS[slug];
  return {
    type: `${baseUrl}/error/${entry.status}/${slug}`,
    title: entry.title,
    status: entry.status,
    detail: detail ?? entry.detail,
    ...extensions,
  };
}

/** Shorthands for the problems thrown most often. */
export const notFound = () => new Problem('not-found');
export const badContent = (detail: string, extensions?: ProblemExtensions) =>
  new Problem('bad-content', detail, extensions);
/** Seconds a client is asked to wait (Retry-After) when the service is short of a resource for the moment. */
const RETRY_AFTER_SECONDS = 5;
export const serviceUnavailable = (detail: string) =>
  new Problem('service-unavailable', detail, {}, { 'retry-after': String(RETRY_AFTER_SECONDS) });
