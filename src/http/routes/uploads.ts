// `/upload/<id>`: offset retrieval (HEAD), append and completion (PATCH), cancellation (DELETE) of resumable
// uploads. Thin: each handler translates HTTP into one call of the Uploads service.
//
// Append bodies are streamed, never parsed: like the file routes, this plugin (an encapsulated context of its
// own) drops the JSON parsers and accepts any Content-Type, or none, without reading the body.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { uploadCompleteValue } from '../../domain/uploads/upload-fields.js';
import type { RouteDeps } from '../app.js';
import { caller, headerOf, noContent } from '../reply.js';
import { resource } from '../resource.js';
import { rejectNonUuidIds, streamBodies } from '../route-context.js';
import type { App } from '../types.js';
import { bodyOf, controlOf, interopOf, sendProgress } from '../upload-replies.js';

type WithId = FastifyRequest<{ Params: { id: string } }>;

export default async function uploadRoutes(app: App, { services }: RouteDeps) {
  const { uploads } = services;

  streamBodies(app);
  rejectNonUuidIds(app);

  resource(app, '/upload/:id', {
    HEAD: async (request: FastifyRequest, reply: FastifyReply) => {
      const r = request as WithId;
      const state = await uploads.state(await caller(services, r), r.params.id);
      if (state.length !== null) reply.header('upload-length', String(state.length));
      // The draft: offsets must not come from a cache.
      reply.headers({ expires: state.expires.toUTCString(), 'cache-control': 'no-store' });
      return sendProgress(reply, state, 204);
    },
    PATCH: async (request: FastifyRequest, reply: FastifyReply) => {
      const r = request as WithId;
      const interop = interopOf(r);
      const result = await uploads.append(
        await caller(services, r),
        r.params.id,
        bodyOf(r),
        {
          uploadComplete: uploadCompleteValue(
            { uploadComplete: headerOf(r, 'upload-complete'), uploadIncomplete: headerOf(r, 'upload-incomplete') },
            interop,
            true,
          ),
          uploadOffset: headerOf(r, 'upload-offset'),
          uploadLength: headerOf(r, 'upload-length'),
          contentLength: headerOf(r, 'content-length'),
          contentType: headerOf(r, 'content-type'),
          reprDigest: headerOf(r, 'repr-digest'),
          contentDigest: headerOf(r, 'content-digest'),
        },
        controlOf(r, interop),
      );
      if (!result.complete) return sendProgress(reply, result.state, 204);
      reply.headers({
        'upload-complete': '?1',
        'upload-offset': String(result.offset),
        location: `/${result.elementId}/file`,
      });
      return reply.code(201).send();
    },
    DELETE: async (request: FastifyRequest, reply: FastifyReply) => {
      const r = request as WithId;
      await uploads.cancel(await caller(services, r), r.params.id);
      return noContent(reply);
    },
  });
}
