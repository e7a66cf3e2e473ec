// Requests as the metrics see them: a Fastify hook that counts and times every answered request by its route's
// template.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PromMetrics } from '../metrics/registry.js';
import type { App } from './types.js';

/** The routes whose 429 is a login's back-off (domain/accounts/throttle.ts). */
const LOGIN_ROUTES = new Set(['/token', '/change-password']);

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];

/** Installs the hook on `app`; call before the routes are registered. */
export function measureRequests(app: App, metrics: PromMetrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    answered(request, reply, metrics);
    done();
  });
}

function answered(request: FastifyRequest, reply: FastifyReply, metrics: PromMetrics): void {
  // The template ('/:id'), never the path itself: a path holds ids.
  const route = request.routeOptions.url ?? 'unmatched';
  const status = reply.statusCode;
  metrics.request(
    { route, method: request.method, statusClass: STATUS_CLASSES[Math.floor(status / 100) - 1] ?? 'other' },
    reply.elapsedTime / 1000,
  );
  if (status === 429) {
    metrics.tooManyRequests.labels(route).inc();
    if (LOGIN_ROUTES.has(route)) metrics.loginBackoffs.inc();
  }
}
