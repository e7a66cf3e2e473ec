// `/<id>/file`: direct upload (POST/PUT), download (GET/HEAD, one range), removal (DELETE). Thin: each handler
// translates HTTP into one call of the Files service.
//
// Upload bodies are streamed, never parsed: this plugin (an encapsulated context of its own) drops the JSON parsers
// and accepts any Content-Type, or none, without reading the body, so Fastify's bodyLimit does not apply and the
// handler reads `request.raw` itself.
import contentDisposition from 'content-disposition';
import type { FastifyReply } from 'fastify';
import type { Download, FileWriteMode } from '../../domain/files/files.js';
import type { UploadState } from '../../domain/uploads/upload-state.js';
import { parseRange, reprDigestOf } from '../file-headers.js';
import { caller, conditionsOf, created, headerOf, noContent } from '../reply.js';
import { operation, resource, type TypedHandler } from '../resource.js';
import { elementIdOf, parseElementIds, streamBodies } from '../route-context.js';
import type { RouteDeps } from '../route-deps.js';
import { headOf } from '../schemas/common.js';
import { createFileSchema, deleteFileSchema, downloadSchema, replaceFileSchema } from '../schemas/files.js';
import type { App } from '../types.js';
import {
  announceUpload,
  bodyOf,
  controlOf,
  interopOf,
  sendProgress,
  uploadPath,
  withProgress,
} from '../upload-replies.js';
import { fileWriteOf } from '../upload-requests.js';

/** The stored type as a header value; metadata from elsewhere (a backup) that is no `type/subtype` falls back. */
const safeMimeType = (mime: string) => (/^[\x21-\x7e]+\/[\x20-\x7e]+$/.test(mime) ? mime : 'application/octet-stream');

/** ASCII stand-in for clients that ignore `filename*`. */
const asciiFallback = (name: string) => name.replace(/[^\x20-\x7e]/g, '_');

function sendDownload(reply: FastifyReply, download: Download) {
  const { file } = download;
  reply.header('etag', download.etag).header('allow', download.allow);
  if (download.status === 304) return reply.code(304).send();
  const length = download.range ? download.range.end - download.range.start + 1 : file.contentLength;
  reply.headers({
    'content-type': safeMimeType(file.mimeType),
    'content-length': String(length),
    'content-disposition': contentDisposition(download.filename, {
      type: 'attachment',
      fallback: asciiFallback(download.filename),
    }),
    // The bytes are whatever a user uploaded: never let a browser second-guess the declared type.
    'x-content-type-options': 'nosniff',
  });
  if (file.hash.sha256) reply.header('repr-digest', reprDigestOf(file.hash.sha256));
  if (download.range)
    reply.header('content-range', `bytes ${download.range.start}-${download.range.end}/${file.contentLength}`);
  reply.code(download.status);
  return download.stream ? reply.send(download.stream) : reply.send();
}

export default async function fileRoutes(app: App, { services }: RouteDeps) {
  const { files, uploads } = services;

  streamBodies(app);
  parseElementIds(app);

  const download: TypedHandler<typeof downloadSchema> = async (request, reply) => {
    reply.header('accept-ranges', 'bytes');
    const result = await files.download(await caller(services, request), elementIdOf(request), {
      range: parseRange(headerOf(request, 'range')),
      ifRange: headerOf(request, 'if-range'),
      conditions: conditionsOf(request),
      bodyless: request.method === 'HEAD',
    });
    return sendDownload(reply, result);
  };

  const upload = (mode: FileWriteMode) =>
    operation(mode === 'create' ? createFileSchema : replaceFileSchema, async (request, reply) => {
      const id = elementIdOf(request);
      const who = await caller(services, request);
      const interop = interopOf(request);
      const write = fileWriteOf(request, interop);
      if (write.resumable) {
        // Resumable start: 204 with the upload's Location; a 104 first for draft clients. POST onto an element that
        // has a file is a 409 here too; PUT starts a replacement.
        const announce = interop === null ? undefined : (state: UploadState) => announceUpload(reply, state);
        const state = await withProgress(
          uploads.start(
            who,
            id,
            mode,
            bodyOf(request, services.capacity),
            write.fields,
            conditionsOf(request),
            controlOf(request),
            announce,
          ),
        );
        return sendProgress(reply, state, 204, uploadPath(state.id));
      }
      // Spec: a direct upload answers "201 with a Location header", whether it created the file or replaced one (as
      // a completing resumable upload does). The design notes had 204 for a replacement; the spec wins.
      await files.upload(who, id, mode, bodyOf(request, services.capacity), write.fields, conditionsOf(request));
      return created(reply, `/${id}/file`);
    });

  resource(app, '/:id/file', {
    // HEAD before GET, so that Fastify does not add its own HEAD route (which would run the GET and open the file).
    HEAD: operation(headOf(downloadSchema), download),
    GET: operation(downloadSchema, download),
    POST: upload('create'),
    PUT: upload('replace'),
    DELETE: operation(deleteFileSchema, async (request, reply) => {
      await files.remove(await caller(services, request), elementIdOf(request), conditionsOf(request));
      return noContent(reply);
    }),
  });
}
