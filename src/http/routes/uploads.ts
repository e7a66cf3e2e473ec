// `/upload/<id>`: offset retrieval (HEAD), append and completion (PATCH), cancellation (DELETE) of resumable
// uploads. Thin: each handler translates HTTP into one call of the Uploads service.
//
// Append bodies are streamed, never parsed: like the file routes, this plugin (an encapsulated context of its
// own) drops the JSON parsers and accepts any Content-Type, or none, without reading the body.
import { caller, noContent } from '../reply.js';
import { operation, resource } from '../resource.js';
import { elementIdOf, parseElementIds, streamBodies } from '../route-context.js';
import type { RouteDeps } from '../route-deps.js';
import { appendSchema, cancelUploadSchema, uploadStateSchema } from '../schemas/files.js';
import type { App } from '../types.js';
import { bodyOf, controlOf, interopOf, sendProgress, withProgress } from '../upload-replies.js';
import { appendFieldsOf } from '../upload-requests.js';

export default async function uploadRoutes(app: App, { services }: RouteDeps) {
  const { uploads } = services;

  streamBodies(app);
  parseElementIds(app);

  resource(app, '/upload/:id', {
    HEAD: operation(uploadStateSchema, async (request, reply) => {
      const state = await uploads.state(await caller(services, request), elementIdOf(request));
      if (state.length !== null) reply.header('upload-length', String(state.length));
      // The draft: offsets must not come from a cache.
      reply.headers({ expires: state.expires.toUTCString(), 'cache-control': 'no-store' });
      return sendProgress(reply, state, 204);
    }),
    PATCH: operation(appendSchema, async (request, reply) => {
      const interop = interopOf(request);
      const result = await withProgress(
        uploads.append(
          await caller(services, request),
          elementIdOf(request),
          bodyOf(request, services.capacity),
          appendFieldsOf(request, interop),
          controlOf(request),
        ),
      );
      if (!result.complete) return sendProgress(reply, result.state, 204);
      reply.headers({
        'upload-complete': '?1',
        'upload-offset': String(result.offset),
        location: `/${result.elementId}/file`,
      });
      return reply.code(201).send();
    }),
    DELETE: operation(cancelUploadSchema, async (request, reply) => {
      await uploads.cancel(await caller(services, request), elementIdOf(request));
      return noContent(reply);
    }),
  });
}
