// GET /principals: parses the query (an identifier, or ids) and makes one call into the domain.
import { checkLookupText, MAX_PRINCIPAL_IDS } from '../../domain/accounts/principals.js';
import type { PrincipalQuery } from '../../domain/accounts/types.js';
import { Problem } from '../../errors.js';
import { parseElementId } from '../../values.js';
import { JSON_TYPE } from '../reply.js';
import { operation, resource } from '../resource.js';
import type { RouteDeps } from '../route-deps.js';
import { principalsSchema } from '../schemas/principals.js';
import type { App } from '../types.js';

/** The query string as the domain takes it, or the problem it is (reported after the credentials). */
function queryOf(query: { identifier?: unknown; id?: unknown }): PrincipalQuery | Problem {
  try {
    const { identifier, id } = query;
    if ((identifier === undefined) === (id === undefined))
      throw new Problem('bad-content', "Give exactly one of 'identifier' or 'id'.");
    if (identifier !== undefined) {
      if (typeof identifier !== 'string') throw new Problem('bad-content', "Give 'identifier' once.");
      return { identifier: checkLookupText(identifier) };
    }
    const texts = Array.isArray(id) ? id : [id];
    if (texts.length > MAX_PRINCIPAL_IDS)
      throw new Problem('bad-content', `At most ${MAX_PRINCIPAL_IDS} ids may be asked for at once.`);
    const ids = texts.map((text) => parseElementId(text));
    if (ids.some((parsed) => parsed === null)) throw new Problem('bad-content', "Every 'id' must be a UUID.");
    return { ids: ids as NonNullable<(typeof ids)[number]>[] };
  } catch (problem) {
    if (problem instanceof Problem) return problem;
    throw problem;
  }
}

export default async function principalRoutes(app: App, { services }: RouteDeps) {
  resource(app, '/principals', {
    GET: operation(principalsSchema, async (request, reply) => {
      const credentials = services.accounts.credentials(request.headers.authorization);
      const items = await services.principals.lookup(credentials, queryOf(request.query));
      return reply.code(200).type(JSON_TYPE).send(JSON.stringify({ items }));
    }),
  });
}
