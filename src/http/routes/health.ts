// The probes of load balancers and orchestrators: GET /health/live and GET /health/ready. They take no credentials
// (an Authorization header is not looked at), are logged only at warn level and above, and cost the database at
// most one small statement in a while (health/readiness.ts).
import { Problem } from '../../errors.js';
import { sendProblem } from '../problems.js';
import { JSON_TYPE } from '../reply.js';
import { operation, resource } from '../resource.js';
import type { RouteDeps } from '../route-deps.js';
import { livenessSchema, readinessSchema } from '../schemas/health.js';
import type { App } from '../types.js';

/** Seconds a client of a 503 is asked to wait: about one probe interval. */
const RETRY_AFTER_SECONDS = '1';

const PROBE = { logLevel: 'warn', config: { authorization: 'ignored' } } as const;
const LIVE = JSON.stringify({ status: 'live' });

export default async function healthRoutes(app: App, { config, services }: RouteDeps) {
  resource(app, '/health/live', {
    GET: operation(livenessSchema, async (_request, reply) => reply.type(JSON_TYPE).send(LIVE), PROBE),
  });
  resource(app, '/health/ready', {
    GET: operation(
      readinessSchema,
      async (request, reply) => {
        const { ready, checks } = await services.readiness.report();
        if (ready) return reply.type(JSON_TYPE).send(JSON.stringify({ status: 'ready', checks }));
        const down = Object.entries(checks)
          .filter(([, state]) => state !== 'up')
          .map(([name, state]) => `${name} (${state})`);
        const problem = new Problem(
          'service-unavailable',
          `This instance is not ready: ${down.join(', ')}.`,
          checks, // a member per dependency, as in the 200 answer's `checks`
          { 'retry-after': RETRY_AFTER_SECONDS },
        );
        // Sent, not thrown: the error handler would log every failed probe as a warning.
        return sendProblem(request, reply, problem, config.settings.baseUrl);
      },
      PROBE,
    ),
  });
}
