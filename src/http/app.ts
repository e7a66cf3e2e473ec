// Builds the Fastify application from configuration and services that are passed in (nothing is read globally).
import { ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/schema.js';
import { Problem } from '../errors.js';
import type { Services } from '../services.js';
import { guardConnections } from './connection-guard.js';
import explorerRoutes from './explorer.js';
import { type ClientAddressing, clientAddressing } from './forwarded.js';
import { COMMON_HEADERS } from './headers.js';
import { installJsonBodyParser } from './json-body.js';
import { LingeringClose } from './lingering-close.js';
import { registerOpenApi } from './openapi.js';
import { answerClientError, frameworkProblem, sendProblem, toProblem } from './problems.js';
import { requestLogger } from './request-logger.js';
import { measureRequests } from './request-metrics.js';
import { traceRequests, withTraceId } from './request-tracing.js';
import { WEBDAV_METHODS } from './resource.js';
import type { RouteDeps } from './route-deps.js';
import accountRoutes from './routes/accounts.js';
import elementRoutes from './routes/elements.js';
import eventRoutes from './routes/events.js';
import fileRoutes from './routes/files.js';
import healthRoutes from './routes/health.js';
import principalRoutes from './routes/principals.js';
import searchRoutes from './routes/search.js';
import systemRoutes from './routes/system.js';
import uploadRoutes from './routes/uploads.js';
import webhookRoutes from './routes/webhooks.js';
import { guardStorage, stoppedForSpace } from './storage-guard.js';
import type { App } from './types.js';

export interface AppDeps extends RouteDeps {
  /** A pino logger; none means silent. */
  logger?: FastifyBaseLogger;
}

const JSON_BODY_LIMIT = 8 * 1024 * 1024;

/** A validator that takes every request part as it came: the domain validates (see buildApp). */
const acceptAsParsed = () => true;

export async function buildApp({ config, services, logger }: AppDeps): Promise<App> {
  const lingering = new LingeringClose();
  const addressing = clientAddressing(config.settings.server);
  const app = createFastify(config, logger, services.tracing, lingering, addressing.trustProxy);
  // Before Fastify's own listener: the request's headers are what Fastify reads from its first step on.
  const { normalise } = addressing;
  if (normalise) app.server.prependListener('request', normalise);
  // The route schemas describe the interface (the OpenAPI document) and type the handlers; they compile into no
  // validator and no serialiser. The domain parses every request, answering each fault with its own problem in its
  // own order (credentials first; configuration-dependent rules), and the handlers send JSON that is already
  // serialised (elements are rendered by the database). The test suite checks that the two agree: every response it
  // sees is validated against the document (test/helpers/openapi-check.ts).
  app.setValidatorCompiler(() => acceptAsParsed);
  app.setSerializerCompiler(() => JSON.stringify);
  if (services.tracing) traceRequests(app, services.tracing);
  if (services.metrics) measureRequests(app, services.metrics);
  answerConnect(app, addressing);
  guardConnections(app, config.settings.server, lingering);
  // Routed so that an element can answer them 501 (resource.ts); Node's parser knows them. Bodyless: Fastify never
  // parses a body of theirs (they are refused before any would be wanted).
  for (const method of WEBDAV_METHODS) app.addHttpMethod(method);
  installJsonBodyParser(app, JSON_BODY_LIMIT);

  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(COMMON_HEADERS);
    // RFC 9112 section 3.2: a server answers an HTTP/1.1 request without a Host header with 400.
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1')
      return done(new Problem('bad-content', 'An HTTP/1.1 request must carry a Host header.'));
    done();
  });
  guardStorage(app, services.capacity);
  // Fastify logs each request (method, url) and its completion (status, response time); its serialisers log no
  // headers, so Authorization never reaches the log.

  answerErrors(app, config, services);
  // The change feed's streams never end on their own: they are ended before the server waits for its requests.
  services.events.onError = (err) => app.log.error({ err }, 'change feed failed');
  app.addHook('preClose', async () => services.events.close());

  // CORS preflight (and any OPTIONS): 204 with the common headers, whatever the path, answered before any body
  // would be parsed.
  app.route({
    method: 'OPTIONS',
    url: '*',
    schema: { hide: true },
    onRequest: (_request, reply) => {
      reply.code(204).send();
    },
    handler: async (_request, reply) => reply.code(204).send(),
  });

  const deps = { config, services };
  await registerOpenApi(app);
  await app.register(systemRoutes, deps);
  await app.register(healthRoutes, deps);
  await app.register(accountRoutes, deps);
  await app.register(principalRoutes, deps);
  await app.register(elementRoutes, deps);
  await app.register(fileRoutes, deps);
  await app.register(uploadRoutes, deps);
  await app.register(searchRoutes, deps);
  await app.register(eventRoutes, deps);
  await app.register(webhookRoutes, deps);
  await app.register(explorerRoutes);
  return app;
}

