// What the service needs of tracing (tracing.ts implements it with the OpenTelemetry SDK), typed with the
// OpenTelemetry API alone so that importing this costs nothing.
import type { Tracer } from '@opentelemetry/api';

export interface Tracing {
  tracer: Tracer;
  /**
   * Runs `work` inside a client span `name` (a SQL statement, a blob store call), a child of the active request's
   * span; outside a traced request, just runs it.
   */
  call<T>(name: string, attributes: Record<string, string>, work: () => Promise<T>): Promise<T>;
  /** Sends the spans ended so far. */
  flush(): Promise<void>;
  /** Sends what is left and stops. */
  shutdown(): Promise<void>;
}
