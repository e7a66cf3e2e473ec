// The one error handler: renders every failure as application/problem+json from the catalogue in src/errors.ts.

import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ObjectStoreError } from '../blob/s3-errors.js';
import { Problem, type ProblemSlug, problemBody, serviceUnavailable } from '../errors.js';
import { baseUrlOf, COMMON_HEADERS } from './headers.js';
import type { LingeringClose } from './lingering-close.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

/** Maps framework errors (body parsing, schema validation) to the catalogue; everything unknown is a 500. */
export function toProblem(error: unknown): { problem: Problem; unexpected: boolean } {
  if (error instanceof Problem) return { problem: error, unexpected: false };
  // The object store could not be reached or did not answer in time: an outage the client may wait out. (The
  // database's are problems already, storage/db.ts.)
  if (error instanceof ObjectStoreError && error.unavailable)
    return {
      problem: serviceUnavailable('The file store cannot be reached or did not answer in time.'),
      unexpected: false,
    };
  // The process ran out of file descriptors (or the system did): the request may well succeed a little later.
  if (outOfDescriptors(error))
    return {
      problem: serviceUnavailable('The server has too many open files right now; nothing was changed.'),
      unexpected: false,
    };
  // The disk filled all the same (storage.minFreeSpaceInBytes is 0, or something else wrote to it): logged, since
  // the free-space check exists to keep this from happening.
  if (hasCode(error, 'ENOSPC', 'EDQUOT')) return { problem: new Problem('insufficient-storage'), unexpected: true };
  // The database crashed (SQLSTATE 57P02); the embedded one aborted (storage/pglite-wire.ts) and its server is on its
  // way down (server.ts), for a supervisor to start it again.
  if (hasCode(error, '57P02'))
    return { problem: serviceUnavailable('The database stopped working; retry shortly.'), unexpected: false };
  const e = error as FastifyError & { validation?: unknown; validationContext?: string };
  if (e?.validation)
    return {
      problem: new Problem('bad-content', `Invalid ${e.validationContext ?? 'request'}: ${e.message}`),
      unexpected: false,
    };
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return {
      problem: new Problem('bad-content', `Unsupported Content-Type: this endpoint expects application/json.`),
      unexpected: false,
    };
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return {
      problem: new Problem('bad-content', 'The request body is larger than this endpoint accepts.'),
      unexpected: false,
    };
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return {
      problem: new Problem('bad-content', 'The request body is empty but its Content-Type says JSON.'),
      unexpected: false,
    };
  if (code.startsWith('FST_ERR_CTP') || e?.statusCode === 400 || e instanceof SyntaxError)
    return { problem: new Problem('bad-content', `Malformed request body: ${e.message}`), unexpected: false };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const slug: ProblemSlug =
      e.statusCode === 404 ? 'not-found' : e.statusCode === 405 ? 'method-not-allowed' : 'bad-content';
    return { problem: new Problem(slug, e.message), unexpected: false };
  }
  return { problem: new Problem('internal-server-error'), unexpected: true };
}

/** EMFILE/ENFILE, also as the cause of another error (a stream that failed to open its file). */
const outOfDescriptors = (error: unknown): boolean => hasCode(error, 'EMFILE', 'ENFILE');

/** Whether the error, or one of its causes, has one of the codes. */
function hasCode(error: unknown, ...codes: string[]): boolean {
  for (
    let e = error, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && codes.includes(code)) return true;
  }
  return false;
}

export function sendProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  problem: Problem,
  baseUrl: string | null,
): FastifyReply {
  const body = problemBody(baseUrlOf(request, baseUrl), problem.slug, problem.detail, problem.extensions);
  for (const [name, value] of Object.entries(problem.headers)) reply.header(name, value);
  return reply.code(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}

/**
 * Errors of the router (Fastify's `frameworkErrors`): a path that is not valid percent-encoding is a 400; a path
 * segment longer than any id (maxParamLength) names no resource, a 404 like any other unknown path.
 */
export function frameworkProblem(error: FastifyError): Problem {
  if (error.code === 'FST_ERR_BAD_URL')
    return new Problem('bad-content', 'The request path is not valid percent-encoding.');
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') return new Problem('not-found', 'No resource at this path.');
  return toProblem(error).problem;
}

/**
 * Requests Node's HTTP parser rejects before Fastify sees them (a malformed request line, headers over the size
 * limit, a timeout) are answered on the socket: a problem body and the common headers, like every other answer.
 * There is no parsed Host, so the problem type is relative unless `baseUrl` is configured; the statuses without a
 * problem type of their own (408, 431) use RFC 9457's about:blank. The connection then closes with a lingering
 * close, so that the client can read the answer; an error of the connection itself (a reset, a broken pipe) is not
 * answered.
 */
export function answerClientError(baseUrl: string | null, lingering: LingeringClose) {
  return (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (socket.destroyed || error.code === 'ECONNRESET' || error.syscall !== undefined) return;
    const [status, reason] =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout']
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request Header Fields Too Large']
          : [400, 'Bad Request'];
    const body = JSON.stringify(
      status === 400
        ? problemBody(baseUrl ?? '', 'bad-content', 'The request is not valid HTTP.')
        : {
            type: 'about:blank',
            title: reason,
            status,
            detail:
              status === 431
                ? 'The request headers are larger than the server accepts.'
                : 'The request did not arrive in time.',
          },
    );
    const headers = {
      ...COMMON_HEADERS,
      'content-type': PROBLEM_CONTENT_TYPE,
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    };
    if (socket.writable)
      socket.write(
        `HTTP/1.1 ${status} ${reason}\r\n${Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('')}\r\n${body}`,
      );
    lingering.close(socket);
  };
}
