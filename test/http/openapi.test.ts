// GET /openapi.json: an OpenAPI 3.1 document that a maintained parser accepts, with every route the app serves,
// every endpoint of the spec, the problem-details schema of every slug in the catalogue, the bearer scheme and
// examples. (That every response of the integration suite agrees with it is checked by the harness:
// test/helpers/openapi-check.ts; its own test is at the end.)

import { randomUUID } from 'node:crypto';
import { validate } from '@readme/openapi-parser';
import { expect, it } from 'vitest';
import { PROBLEMS } from '../../src/errors.js';
import { describeBackends, userWithToken } from '../helpers/harness.js';
import { DocumentCheck } from '../helpers/openapi-check.js';

/** The endpoints of the spec ("Endpoints"), as OpenAPI paths. */
const SPEC_ENDPOINTS = [
  'GET /',
  'POST /',
  'GET /{id}',
  'POST /{id}',
  'PUT /{id}',
  'PATCH /{id}',
  'DELETE /{id}',
  'GET /{id}/parents',
  'GET /{id}/children',
  'GET /{id}/related',
  'GET /{id}/file',
  'POST /{id}/file',
  'PUT /{id}/file',
  'DELETE /{id}/file',
  'HEAD /upload/{id}',
  'PATCH /upload/{id}',
  'DELETE /upload/{id}',
  'POST /search',
  'POST /register',
  'POST /change-password',
  'GET /me',
  'POST /token',
  'GET /token',
  'DELETE /token',
  'GET /instance-configuration',
  'GET /graph-structure',
  'GET /.well-known/security.txt',
  ...Object.entries(PROBLEMS).map(([slug, { status }]) => `GET /error/${status}/${slug}`),
];

const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete'];

/** Every operation of the document, as "METHOD /path". */
const operationsOf = (document: any): string[] =>
  Object.entries<any>(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => METHODS.includes(key))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );

