// Registers the methods of one path and answers every other method with 405 + Allow, so that "known path,
// wrong method" never falls through to the 404 handler.
import type { RouteShorthandOptions, RouteHandlerMethod } from 'fastify';
import { Problem } from '../errors.js';
import type { App } from './types.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
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

export interface Handler {
  options?: RouteShorthandOptions;
  handler: RouteHandlerMethod;
}

export function resource(app: App, url: string, methods: Partial<Record<Method, Handler | RouteHandlerMethod>>): void {
  const given = Object.keys(methods) as Method[];
  const supported = new Set<string>(given);
  if (supported.has('GET')) supported.add('HEAD'); // Fastify exposes HEAD for every GET route
  supported.add('OPTIONS');
  const allow = [...ALL.filter((m) => supported.has(m)), 'OPTIONS'].join(', ');
  for (const method of given) {
    const entry = methods[method]!;
    const { options = {}, handler } = typeof entry === 'function' ? { handler: entry } : entry;
    app.route({ ...(options as object), method, url, handler } as Parameters<App['route']>[0]);
  }
  // Every other method Fastify routes (TRACE and QUERY too), refused before the body is read or parsed: the answer
  // is 405 whatever was sent, never a 400 about a body nobody wants.
  const rest = app.supportedMethods.filter((m) => !supported.has(m));
  if (rest.length > 0) {
    const refuse = () => new Problem('method-not-allowed', `Allowed methods: ${allow}.`, {}, { allow });
    app.route({
      method: rest,
      url,
      onRequest: (_request, _reply, done) => done(refuse()),
      handler: async () => {
        throw refuse();
      },
    });
  }
}
