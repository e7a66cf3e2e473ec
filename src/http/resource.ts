// Registers the methods of one path and answers every other method with 405 + Allow, so that "known path,
// wrong method" never falls through to the 404 handler.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyBaseLogger,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  onSendHookHandler,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
  RouteShorthandOptions,
} from 'fastify';
import { Problem } from '../errors.js';
import { headOf } from './schemas/common.js';
import { problems } from './schemas/problems.js';
import { changesState } from './storage-guard.js';
import type { App } from './types.js';

/**
 * WebDAV's methods. The app routes them (app.ts) so that an element can answer them 501 not-implemented, as the
 * reference implementation does; on every other path they are methods like any other the path does not serve (405).
 */
export const WEBDAV_METHODS = ['COPY', 'LOCK', 'UNLOCK', 'MKCOL', 'MOVE', 'PROPFIND', 'PROPPATCH'] as const;
type WebDavMethod = (typeof WEBDAV_METHODS)[number];

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | WebDavMethod;
/** The methods an `Allow` header names (a method answered 501 is not allowed: it is not implemented). */
const ALL: Method[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * 'ignored' on the routes that take their credentials from the body (/register, POST /token,
     * POST /change-password): a body error there is reported without looking at the Authorization header. Every
     * other route evaluates it first.
     */
    authorization?: 'ignored';
  }
}

/** A handler typed from its route's schema (params, query string, headers, body) by the TypeBox type provider. */
export type TypedHandler<S extends FastifySchema> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  S,
  TypeBoxTypeProvider,
  FastifyBaseLogger
>;

type Options = Omit<RouteShorthandOptions, 'schema'>;

type OperationSchema = FastifySchema & { operationId?: string; summary?: string; hide?: boolean };

/** One method of a path: registers its route (the schema, the handler typed from it, other route options). */
export type Handler = (app: App, method: Method, url: string, lastOnSend?: onSendHookHandler) => void;

/**
 * Every route declares its schema: it is what the OpenAPI document says about the route (openapi.ts). The HEAD route
 * that resource() adds for a GET is documented as the GET's operation without bodies.
 */
export function operation<S extends OperationSchema>(
  schema: S,
  handler: TypedHandler<S>,
  options: Options = {},
): Handler {
  return (app, method, url, lastOnSend) => {
    const onSend = lastOnSend ? [...[options.onSend ?? []].flat(), lastOnSend] : options.onSend;
    // A copy per route: @fastify/swagger edits the schema objects it reads, which the schema modules share.
    const documented = structuredClone(lastOnSend ? headOf(schema) : schema);
    // A write may be refused while the disk is short of space (storage-guard.ts).
    if (changesState(method, options.config))
      documented.response = { ...problems(507), ...(documented.response as object | undefined) };
    app.route({ ...options, ...(onSend ? { onSend } : {}), schema: documented, method, url, handler });
  };
}

export function resource(app: App, url: string, methods: Partial<Record<Method, Handler>>): void {
  const given = Object.keys(methods) as Method[];
  const supported = new Set<string>(given);
  supported.add('OPTIONS');
  // A GET without a HEAD of its own gets one that runs the GET's handler; it is registered first, so that Fastify
  // does not add its own (whose Content-Length differs from GET's on a 304: headersOfGet).
  const routes = given.flatMap((method) =>
    method === 'GET' && !supported.has('HEAD') ? (['HEAD', 'GET'] as const) : [method],
  );
  if (supported.has('GET')) supported.add('HEAD');
  const allow = [...ALL.filter((m) => supported.has(m)), 'OPTIONS'].join(', ');
  for (const method of routes) {
    const register = methods[method] ?? methods.GET!;
    register(app, method, url, method === 'HEAD' && methods.HEAD === undefined ? headersOfGet : undefined);
  }
  // Every other method Fastify routes (TRACE and QUERY too), refused before the body is read or parsed: the answer
  // is 405 whatever was sent, never a 400 about a body nobody wants.
  const rest = app.supportedMethods.filter((m) => !supported.has(m));
  if (rest.length > 0) {
    const refuse = () => new Problem('method-not-allowed', `Allowed methods: ${allow}.`, {}, { allow });
    app.route({
      method: rest,
      url,
      // Not operations of the interface: the document lists the methods a path serves.
      schema: { hide: true },
      onRequest: (_request, _reply, done) => done(refuse()),
      handler: async () => {
        throw refuse();
      },
    });
  }
}

/**
 * The last onSend of a HEAD route that runs a GET's handler: sets the headers GET's answer gets (Fastify's
 * onSendEnd) and drops the body. Fastify's own HEAD route says `Content-Length: 0` on a 304 or a 204, where GET
 * says none (RFC 9110 8.6: a 304 or 204 carries no Content-Length of a body).
 */
function headersOfGet(
  _request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (err: null, payload: null) => void,
): void {
  const status = reply.statusCode;
  const bodiless = status < 200 || status === 204 || status === 304;
  if (payload === undefined || payload === null) {
    if (!bodiless) reply.header('content-length', '0');
  } else if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
    if (status < 200 || status === 204) reply.removeHeader('content-type').removeHeader('content-length');
    else reply.header('content-length', String(Buffer.byteLength(payload)));
  } else if (typeof (payload as NodeJS.ReadableStream).resume === 'function') {
    // A stream is sent without a length of Fastify's: GET's handler set any it has.
    (payload as NodeJS.ReadableStream).on('error', () => {}).resume();
  }
  done(null, null);
}
