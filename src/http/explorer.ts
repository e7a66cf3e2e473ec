// Serves Trellis Explorer, the browser app built from explorer/ (scripts/build-explorer.ts), under /explorer. It is
// a client of the public API like any other, so this module only hands out files: index.html for /explorer and
// /explorer/, the assets below it (Brotli or gzip, precompressed by the build, when the client accepts them). A
// missing asset is the API's 404 problem; any other unknown path under /explorer/ is the app's own page, answered
// 404, so that a person who follows a stale link sees the explorer's "not found" view rather than JSON.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import { Problem } from '../errors.js';
import type { App } from './types.js';

/** explorer/dist at the root of the checkout, reached the same way from src/http and from the compiled dist/http. */
const BUILT = fileURLToPath(new URL('../../explorer/dist/', import.meta.url));

/**
 * Only the app's own origin: the scripts, styles, API calls (fetch and the uploads' XMLHttpRequests) and images
 * (blob: previews of files) all come from it, so nothing can be pulled from a CDN or injected inline.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' blob: data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

declare module 'fastify' {
  interface FastifySchema {
    /** Leaves the route out of the API's description (the `hide` of @fastify/swagger). */
    hide?: boolean;
  }
}

// Hidden from the API's description: these are files, not API routes.
const hidden = { schema: { hide: true } };

export default async function explorerRoutes(app: App) {
  // Looked at once, when the app is built: a build made later is served after a restart.
  if (!existsSync(join(BUILT, 'index.html'))) {
    const notBuilt = async () => {
      throw new Problem('not-found', 'The explorer is not built: `npm run build` builds it (`npm start` does too).');
    };
    app.get('/explorer', hidden, notBuilt);
    app.get('/explorer/*', hidden, notBuilt);
    return;
  }
  await app.register(fastifyStatic, {
    root: BUILT,
    prefix: '/explorer/',
    index: ['index.html'],
    // One route per built file (the build is fixed while the service runs), so that the catch-all below sees the rest.
    wildcard: false,
    preCompressed: true,
    redirect: false,
    // Set below: the build names every asset by its content, so assets never change and index.html always may.
    cacheControl: false,
    schemaHide: true,
  });
  app.get('/explorer', hidden, (_request, reply) => reply.sendFile('index.html'));
  app.get('/explorer/*', hidden, async (request, reply) => {
    if (request.url.startsWith('/explorer/assets/')) throw new Problem('not-found');
    return reply.code(404).sendFile('index.html');
  });
  app.addHook('onSend', async (request, reply) => {
    if (!request.url.startsWith('/explorer')) return;
    const html = reply.statusCode === 404 && /^text\/html/.test(String(reply.getHeader('content-type') ?? ''));
    if (reply.statusCode !== 200 && reply.statusCode !== 304 && !html) return;
    // The same URL answers Brotli, gzip or plain bytes depending on Accept-Encoding: caches must keep them apart.
    reply.header('vary', 'Accept-Encoding');
    const immutable = request.url.startsWith('/explorer/assets/') && !html;
    reply.header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (!immutable) reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
  });
}