/**
 * Node hands a CONNECT request to the server's 'connect' listeners instead of its request handler, and without one it
 * closes the socket: the client would get no answer at all. CONNECT is routed like any other method instead (405 with
 * Allow on a known path, from resource.ts; 404 elsewhere, including a proxy's `host:port` target). The connection
 * closes after the answer, since Node's parser stops reading a connection once it has seen CONNECT.
 */
function answerConnect(app: App, { normalise }: ClientAddressing): void {
  app.addHttpMethod('CONNECT');
  app.server.on('connect', (request, socket) => {
    socket.on('error', () => socket.destroy());
    normalise?.(request);
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket as never);
    response.on('finish', () => {
      response.detachSocket(socket as never);
      socket.end();
    });
    app.routing(request, response);
  });
}

/** The Fastify instance with the service's server options. */
function createFastify(
  config: Config,
  logger: FastifyBaseLogger | undefined,
  tracing: Services['tracing'],
  lingering: LingeringClose,
  trustProxy: ClientAddressing['trustProxy'],
): App {
  return Fastify({
    ...(logger
      ? { loggerInstance: logger, childLoggerFactory: withTraceId(requestLogger, tracing) }
      : { logger: false }),
    bodyLimit: JSON_BODY_LIMIT,
    // request.ip, .protocol and .host say the client's, behind a trusted proxy (forwarded.ts).
    trustProxy,
    exposeHeadRoutes: true,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // No limit on the whole request: it would cut a large upload that moves steadily. Slow bodies are cut by
    // connection-guard.ts instead; headers still have Node's headersTimeout (60 s), idle keep-alive Fastify's 72 s.
    requestTimeout: 0,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    // Errors Fastify raises before any route or hook runs: problem details with the common headers too.
    frameworkErrors: (error, request, reply) => {
      reply.headers(COMMON_HEADERS);
      return sendProblem(request, reply, frameworkProblem(error), config.settings.baseUrl);
    },
    clientErrorHandler: answerClientError(config.settings.baseUrl, lingering),
    // Node would answer an HTTP/1.1 request without Host with a bare 400 of its own; the hook below answers it
    // with a problem and the common headers instead.
    http: { requireHostHeader: false },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
}

/** Every error as problem details: the catalogue's, Fastify's own and unknown paths alike. */
function answerErrors(app: App, config: Config, services: Services): void {
  const baseUrl = config.settings.baseUrl;
  app.setErrorHandler(async (error, request, reply) => {
    const { problem: found, unexpected } = toProblem(error);
    const problem = stoppedForSpace(request, found);
    if (unexpected) request.log.error({ err: error, method: request.method, url: request.url }, 'unexpected error');
    else if (problem.status === 503)
      request.log.warn({ err: error, method: request.method, url: request.url }, 'service unavailable');
    // A body Fastify could not parse fails before the handler authenticates; bad credentials still answer 401
    // first (spec "Authentication" 3), so only this error path pays for the lookup.
    if (!unexpected && !(error instanceof Problem) && request.routeOptions.config.authorization !== 'ignored') {
      const refusal = await services.accounts.authenticate(request.headers.authorization).then(
        () => null,
        (e: unknown) => (e instanceof Problem ? e : null),
      );
      if (refusal) return sendProblem(request, reply, refusal, baseUrl);
    }
    return sendProblem(request, reply, problem, baseUrl);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, new Problem('not-found', `No resource at ${request.url.split('?')[0]}.`), baseUrl),
  );
}
