// Who the client is behind a reverse proxy (`server.trustedProxies`, `server.forwardedHeader`). Only a request whose
// peer is a trusted proxy has its forwarded headers believed, and then only the proxies' part of them: the chain of
// addresses is walked from the nearest hop, and the client is the first address that is not a trusted proxy's
// (proxy-addr's rule, as Fastify applies it). `request.ip`, `request.protocol` and `request.host` then say the
// client's address, protocol and host, and everything reads them there: the registration throttle and the log-in
// back-off, the request log lines, the spans, and `{base_url}` when `baseUrl` is not set.
//
// Exactly one family of headers is believed, the one the proxy maintains: a proxy passes the other through as the
// client sent it (nginx forwards a client's `Forwarded` untouched unless told otherwise), so believing both would let
// any client choose its address through a trusted proxy. X-Forwarded-For (with X-Forwarded-Proto and -Host) is
// Fastify's own `trustProxy`; RFC 7239 `Forwarded` is parsed here and handed to the same machinery.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';
import type { Settings } from '../config/schema.js';

type Trust = (address: string, hop: number) => boolean;

export interface ClientAddressing {
  /** Fastify's `trustProxy`: whether the address at a hop is a trusted proxy's (false: none is). */
  trustProxy: Trust | false;
  /** Rewrites a request's forwarded headers into the ones Fastify reads, before it sees the request; null: no need. */
  normalise: ((request: IncomingMessage) => void) | null;
}

export function clientAddressing(settings: Settings['server']): ClientAddressing {
  if (settings.trustedProxies.length === 0) return { trustProxy: false, normalise: null };
  const trust = proxyAddr.compile(settings.trustedProxies);
  if (settings.forwardedHeader === 'x-forwarded-for') return { trustProxy: trust, normalise: null };
  return { trustProxy: trust, normalise: (request) => fromForwarded(request, trust) };
}

const X_FORWARDED = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'] as const;

/**
 * `Forwarded` mode: the X-Forwarded-* headers the client may have sent go, and from a trusted peer the `for=` chain
 * of `Forwarded` becomes X-Forwarded-For, and the `proto=` and `host=` of the element that names the client (the one
 * the outermost trusted proxy added) become X-Forwarded-Proto and -Host. A malformed `Forwarded` is not believed at
 * all: the client is then the peer itself.
 */
function fromForwarded(request: IncomingMessage, trust: Trust): void {
  for (const name of X_FORWARDED) delete request.headers[name];
  const header = request.headers.forwarded;
  const peer = request.socket.remoteAddress;
  if (header === undefined || peer === undefined || !trust(peer, 0)) return;
  const elements = parseForwarded(header);
  if (elements === null || elements.length === 0) return;
  request.headers['x-forwarded-for'] = elements.map((e) => nodeAddress(e.for)).join(', ');
  // The addresses from the peer to the client, both included: the client's element is the last one walked.
  const walked = proxyAddr.all(request, trust).length;
  const client = elements[elements.length - (walked - 1)];
  if (client === undefined) return;
  if (client.proto !== undefined && /^https?$/i.test(client.proto))
    request.headers['x-forwarded-proto'] = client.proto.toLowerCase();
  if (client.host !== undefined && HOST.test(client.host)) request.headers['x-forwarded-host'] = client.host;
}

/** A Host header's value: a name, an IPv4 address or a bracketed IPv6 one, and an optional port. */
const HOST = /^(?:[A-Za-z0-9._~!$&'()*+,;=-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** The address of a `for=` node (RFC 7239 section 6), without its port; 'unknown' for one without an address. */
function nodeAddress(node: string | undefined): string {
  if (node === undefined) return 'unknown';
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::[0-9A-Za-z_.-]+)?$/.exec(node)?.[1];
  if (v6 !== undefined && isIP(v6) === 6) return v6;
  const v4 = /^([0-9.]+)(?::[0-9A-Za-z_.-]+)?$/.exec(node)?.[1];
  // 'unknown' and obfuscated identifiers (`_hidden`) name no address.
  return v4 !== undefined && isIP(v4) === 4 ? v4 : 'unknown';
}

type Element = { for?: string; proto?: string; host?: string };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;

/**
 * RFC 7239's `Forwarded` (section 4): elements separated by commas, each a list of `name=value` pairs separated by
 * semicolons, a value a token or a quoted string. Null when the header does not follow the grammar, or names a
 * parameter twice in one element.
 */
export function parseForwarded(header: string): Element[] | null {
  const elements: Element[] = [];
  let rest = header;
  let element: Record<string, string> = {};
  for (;;) {
    rest = rest.replace(/^[ \t]+/, '');
    const name = TOKEN.exec(rest)?.[0];
    if (name === undefined || rest[name.length] !== '=') return null;
    rest = rest.slice(name.length + 1);
    const value = leadingValue(rest);
    if (value === null) return null;
    rest = rest.slice(value.length);
    const key = name.toLowerCase();
    if (key in element) return null;
    element[key] = value.text;
    rest = rest.replace(/^[ \t]+/, '');
    if (rest === '') break;
    const separator = rest[0];
    rest = rest.slice(1);
    if (separator === ',') {
      elements.push(toElement(element));
      element = {};
    } else if (separator !== ';') return null;
  }
  elements.push(toElement(element));
  return elements;
}

/** The token or quoted string at the start of `text`: its length there and its value. */
function leadingValue(text: string): { length: number; text: string } | null {
  if (text[0] !== '"') {
    const token = TOKEN.exec(text)?.[0];
    return token === undefined ? null : { length: token.length, text: token };
  }
  let value = '';
  for (let i = 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') return { length: i + 1, text: value };
    if (c === '\\') {
      i++;
      if (i >= text.length) return null;
      value += text[i];
    } else value += c;
  }
  return null;
}

const toElement = (e: Record<string, string>): Element => ({ for: e.for, proto: e.proto, host: e.host });
