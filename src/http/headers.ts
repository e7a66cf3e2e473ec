// Headers every response carries (spec "Endpoints"), and the base URL used in problem types.
import type { FastifyRequest } from 'fastify';

export const COMMON_HEADERS: Record<string, string> = {
  'cache-control': 'no-cache, private',
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS',
  'access-control-allow-headers': [
    'Authorization',
    'Content-Type',
    'If-Match',
    'If-None-Match',
    'If-Range',
    'Range',
    'Upload-Complete',
    'Upload-Offset',
    'Upload-Length',
    'Upload-Draft-Interop-Version',
    'Repr-Digest',
    'Content-Digest',
    'Content-Disposition',
    'Last-Event-ID',
  ].join(', '),
  'access-control-expose-headers': [
    'ETag',
    'Location',
    'Upload-Offset',
    'Upload-Limit',
    'Upload-Complete',
    'Upload-Length',
    'Content-Range',
    'Accept-Ranges',
    'Repr-Digest',
    'Content-Disposition',
    'Content-Length',
    'Expires',
    'Allow',
  ].join(', '),
};

export function baseUrlOf(request: FastifyRequest, configured: string | null): string {
  if (configured) return configured;
  // Without a Host (HTTP/1.0 may omit it) the problem types are relative, as on the raw-socket answers.
  return request.headers.host ? `${request.protocol}://${request.host}` : '';
}
