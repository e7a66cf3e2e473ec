// Keeps the OpenAPI document honest: every response the integration tests receive is checked against the document
// the server publishes (its status is listed for the operation, its body matches the schema of its media type, the
// headers the document requires are there), and every JSON request body the server accepted matches the documented
// request body. A mismatch throws, failing the test that made the request. The harness registers the document of
// each server it starts; request helpers that bypass the harness call checkExchange with the server's URL.

import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: imported as ESM, the plugin is the module's `default` property.
const addFormats = addFormatsModule.default;

type Json = Record<string, any>;

export interface Exchange {
  method: string;
  /** The path as sent (a query string is ignored). */
  path: string;
  status: number;
  /** Response headers: a fetch Headers, or node:http's lowercased object. */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The response body as text (empty for none); undefined when the caller did not read it. */
  text?: string;
  /** The JSON request body, when one was sent. */
  requestBody?: unknown;
}

/**
 * Statuses written below the routes (the socket-level answers in problems.ts and body-watch.ts) or by the router
 * for a path or method no route serves: any request may get them, so they belong to no operation.
 */
const TRANSPORT_STATUSES = new Set([408, 431]);
const UNROUTED_STATUSES = new Set([400, 401, 404, 405, 501, 503]);

const mediaOf = (contentType: string | null) =>
  contentType === null ? null : contentType.split(';')[0]!.trim().toLowerCase();

function headerOf(headers: Exchange['headers'], name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  const value = headers[name.toLowerCase()];
  return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
}

interface Operation {
  path: string;
  method: string;
  spec: Json;
}

/** Orders two path templates as the router tries them: at the first segment that differs, static before `{param}`. */
function specificity(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const pa = sa[i]!.startsWith('{') ? 1 : 0;
    const pb = sb[i]!.startsWith('{') ? 1 : 0;
    if (pa !== pb) return pa - pb;
  }
  return 0;
}

/** The browser apps' pages and files (/docs, /explorer): user interfaces, not operations of the interface. */
const isAppPage = (pathname: string) => /^\/(docs|explorer)(\/|$)/.test(pathname);

export class DocumentCheck {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  private readonly compiled = new WeakMap<object, ValidateFunction>();
  private readonly operations: Operation[] = [];
  private readonly paths: Array<{ path: string; pattern: RegExp }> = [];
  private readonly problem: Json;

  constructor(private readonly document: Json) {
    addFormats(this.ajv);
    for (const [path, item] of Object.entries<Json>(document.paths)) {
      const escaped = path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+');
      const pattern = new RegExp(`^${escaped}$`);
      this.paths.push({ path, pattern });
      for (const [method, spec] of Object.entries<Json>(item))
        this.operations.push({ path, method: method.toUpperCase(), spec });
    }
    // Static segments win over parameters, segment by segment, as in the router.
    this.paths.sort((a, b) => specificity(a.path, b.path));
    this.problem = document.components.schemas.Problem;
  }

  private validator(schema: Json): ValidateFunction {
    let validate = this.compiled.get(schema);
    if (!validate) {
      validate = this.ajv.compile(schema);
      this.compiled.set(schema, validate);
    }
    return validate;
  }

  private schemaErrors(schema: Json, value: unknown): string | null {
    const validate = this.validator(schema);
    return validate(value) ? null : this.ajv.errorsText(validate.errors, { dataVar: 'body' });
  }

