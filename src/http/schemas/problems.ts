// The problem-details responses (RFC 9457), described from the one catalogue in src/errors.ts: a schema per slug,
// and per status the slugs that status can carry.
import { type TSchema, Type } from 'typebox';
import { PROBLEMS, type ProblemSlug } from '../../errors.js';
import { PROBLEM_CONTENT_TYPE } from '../problems.js';
import { type HeaderSpec, header, type ResponseSpec } from './common.js';

const SLUGS = Object.keys(PROBLEMS) as ProblemSlug[];

/** Some problems add members (offsets, range bounds): a problem object may have more than these four. */
function problemOf(slug: ProblemSlug): TSchema {
  const { status, title, detail } = PROBLEMS[slug];
  return Type.Object(
    {
      type: Type.String({
        pattern: `/error/${status}/${slug}$`,
        description: '{base_url}/error/<status>/<slug>: GET it for the canonical problem.',
      }),
      title: Type.Literal(title),
      status: Type.Literal(status),
      detail: Type.String({ description: 'What went wrong, for a person.' }),
    },
    { additionalProperties: true, title: slug, description: detail },
  );
}

const BY_SLUG = Object.fromEntries(SLUGS.map((slug) => [slug, problemOf(slug)])) as Record<ProblemSlug, TSchema>;

/** Every problem the service can answer with: the `Problem` component of the document. */
export const ProblemDetails = Type.Union(
  SLUGS.map((slug) => BY_SLUG[slug]),
  { description: 'A problem-details object (RFC 9457) of one of the slugs in the catalogue.' },
);

/** The canonical problem of one slug, as GET /error/<status>/<slug> answers it. */
export const problemSchema = (slug: ProblemSlug) => BY_SLUG[slug];

const RETRY_AFTER = header('Seconds to wait before trying again.');

/** Headers some problems carry, by slug. */
const PROBLEM_HEADERS: Partial<Record<ProblemSlug, Record<string, HeaderSpec>>> = {
  'too-many-requests': { 'Retry-After': RETRY_AFTER },
  'service-unavailable': { 'Retry-After': RETRY_AFTER },
  'range-not-satisfiable': { 'Content-Range': header('bytes */<total length>'), 'Accept-Ranges': header('bytes') },
};

/** The problem response of one status: the slugs of that status from the catalogue. */
function problemResponse(status: number): ResponseSpec {
  const slugs = SLUGS.filter((slug) => PROBLEMS[slug].status === status);
  if (slugs.length === 0) throw new Error(`no problem type has status ${status}`);
  const schema = slugs.length === 1 ? BY_SLUG[slugs[0]!] : Type.Union(slugs.map((slug) => BY_SLUG[slug]));
  const headers = Object.assign({}, ...slugs.map((slug) => PROBLEM_HEADERS[slug] ?? {}));
  const first = PROBLEMS[slugs[0]!];
  return {
    description: `Problem details: ${slugs.join(', ')}.`,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    content: {
      [PROBLEM_CONTENT_TYPE.split(';')[0]!]: {
        schema,
        example: {
          type: `https://trellis.example/error/${first.status}/${slugs[0]}`,
          title: first.title,
          status: first.status,
          detail: first.detail,
        },
      },
    },
  };
}

/** Responses every operation can give: the server failed, or is short of a resource for the moment. */
const ALWAYS = [500, 503];

/** The problem responses of an operation: the statuses given, and 500 and 503. */
export function problems(...statuses: number[]): Record<number, ResponseSpec> {
  return Object.fromEntries([...statuses, ...ALWAYS].map((status) => [status, problemResponse(status)]));
}
