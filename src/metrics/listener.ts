// The metrics' own HTTP listener (metrics.host / metrics.port), apart from the service's port so that what the
// metrics tell (routes, pool, load) is never served to the service's clients. It answers GET /metrics only.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics } from 'prom-client';
import type { PromMetrics } from './registry.js';

export interface MetricsListener {
  /** Where Prometheus scrapes: http://host:port/metrics. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves `metrics` on `host`:`port` (0: a free port), with the process's own metrics (CPU, memory, event loop lag,
 * descriptors) added: those belong to the process, which has one listener.
 */
export async function startMetricsListener(metrics: PromMetrics, host: string, port: number): Promise<MetricsListener> {
  collectDefaultMetrics({ register: metrics.registry });
  // Gauges named like counters, which `promtool check metrics` refuses; nodejs_active_handles and the like (by type)
  // say the same.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
    metrics.registry.removeSingleMetric(name);
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end();
      return;
    }
    metrics.exposition().then(
      ({ text, contentType }) =>
        response.writeHead(200, { 'content-type': contentType }).end(request.method === 'HEAD' ? undefined : text),
      (error: unknown) =>
        response.writeHead(500, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () => closeServer(server),
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

interface Log {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

/**
 * The listener of the service's metrics, when they are on. A listener that cannot start (its port taken) is logged
 * and the service goes on without it: metrics must never keep the service itself from running, and Prometheus sees
 * the target down.
 */
export async function serveMetrics(
  metrics: PromMetrics | null,
  { host, port }: { host: string; port: number },
  logger: Log,
): Promise<MetricsListener | null> {
  if (metrics === null) return null;
  try {
    const listener = await startMetricsListener(metrics, host, port);
    logger.info({ url: listener.url }, 'metrics listening');
    return listener;
  } catch (error) {
    logger.error({ err: error, host, port }, 'the metrics listener could not start (metrics.host, metrics.port)');
    return null;
  }
}
