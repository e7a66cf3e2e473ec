// Error documents, security.txt, instance configuration and graph structure.
import { readFileSync } from 'node:fs';
import type { FastifyRequest } from 'fastify';
import { PROBLEMS, Problem, type ProblemSlug, problemBody } from '../../errors.js';
import { baseUrlOf } from '../headers.js';
import { INTERFACE_VERSION } from '../openapi.js';
import { PROBLEM_CONTENT_TYPE } from '../problems.js';
import { JSON_TYPE } from '../reply.js';
import { operation, resource } from '../resource.js';
import type { RouteDeps } from '../route-deps.js';
import {
  errorDocumentSchema,
  graphStructureSchema,
  instanceConfigurationSchema,
  securityTxtSchema,
} from '../schemas/system.js';
import type { App } from '../types.js';

export default async function systemRoutes(app: App, { config, services }: RouteDeps) {
  const { settings } = config;

  // Every endpoint here is served without credentials, so that a client can read it before it logs in; a token that
  // is sent must still be valid (spec "Authentication" 3: a bad token is 401, never downgraded).
  const checkSentToken = async (request: FastifyRequest) => {
    if (request.headers.authorization !== undefined)
      await services.accounts.authenticate(request.headers.authorization);
  };

  for (const slug of Object.keys(PROBLEMS) as ProblemSlug[]) {
    const { status } = PROBLEMS[slug];
    resource(app, `/error/${status}/${slug}`, {
      GET: operation(errorDocumentSchema(slug, status), async (request, reply) => {
        await checkSentToken(request);
        return reply
          .type(PROBLEM_CONTENT_TYPE)
          .send(JSON.stringify(problemBody(baseUrlOf(request, settings.baseUrl), slug)));
      }),
    });
  }

  // Read once at start-up (config validation already checked that it is readable).
  const securityTxt = settings.securityTxt === null ? null : readFileSync(settings.securityTxt, 'utf8');
  resource(app, '/.well-known/security.txt', {
    GET: operation(securityTxtSchema, async (request, reply) => {
      await checkSentToken(request);
      if (securityTxt === null) throw new Problem('not-found', 'This instance publishes no security.txt.');
      return reply.type('text/plain; charset=utf-8').send(securityTxt);
    }),
  });

  resource(app, '/instance-configuration', {
    GET: operation(instanceConfigurationSchema, async (request, reply) => {
      await checkSentToken(request);
      if (!settings.instanceConfiguration.enabled)
        throw new Problem('forbidden', 'The instance configuration is not published.');
      const { file } = settings;
      return reply.type(JSON_TYPE).send(
        JSON.stringify({
          version: settings.instanceConfiguration.showVersion ? INTERFACE_VERSION : null,
          pageSize: settings.pageSize,
          // The reference's three keys (the design notes' section 3); the minimum password length shows in refusals.
          register: {
            enabled: settings.register.enabled,
            uniqueIdentifier: settings.register.uniqueIdentifier,
            uniqueIdentifierRegex: settings.register.uniqueIdentifierRegex,
          },
          expression: settings.expression,
          file: {
            maxFileSizeInBytes: file.maxFileSizeInBytes,
            uploadMinChunkSizeInBytes: file.uploadMinChunkSizeInBytes,
            uploadMaxChunkSizeInBytes: file.uploadMaxChunkSizeInBytes,
            uploadChunkDigitsLength: file.uploadChunkDigitsLength,
            uploadExpiresInSecondsAfterFirstRequest: file.uploadExpiresInSecondsAfterFirstRequest,
            expiredUploadCanBeDeletedAfterExpirationInSeconds: file.expiredUploadCanBeDeletedAfterExpirationInSeconds,
          },
        }),
      );
    }),
  });

  resource(app, '/graph-structure', {
    GET: operation(graphStructureSchema, async (request, reply) => {
      await checkSentToken(request);
      return reply.type(JSON_TYPE).send(JSON.stringify(await services.elements.graphStructure()));
    }),
  });
}
