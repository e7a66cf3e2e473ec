// Small helpers shared by the route files: credentials, conditions, JSON bodies with ETags.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Conditions } from '../domain/elements/conditions.js';
import type { Services } from '../services.js';

export const JSON_TYPE = 'application/json; charset=utf-8';

export const caller = (services: Services, request: FastifyRequest) =>
  services.accounts.authenticate(request.headers.authorization);

/** A request header as one string (repeated fields joined with ', '), or undefined when absent. */
export const headerOf = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

export function conditionsOf(request: FastifyRequest): Conditions {
  return { ifMatch: headerOf(request, 'if-match'), ifNoneMatch: headerOf(request, 'if-none-match') };
}

/** Sends a serialised JSON body with its ETag, or 304 when If-None-Match matched. */
export function sendJson(reply: FastifyReply, rendered: { body: string; etag: string | null; notModified?: boolean }) {
  if (rendered.etag) reply.header('etag', rendered.etag);
  if (rendered.notModified) return reply.code(304).send();
  return reply.code(200).type(JSON_TYPE).send(rendered.body);
}

export function created(reply: FastifyReply, location: string) {
  return reply.code(201).header('location', location).send();
}

export const noContent = (reply: FastifyReply) => reply.code(204).send();
