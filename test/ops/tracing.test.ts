// Traces (issue 44, item 3): with an OTLP endpoint configured, a request that carries a W3C traceparent is exported
// over OTLP/HTTP as a server span in that trace, with a child span per SQL statement and per blob store call; every
// log line of the request carries the trace id, with tracing on or off.

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig, validateSettings } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { buildApp } from '../../src/http/app.js';
import type { App } from '../../src/http/types.js';
import { createServices, type Services } from '../../src/services.js';
import { attachFile, backendsUnderTest, freshDatabase, serviceClient, userWithToken } from '../helpers/harness.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}

/** An OTLP/HTTP receiver: collects the spans of every JSON export it is sent. */
async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces' && /json/.test(request.headers['content-type'] ?? '')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const resource of body.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) spans.push(...(scope.spans ?? []));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;

/** The request log lines (those with a reqId) written since `before`, once there are at least `count` of them. */
async function requestLines(service: Instance, before: number, count: number) {
  for (const started = Date.now(); ; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const lines = service.lines.slice(before).filter((line) => line.reqId !== undefined);
    if (lines.length >= count || Date.now() - started > 5000) return lines;
  }
}

const attribute = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value;

interface Instance {
  url: string;
  services: Services;
  lines: Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** A service on `backend` whose log lines are collected, built the way server.ts builds it. */
async function instance(backend: 'pglite' | 'postgres', otlpTracesUrl: string | null): Promise<Instance> {
  const { db, dispose } = await freshDatabase(backend);
  const dataDir = await mkdtemp(join(tmpdir(), 'trellis-tracing-'));
  const config: Config = {
    settings: validateSettings({ register: { throttle: { enabled: false } } }),
    runtime: {
      s3Credentials: null,
      port: 0,
      host: '127.0.0.1',
      dataDir,
      databaseUrl: backend === 'postgres' ? 'postgres://test' : null,
      anonymousUserId: null,
      logLevel: 'info',
      configPath: null,
      otlpTracesUrl,
    },
  };
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const services = await createServices(config, db, new ManualClock());
  const app: App = await buildApp({ config, services, logger: pino({ level: 'info' }, sink) });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    services,
    lines,
    async stop() {
      await app.close();
      await services.tracing?.shutdown();
      await dispose();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

describe('OTLP endpoint settings', () => {
  it('read once from the standard variables; unset means no tracing', () => {
    expect(loadConfig({}).runtime.otlpTracesUrl).toBeNull();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).runtime.otlpTracesUrl).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://other:4318/traces',
      }).runtime.otlpTracesUrl,
    ).toBe('http://other:4318/traces');
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      'invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL',
    );
  });
});

for (const backend of backendsUnderTest())
  describe(`traces [${backend}]`, () => {
    let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
    let traced: Instance;
    let untraced: Instance;

    beforeAll(async () => {
      receiver = await otlpReceiver();
      traced = await instance(backend, `${receiver.url}/v1/traces`);
      untraced = await instance(backend, null);
    });
    afterAll(async () => {
      await traced?.stop();
      await untraced?.stop();
      await receiver?.close();
    });

    it('exports the request span in the incoming trace, with its SQL and blob store spans as children', async () => {
      const client = serviceClient(traced.url);
      const { token } = await userWithToken(client, 'traced@example.com');
      const created = await client.request('POST', '/', { token, body: { type: 'Note' } });
      const id = created.headers.get('location')!.slice(1);
      await attachFile(client, token, id, Buffer.from('traced bytes'), 'traced.txt');
      expect((await client.request('GET', '/health/ready', { headers: { traceparent: TRACEPARENT } })).status).toBe(
        200,
      );
      const download = await client.request('GET', `/${id}/file`, {
        token,
        headers: { traceparent: TRACEPARENT },
      });
      expect(download.status).toBe(200);
      // The span ends when the response has been handed to the socket, which may be after the client has it.
      let server: OtlpSpan | undefined;
      for (const started = Date.now(); server === undefined && Date.now() - started < 10_000; ) {
        await traced.services.tracing!.flush();
        server = receiver.spans.find((span) => span.traceId === TRACE_ID && span.parentSpanId === PARENT_ID);
        if (server === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      if (server === undefined) throw new Error('no server span in the incoming trace was exported');
      const inTrace = receiver.spans.filter((span) => span.traceId === TRACE_ID);
      expect(server.name).toBe('GET /:id/file');
      expect(server.kind).toBe(2); // SERVER
      expect(attribute(server, 'http.route')?.stringValue).toBe('/:id/file');
      expect(Number(attribute(server, 'http.response.status_code')?.intValue)).toBe(200);
      expect(attribute(server, 'client.address')?.stringValue).toBe('127.0.0.1');
      const children = inTrace.filter((span) => span.parentSpanId === server.spanId);
      const sql = children.filter((span) => span.name.startsWith('sql'));
      expect(sql.length).toBeGreaterThanOrEqual(1);
      for (const span of sql) {
        expect(span.kind).toBe(3); // CLIENT
        expect(attribute(span, 'db.query.text')?.stringValue).toMatch(/\S/);
      }
      expect(children.some((span) => span.name === 'blob open')).toBe(true);
      // The other requests are traces of their own, never this one's.
      expect(receiver.spans.some((span) => span.name === 'POST /' && span.traceId !== TRACE_ID)).toBe(true);
      // Probes make no spans, nor do their statements.
      for (const span of receiver.spans) expect(span.name).not.toMatch(/health/);
      expect(inTrace.every((span) => span === server || span.parentSpanId === server.spanId)).toBe(true);
      // Ids and tokens are never span names.
      for (const span of receiver.spans) expect(span.name).not.toContain(id);
    });

    it('puts the trace id in every log line of the request, tracing on or off', async () => {
      for (const service of [traced, untraced]) {
        const before = service.lines.length;
        const res = await serviceClient(service.url).request('GET', '/no-such-thing', {
          headers: { traceparent: TRACEPARENT },
        });
        expect(res.status).toBe(404);
        const lines = await requestLines(service, before, 2);
        expect(lines.length).toBeGreaterThanOrEqual(2); // incoming request, request completed
        for (const line of lines) expect(line.traceId).toBe(TRACE_ID);
      }
      // Without a traceparent: a trace of its own when tracing is on, no trace id when it is off.
      const before = untraced.lines.length;
      await serviceClient(untraced.url).request('GET', '/no-such-thing');
      const plain = await requestLines(untraced, before, 2);
      expect(plain.length).toBeGreaterThanOrEqual(2);
      for (const line of plain) expect(line.traceId).toBeUndefined();
      const tracedBefore = traced.lines.length;
      await serviceClient(traced.url).request('GET', '/no-such-thing');
      const own = await requestLines(traced, tracedBefore, 2);
      expect(own.length).toBeGreaterThanOrEqual(2);
      expect(new Set(own.map((line) => line.traceId)).size).toBe(1);
      expect(own[0]!.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(own[0]!.traceId).not.toBe(TRACE_ID);
    });

    it('costs nothing when no endpoint is set: no tracing, nothing wrapped for it', () => {
      expect(untraced.services.tracing).toBeNull();
    });
  });
