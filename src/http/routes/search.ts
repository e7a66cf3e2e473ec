// POST /search: authenticate, then one call into the search pipeline.

import { serviceUnavailable } from '../../errors.js';
import { caller, JSON_TYPE } from '../reply.js';
import { operation, resource } from '../resource.js';
import type { RouteDeps } from '../route-deps.js';
import { searchSchema } from '../schemas/search.js';
import type { App } from '../types.js';

export default async function searchRoutes(app: App, { services }: RouteDeps) {
  resource(app, '/search', {
    POST: operation(
      searchSchema,
      async (request, reply) => {
        // The queue's wait counts from the request's arrival, authentication included (admission.ts).
        const arrivedAt = performance.now() - reply.elapsedTime;
        const { userId } = await caller(services, request);
        // A search waiting for its turn stops waiting when its client goes away (the answer reaches no one, and a
        // problem rather than an error keeps it out of the error log).
        const gone = new AbortController();
        const onClose = () =>
          gone.abort(serviceUnavailable('The client closed the connection while its search waited.'));
        reply.raw.once('close', onClose);
        try {
          const body = await services.search.run(userId, request.body, gone.signal, arrivedAt);
          return reply.code(200).type(JSON_TYPE).send(body);
        } finally {
          reply.raw.off('close', onClose);
        }
      },
      { config: { readsOnly: true } },
    ),
  });
}
