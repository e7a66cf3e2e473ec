// The WebhookSender port (domain/webhooks/ports.ts) over node:http and node:https. The host is resolved here and
// every address it gives is checked against the address policy before the connection is made to one of them, so a
// name that resolves elsewhere after the webhook was created (DNS rebinding) gains nothing. Redirects are not
// followed; at most 64 KiB of an answer is read and its first KiB kept, never interpreted.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { DeliveryError, OutboundRequest, SendOutcome, WebhookSender } from '../domain/webhooks/ports.js';
import type { AddressPolicy } from './address-policy.js';

const READ_LIMIT = 64 * 1024;
const KEEP = 1024;

class Blocked extends Error {
  readonly code = 'EBLOCKED';
}

/** How host names are resolved: the system's resolver (dns.lookup, as node:net does), all addresses at once. */
export type Resolve = (host: string, callback: (error: Error | null, found: LookupAddress[]) => void) => void;
const systemResolve: Resolve = (host, callback) => dnsLookup(host, { all: true }, callback);

/** The addresses of `host` the policy lets a call reach, or why none: a lookup for node:net that refuses the rest. */
function guardedLookup(policy: AddressPolicy, resolve: Resolve): LookupFunction {
  return (host, options, callback) => {
    resolve(host, (error, found) => {
      if (error) return callback(error, '', 0);
      const allowed = policy.nameAllowed(host) || found.every((a) => policy.addressAllowed(a.address));
      if (!allowed || found.length === 0)
        return callback(new Blocked(`${host} resolves to an address that may not be called`), '', 0);
      const usable = options.family ? found.filter((a) => a.family === options.family) : found;
      if (usable.length === 0)
        return callback(Object.assign(new Error(`${host}: no address`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      callback(null, usable[0]!.address, usable[0]!.family);
    });
  };
}

function errorOf(error: NodeJS.ErrnoException): DeliveryError {
  const code = error.code ?? '';
  if (code === 'EBLOCKED') return 'blocked-address';
  if (code === 'ETIMEDOUT' || code === 'TIMEOUT') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection-refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || error.message === 'socket hang up') return 'connection-reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return 'dns';
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|ERR_OSSL)/.test(code)) return 'tls';
  return 'network';
}

/**
 * The first KiB of an answer as the delivery log can store it: no U+0000 (which PostgreSQL's text refuses) and no
 * surrogate half left by the cut.
 */
function kept(text: string): string {
  const head = text.slice(0, KEEP).replaceAll('\u0000', '\ufffd');
  return /[\ud800-\udbff]$/.test(head) ? head.slice(0, -1) : head;
}

/** Seconds of a Retry-After header (delta-seconds or an HTTP date), or null. */
export function retryAfterSeconds(value: string | undefined, now: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // An HTTP date (in any of its three forms) names its day and month.
  if (!/[a-z]{3}/i.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

export class HttpSender implements WebhookSender {
  private readonly lookup: LookupFunction;

  constructor(
    private readonly policy: AddressPolicy,
    private readonly timeoutMs: number,
    resolve: Resolve = systemResolve,
  ) {
    this.lookup = guardedLookup(policy, resolve);
  }

  async check(url: string): Promise<string | null> {
    const { hostname } = new URL(url);
    const host = hostname.replace(/^\[|\]$/g, '');
    if (this.policy.nameAllowed(host)) return null;
    if (isIP(host) !== 0) return this.policy.addressAllowed(host) ? null : `${host} may not be called`;
    return new Promise((resolve) => {
      this.lookup(host, { all: true }, (error) => {
        if (!error) resolve(null);
        else if ((error as NodeJS.ErrnoException).code === 'EBLOCKED') resolve(error.message);
        else resolve(`${host} cannot be resolved (${(error as NodeJS.ErrnoException).code ?? error.message})`);
      });
    });
  }

  send(outbound: OutboundRequest): Promise<SendOutcome> {
    const began = performance.now();
    const url = new URL(outbound.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const elapsed = () => Math.round(performance.now() - began);
    const failed = (error: DeliveryError): SendOutcome => ({
      status: null,
      error,
      response: null,
      retryAfterSeconds: null,
      durationMs: elapsed(),
    });
    // A literal address is never looked up, so the policy is applied to it here.
    if (isIP(host) !== 0 && !this.policy.nameAllowed(host) && !this.policy.addressAllowed(host))
      return Promise.resolve(failed('blocked-address'));
    return new Promise((resolve) => {
      let settled = false;
      const finish = (outcome: SendOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const body = Buffer.from(outbound.body, 'utf8');
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        headers: { ...outbound.headers, 'content-length': String(body.length), 'user-agent': 'Trellis-Webhooks' },
        lookup: this.lookup,
        agent: false,
      });
      const timer = setTimeout(() => {
        request.destroy();
        finish(failed('timeout'));
      }, this.timeoutMs);
      let responded = false;
      // Once an answer came, its reading decides (an error of the request is then the cut of a long body).
      request.on('error', (error) => {
        if (!responded) finish(failed(errorOf(error)));
      });
      request.on('response', (response) => {
        responded = true;
        readSome(response).then(
          (text) => {
            const status = response.statusCode ?? 0;
            finish({
              status,
              error: status >= 300 && status < 400 ? 'redirect' : null,
              response: kept(text),
              retryAfterSeconds:
                status === 429 || status === 503
                  ? retryAfterSeconds(response.headers['retry-after'], Date.now())
                  : null,
              durationMs: elapsed(),
            });
            request.destroy();
          },
          (error: NodeJS.ErrnoException) => finish(failed(errorOf(error))),
        );
      });
      request.end(body);
    });
  }
}

/** Up to READ_LIMIT bytes of the answer as text; the rest is not read. */
function readSome(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(chunks).toString('utf8'));
    response.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= READ_LIMIT) {
        response.removeAllListeners('data');
        done();
        response.destroy();
      }
    });
    response.on('end', done);
    response.on('error', reject);
    response.on('aborted', () => reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
  });
}