describeBackends('OpenAPI document', (h) => {
  it('is served at /openapi.json as OpenAPI 3.1 that @readme/openapi-parser validates', async () => {
    const res = await h().request('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.json.openapi).toBe('3.1.0');
    expect(res.json.info).toMatchObject({ title: 'Trellis', version: 'dev' });
    const result = await validate(structuredClone(res.json));
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.valid).toBe(true);
    // The same document as the one the app builds in-process (and the harness checks responses against).
    expect(res.json).toEqual(JSON.parse(JSON.stringify(h().app.swagger())));
  });

  it('describes every endpoint of the spec and every route the app serves', async () => {
    const document = (await h().request('GET', '/openapi.json')).json;
    const operations = operationsOf(document);
    for (const endpoint of SPEC_ENDPOINTS) expect(operations, endpoint).toContain(endpoint);
    // Every GET also answers HEAD.
    for (const op of operations.filter((o) => o.startsWith('GET ')))
      expect(operations, op).toContain(op.replace('GET', 'HEAD'));
    // The router's own list: every route with a method an operation can have is in the document, or it is one of
    // the refusals resource() registers for the methods a path does not serve (405 with Allow). The browser apps'
    // files (/docs, /explorer) are no operations; OPTIONS, TRACE, CONNECT and WebDAV's methods never are (204, 405,
    // 501).
    const served = servedRoutes(h().app.printRoutes({ commonPrefix: false }));
    const candidates = served.filter(
      (route) => /^(GET|HEAD|POST|PUT|PATCH|DELETE) /.test(route) && !/^\w+ \/(docs|explorer)\b/.test(route),
    );
    expect(candidates.length).toBeGreaterThan(SPEC_ENDPOINTS.length);
    const alice = await userWithToken(h(), 'alice@routes.dev');
    for (const route of candidates.filter((r) => !operations.includes(r))) {
      const [method, path] = route.split(' ') as [string, string];
      const res = await h().request(method, path.replace(/\{\w+\}/g, randomUUID()), { token: alice.token });
      expect([route, res.status]).toEqual([route, 405]);
    }
    // And the other way round.
    for (const op of operations) expect(served, op).toContain(op);
  });

  it('has the problem-details schema of every slug, the bearer scheme, operation ids and examples', async () => {
    const document = (await h().request('GET', '/openapi.json')).json;
    const problem = document.components.schemas.Problem;
    const slugs = problem.anyOf.map((variant: any) => variant.title);
    expect(slugs.sort()).toEqual(Object.keys(PROBLEMS).sort());
    for (const variant of problem.anyOf) {
      const entry = PROBLEMS[variant.title as keyof typeof PROBLEMS];
      expect(variant.properties.status.enum).toEqual([entry.status]);
      expect(variant.properties.title.enum).toEqual([entry.title]);
    }
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    const ids = Object.values<any>(document.paths).flatMap((item) =>
      Object.values<any>(item).map((op) => op.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    // A 404 of an element read lists exactly the not-found slug; a 201 names its Location.
    const read = document.paths['/{id}'].get;
    expect(read.responses['404']).toEqual({ $ref: '#/components/responses/Problem404' });
    const notFound = document.components.responses.Problem404;
    expect(notFound.content['application/problem+json'].schema.title).toBe('not-found');
    // One shared response per status an operation answers (405 and 501 answer methods a path does not serve).
    const statuses = new Set(Object.values(PROBLEMS).map((p) => p.status as number));
    for (const other of [405, 501]) statuses.delete(other);
    expect(Object.keys(document.components.responses).sort()).toEqual([...statuses].map((s) => `Problem${s}`).sort());
    expect(document.paths['/'].post.responses['201'].headers.Location.required).toBe(true);
    expect(document.paths['/'].post.requestBody.content['application/json'].example).toMatchObject({
      type: 'Document',
    });
    expect(read.responses['200'].content['application/json'].example).toMatchObject({ type: 'Document' });
    // Every response documents the headers every response carries.
    expect(read.responses['200'].headers['Cache-Control']).toEqual({ $ref: '#/components/headers/Cache-Control' });
  });

  it('fails an exchange that contradicts it: an unlisted status, a body off its schema, a missing header', async () => {
    const document = (await h().request('GET', '/openapi.json')).json;
    const check = new DocumentCheck(document);
    const alice = await userWithToken(h(), 'alice@openapi.dev');
    const me = await h().request('GET', '/me', { token: alice.token });
    const exchange = { method: 'GET', path: '/me', status: 200, headers: me.headers, text: me.text };
    expect(check.mismatches(exchange)).toEqual([]);
    expect(check.mismatches({ ...exchange, status: 418 }).join()).toMatch(/a status the document does not list/);
    const noData = JSON.stringify({ ...me.json, data: undefined });
    expect(check.mismatches({ ...exchange, text: noData }).join()).toMatch(/does not match the schema of GET \/me/);
    const headers = new Headers(me.headers);
    headers.delete('etag');
    expect(check.mismatches({ ...exchange, headers }).join()).toMatch(/without the header ETag/);
    // A route the document does not know is a failure unless it answers a problem.
    expect(check.mismatches({ ...exchange, path: '/me/extra' }).join()).toMatch(/no operation GET at this path/);
    // An accepted request body the document does not describe.
    const body = { type: 'Doc', data: { any: ['thing'] } };
    const made = await h().request('POST', '/', { token: alice.token, body });
    const created = { method: 'POST', path: '/', status: made.status, headers: made.headers, text: made.text };
    expect(check.mismatches({ ...created, requestBody: body })).toEqual([]);
    expect(check.mismatches({ ...created, requestBody: { type: 7 } }).join()).toMatch(/does not document/);
  });
});

/**
 * "METHOD /path" for every route in Fastify's printRoutes({ commonPrefix: false }) tree, with `:param` written as
 * OpenAPI's `{param}`.
 */
function servedRoutes(tree: string): string[] {
  const routes: string[] = [];
  const stack: Array<{ depth: number; segment: string }> = [];
  for (const line of tree.split('\n')) {
    const match = /^([\s│]*)[└├]── (.*?)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length;
    while (stack.length > 0 && stack[stack.length - 1]!.depth >= depth) stack.pop();
    stack.push({ depth, segment: match[2]! });
    if (!match[3]) continue;
    const path = stack
      .map((s) => s.segment)
      .join('')
      .replace(/:(\w+)/g, '{$1}');
    for (const method of match[3].split(', ')) routes.push(`${method} ${path}`);
  }
  return routes;
}
