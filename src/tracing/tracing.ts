// Traces over OTLP/HTTP through the OpenTelemetry SDK, when OTEL_EXPORTER_OTLP_ENDPOINT is set (config/load.ts):
// a span per request (a child of an incoming W3C traceparent), per SQL statement and per blob store call. This
// module is loaded only then (services.ts), so that a service without an endpoint loads none of the SDK.
import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Tracing } from './port.js';

/** How long spans are collected before a batch is sent. */
const EXPORT_DELAY_MS = 1000;

let contextManager: AsyncLocalStorageContextManager | null = null;

export function startTracing(url: string): Tracing {
  // The one context manager of the process: spans of a request's statements find the request's span through it.
  if (contextManager === null) {
    contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
  }
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'trellis' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  const tracer = provider.getTracer('trellis');
  return {
    tracer,
    async call<T>(name: string, attributes: Record<string, string>, work: () => Promise<T>): Promise<T> {
      // Only on a request's behalf: background jobs and probes make no traces of their own.
      if (trace.getSpan(context.active())?.isRecording() !== true) return work();
      const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, context.active());
      try {
        return await work();
      } catch (error) {
        failed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message ?? String(error) });
}
