// The one error handler: renders every failure as application/problem+json from the catalogue in src/errors.ts.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Problem, problemBody, type ProblemSlug } from '../errors.js';
import { baseUrlOf } from './headers.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** Maps framework errors (body parsing, schema validation) to the catalogue; everything unknown is a 500. */
export function toProblem(error: unknown): { problem: Problem; unexpected: boolean } {
  if (error instanceof Problem) return { problem: error, unexpected: false };
  const e = error as FastifyError & { validation?: unknown; validationContext?: string };
  if (e && e.validation) return { problem: new Problem('bad-content', `Invalid ${e.validationContext ?? 'request'}: ${e.message}`), unexpected: false };
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return { problem: new Problem('bad-content', `Unsupported Content-Type: this endpoint expects application/json.`), unexpected: false };
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return { problem: new Problem('bad-content', 'The request body is larger than this endpoint accepts.'), unexpected: false };
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return { problem: new Problem('bad-content', 'The request body is empty but its Content-Type says JSON.'), unexpected: false };
  if (code.startsWith('FST_ERR_CTP') || e?.statusCode === 400 || (e instanceof SyntaxError))
    return { problem: new Problem('bad-content', `Malformed request body: ${e.message}`), unexpected: false };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const slug: ProblemSlug = e.statusCode === 404 ? 'not-found' : e.statusCode === 405 ? 'method-not-allowed' : 'bad-content';
    return { problem: new Problem(slug, e.message), unexpected: false };
  }
  return { problem: new Problem('internal-server-error'), unexpected: true };
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: Problem, baseUrl: string | null): FastifyReply {
  const body = problemBody(baseUrlOf(request, baseUrl), problem.slug, problem.detail, problem.extensions);
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}