  /** The object a local `$ref` (#/components/...) points at, or the object itself. */
  private resolved(spec: Json): Json {
    if (typeof spec.$ref !== 'string') return spec;
    return spec.$ref
      .slice(2)
      .split('/')
      .reduce((node: Json, key: string) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], this.document);
  }

  /** The documented operation of a request, if any (the path without its query string). */
  operationOf(method: string, path: string): Operation | null {
    const pathname = new URL(`http://x${path}`).pathname;
    const upper = method.toUpperCase();
    const route = this.paths.find((p) => p.pattern.test(pathname));
    if (!route) return null;
    return this.operations.find((o) => o.path === route.path && o.method === upper) ?? null;
  }

  /** What is wrong with an exchange, by the document; empty when nothing. */
  mismatches(exchange: Exchange): string[] {
    const { method, path, status } = exchange;
    const what = `${method} ${path} answered ${status}`;
    const contentType = headerOf(exchange.headers, 'content-type');
    const media = mediaOf(contentType);
    const hasBody = exchange.text !== undefined && exchange.text.length > 0;
    const parse = (): { value?: unknown; error?: string } => {
      try {
        return { value: JSON.parse(exchange.text!) };
      } catch (e) {
        return { error: `${what} with a ${media} body that is not JSON: ${(e as Error).message}` };
      }
    };
    if (TRANSPORT_STATUSES.has(status) || isAppPage(new URL(`http://x${path}`).pathname)) return [];
    const operation = this.operationOf(method, path);
    if (!operation) {
      if (method.toUpperCase() === 'OPTIONS' && status === 204) return [];
      if (!UNROUTED_STATUSES.has(status)) return [`${what}, but the document has no operation ${method} at this path`];
      if (!hasBody || method.toUpperCase() === 'HEAD') return [];
      if (media !== 'application/problem+json') return [`${what} with ${contentType}, not a problem`];
      const parsed = parse();
      if (parsed.error) return [parsed.error];
      const errors = this.schemaErrors(this.problem, parsed.value);
      return errors ? [`${what}: the problem does not match the Problem schema: ${errors}`] : [];
    }
    const name = `${operation.method} ${operation.path} (${operation.spec.operationId})`;
    const listed: Json | undefined = operation.spec.responses[String(status)];
    if (!listed) return [`${what}, a status the document does not list for ${name}`];
    const response = this.resolved(listed);
    const found: string[] = [];
    for (const [headerName, spec] of Object.entries<Json>(response.headers ?? {}))
      if (this.resolved(spec).required && headerOf(exchange.headers, headerName) === null)
        found.push(`${what} without the header ${headerName} that ${name} documents for ${status}`);
    if (operation.method !== 'HEAD' && hasBody) {
      const content: Json | undefined = response.content;
      // A file download documents any media type (*/*): the bytes are not checked, whatever their type.
      const documented = content && media ? content[media] : undefined;
      if (!content) found.push(`${what} with a body, but ${name} documents none for ${status}`);
      else if (!documented && !content['*/*'])
        found.push(`${what} with ${contentType}, which ${name} does not document for ${status}`);
      else if (documented && (media === 'application/json' || media === 'application/problem+json')) {
        const parsed = parse();
        if (parsed.error) found.push(parsed.error);
        else {
          const errors = this.schemaErrors(documented.schema, parsed.value);
          if (errors) found.push(`${what}: the body does not match the schema of ${name}: ${errors}`);
        }
      }
    }
    // A request the service accepted must be one the document describes.
    const requestSchema = operation.spec.requestBody?.content?.['application/json']?.schema;
    if (status < 300 && exchange.requestBody !== undefined && requestSchema) {
      const errors = this.schemaErrors(requestSchema, exchange.requestBody);
      if (errors) found.push(`${what}, accepting a request body that ${name} does not document: ${errors}`);
    }
    return found;
  }
}

const documents = new Map<string, DocumentCheck>();

/** Checks the exchanges with the server at `origin` against `document` from now on. */
export function registerDocument(origin: string, document: Json): void {
  documents.set(new URL(origin).origin, new DocumentCheck(document));
}

export function forgetDocument(origin: string): void {
  documents.delete(new URL(origin).origin);
}

/** Throws when the exchange with the server at `url` contradicts its document (no document registered: no check). */
export function checkExchange(url: string, exchange: Exchange): void {
  const check = documents.get(new URL(url).origin);
  if (!check) return;
  const found = check.mismatches(exchange);
  if (found.length > 0) throw new Error(`OpenAPI document and service disagree:\n${found.join('\n')}`);
}
