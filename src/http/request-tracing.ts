// Requests as traces see them. Every request that carries a W3C traceparent has its trace id in each of its log
// lines; with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT) every request has a server span, a child of that traceparent
// when there is one, whose trace id its log lines carry, and the statements and blob store calls it makes are
// children of it (the handler runs in the span's context).
import type { IncomingMessage } from 'node:http';
import {
  context,
  defaultTextMapGetter,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import type { Tracing } from '../tracing/port.js';
import type { App } from './types.js';

const propagator = new W3CTraceContextPropagator();
/** The shape of Fastify's `childLoggerFactory` (requestLogger in http/request-logger.ts). */
type ChildLoggerFactory = (
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
  raw: IncomingMessage,
) => FastifyBaseLogger;

const SPAN = Symbol('trellis.tracing.span');
type Traced = IncomingMessage & { [SPAN]?: Span };

/** The context a request's traceparent (and tracestate) carry; the root context without one. */
const incoming = (raw: IncomingMessage) =>
  raw.headers.traceparent === undefined
    ? ROOT_CONTEXT
    : propagator.extract(ROOT_CONTEXT, raw.headers, defaultTextMapGetter);

/** Probes come every second from every load balancer: they are not traced (nor are their statements). */
const untraced = (raw: IncomingMessage) => raw.url?.startsWith('/health/') === true;

/** The request's server span, started the first time it is asked for. */
function requestSpan(raw: IncomingMessage, tracing: Tracing): Span {
  const traced = raw as Traced;
  if (untraced(raw)) traced[SPAN] ??= trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
  traced[SPAN] ??= tracing.tracer.startSpan(
    `${raw.method ?? 'HTTP'}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': raw.method ?? '' } },
    incoming(raw),
  );
  return traced[SPAN];
}

/**
 * Fastify's `childLoggerFactory` around `factory`: the request's logger is bound to its trace id. Fastify makes it
 * before any hook runs, so the request's span starts here when tracing is on.
 */
export function withTraceId(factory: ChildLoggerFactory, tracing: Tracing | null): ChildLoggerFactory {
  return (logger, bindings, options, request) => {
    const spanContext = tracing
      ? requestSpan(request, tracing).spanContext()
      : request.headers.traceparent === undefined
        ? undefined
        : trace.getSpanContext(incoming(request));
    const traceId = spanContext && isSpanContextValid(spanContext) ? spanContext.traceId : undefined;
    return factory(logger, traceId ? { ...bindings, traceId } : bindings, options, request);
  };
}

/** Installs the request spans on `app` (tracing on); call before the routes are registered. */
export function traceRequests(app: App, tracing: Tracing): void {
  // Run the rest of the request in its span's context: once from the start, and again before the handler, which
  // a request body's stream events would otherwise call outside it.
  const within = (raw: IncomingMessage, done: () => void) =>
    context.with(trace.setSpan(context.active(), requestSpan(raw, tracing)), done);
  app.addHook('onRequest', (request, _reply, done) => within(request.raw, done));
  app.addHook('preHandler', (request, _reply, done) => within(request.raw, done));
  app.addHook('onResponse', (request, reply, done) => {
    const span = requestSpan(request.raw, tracing);
    const route = request.routeOptions.url;
    if (route !== undefined) {
      span.updateName(`${request.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    span.setAttribute('http.response.status_code', reply.statusCode);
    // The client's address, behind a trusted proxy too (forwarded.ts).
    const client = request.ip;
    if (client) span.setAttribute('client.address', client);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
    done();
  });
}
