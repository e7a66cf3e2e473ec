// Interim (1xx) responses that Node has no API for. Node 20 writes 100 (writeContinue), 102 (writeProcessing) and
// 103 (writeEarlyHints) only; the resumable-upload draft's `104 Upload Resumption Supported` has to be written
// to the connection by hand, the way writeEarlyHints does internally.
//
// That is safe only while the connection belongs to this response and nothing of the final response has been
// written: with HTTP/1.1 pipelining a queued response has no socket yet (Node assigns it when the earlier
// responses are done), and then, like on HTTP/1.0 connections (which must never see a 1xx, RFC 9110 15.2), no
// interim response is sent. Clients that never see one lose nothing: the final response carries the same fields.
import type { FastifyReply } from 'fastify';

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e]*$/;

/** Writes `HTTP/1.1 <status> <reason>` with `fields` before the final response; false when it cannot be sent. */
export function sendInterim(
  reply: FastifyReply,
  status: number,
  reason: string,
  fields: Record<string, string>,
): boolean {
  if (status < 100 || status > 199 || status === 101) throw new Error(`not an interim status: ${status}`);
  const request = reply.request.raw;
  const response = reply.raw;
  if (request.httpVersionMajor !== 1 || request.httpVersionMinor < 1) return false;
  const socket = response.socket;
  if (!socket || socket.destroyed || !socket.writable || response.headersSent) return false;
  let head = `HTTP/1.1 ${status} ${reason}\r\n`;
  for (const [name, value] of Object.entries(fields)) {
    // Values come from the service, but a CR or LF would split the message: refuse rather than write it.
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new Error(`invalid interim field ${name}`);
    head += `${name}: ${value}\r\n`;
  }
  socket.write(`${head}\r\n`, 'latin1');
  return true;
}
