// Behind a real reverse proxy (issue 52 item 5): Debian's nginx, started by the test on loopback, forwards to the
// service, which trusts only nginx's own address (server.trustedProxies; nginx connects from 127.0.0.5). The clients
// bind addresses of their own in 127/8, so each is a different client to nginx. The registration throttle counts per
// client address behind the proxy, the request log line names the client, and the problem types use the host and
// protocol the proxy forwarded; a direct client (an untrusted peer) that forges the forwarded headers changes
// nothing: it is counted, logged and linked as itself. Both header families are tested, one suite each.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { installDebianPackages } from '../../scripts/debian-packages.js';
import { describeBackends, type Harness } from '../helpers/harness.js';
import { postFrom } from '../helpers/post-from.js';
import { freePort } from '../helpers/process.js';

const PROXY_SOURCE = '127.0.0.5';

/** nginx, from Debian's package, installed the way the other test servers are. */
async function ensureNginx(): Promise<void> {
  if (spawnSync('nginx', ['-v']).status === 0) return;
  await installDebianPackages(['nginx'], (message) => process.stderr.write(`[nginx] ${message}\n`));
}

interface Proxy {
  url: string;
  stop(): Promise<void>;
}

/** nginx in the foreground on 127.0.0.1, proxying everything to `upstream` with the given forwarding lines. */
async function startNginx(upstream: string, forwarding: string[], extraHttp: string[] = []): Promise<Proxy> {
  await ensureNginx();
  const dir = await mkdtemp(join(tmpdir(), 'trellis-nginx-'));
  const port = await freePort();
  await writeFile(
    join(dir, 'nginx.conf'),
    [
      'daemon off;',
      'master_process off;',
      `pid ${join(dir, 'nginx.pid')};`,
      'error_log stderr warn;',
      'events {}',
      'http {',
      '  access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, t)};`),
      ...extraHttp.map((line) => `  ${line}`),
      '  server {',
      `    listen 127.0.0.1:${port};`,
      '    location / {',
      `      proxy_pass ${upstream};`,
      `      proxy_bind ${PROXY_SOURCE};`,
      ...forwarding.map((line) => `      ${line}`),
      '    }',
      '  }',
      '}',
    ].join('\n'),
  );
  const nginx: ChildProcess = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  nginx.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (const started = Date.now(); ; ) {
    const up = await fetch(`${url}/health/live`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (nginx.exitCode !== null || Date.now() - started > 30_000) throw new Error(`nginx did not start: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    async stop() {
      if (nginx.exitCode === null) {
        nginx.kill('SIGTERM');
        await new Promise((resolve) => nginx.once('exit', resolve));
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** POST /register to `url` from the local address `from`, with extra headers. */
const registerFrom = (url: string, from: string, identifier: string, headers: Record<string, string> = {}) =>
  postFrom(
    url,
    '/register',
    from,
    { type: 'User', uniqueUserIdentifier: identifier, password: 'register-secret' },
    headers,
  );

/** A log-in to `url` from `from` with a wrong password. */
const failedLogin = (url: string, from: string, identifier: string, headers: Record<string, string> = {}) =>
  postFrom(url, '/token', from, { type: 'Token', uniqueUserIdentifier: identifier, password: 'wrong-secret' }, headers);

/** The service's log lines, kept for the test to read. */
function capturedLog() {
  const lines: Array<Record<string, any>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, sink) };
}

/** The client addresses of the request log lines of POST /register registering `identifier`... by URL order. */
const registerLines = (lines: Array<Record<string, any>>) =>
  lines.filter((l) => l.msg === 'incoming request' && l.req?.url === '/register').map((l) => l.req.remoteAddress);

const CLIENT_A = '127.0.9.2';
const CLIENT_B = '127.0.9.3';
const DIRECT = '127.0.9.4';

/**
 * The suite for one header family: `forwarding` is what nginx sets, `forged` what a client adds to claim another
 * address, protocol and host (B's, https, evil.example).
 */
function behindNginx(
  title: string,
  forwardedHeader: 'x-forwarded-for' | 'forwarded',
  forwarding: string[],
  forged: Record<string, string>,
  extraHttp: string[] = [],
) {
  const log = capturedLog();
  describeBackends(
    title,
    (h: () => Harness) => {
      let proxy: Proxy;
      beforeAll(async () => {
        proxy = await startNginx(h().url, forwarding, extraHttp);
      }, 300_000);
      afterAll(async () => proxy?.stop());

      it('counts registrations per client behind the proxy, logs the client and links to the forwarded host', async () => {
        log.lines.length = 0;
        const host = { host: 'trellis.example:8443' };
        expect((await registerFrom(proxy.url, CLIENT_A, 'a1@proxy.dev', host)).status).toBe(201);
        expect((await registerFrom(proxy.url, CLIENT_A, 'a2@proxy.dev', host)).status).toBe(201);
        const third = await registerFrom(proxy.url, CLIENT_A, 'a3@proxy.dev', host);
        expect(third.status).toBe(429);
        // The protocol and host the proxy forwarded make {base_url} (no baseUrl is configured).
        expect(third.json.type).toBe('https://trellis.example:8443/error/429/too-many-requests');
        // A claims another address through the proxy: the proxy's part of the chain still names A.
        expect((await registerFrom(proxy.url, CLIENT_A, 'a4@proxy.dev', forged)).status).toBe(429);
        // B, another client behind the same proxy, has its own allowance.
        expect((await registerFrom(proxy.url, CLIENT_B, 'b1@proxy.dev', host)).status).toBe(201);
        expect(registerLines(log.lines)).toEqual([CLIENT_A, CLIENT_A, CLIENT_A, CLIENT_A, CLIENT_B]);
      });

      it('a direct client forging the headers is counted, logged and linked as itself', async () => {
        log.lines.length = 0;
        // Claiming B's address: the registrations count against the direct client's own address.
        expect((await registerFrom(h().url, DIRECT, 'd1@proxy.dev', forged)).status).toBe(201);
        expect((await registerFrom(h().url, DIRECT, 'd2@proxy.dev', forged)).status).toBe(201);
        const third = await registerFrom(h().url, DIRECT, 'd3@proxy.dev', forged);
        expect(third.status).toBe(429);
        expect(third.json.type).toBe(`${h().url}/error/429/too-many-requests`);
        expect(registerLines(log.lines)).toEqual([DIRECT, DIRECT, DIRECT]);
        // B's allowance is untouched: one of two used.
        expect((await registerFrom(proxy.url, CLIENT_B, 'b2@proxy.dev')).status).toBe(201);
        expect((await registerFrom(proxy.url, CLIENT_B, 'b3@proxy.dev')).status).toBe(429);
      });

      it('backs off failed log-ins per client behind the proxy', async () => {
        // Two free failures per address, on identifiers of their own (each identifier's own allowance is larger).
        expect((await failedLogin(proxy.url, CLIENT_A, 'x1@proxy.dev')).status).toBe(401);
        expect((await failedLogin(proxy.url, CLIENT_A, 'x2@proxy.dev')).status).toBe(401);
        expect((await failedLogin(proxy.url, CLIENT_A, 'x3@proxy.dev')).status).toBe(429);
        // B, behind the same proxy, and the direct client claiming A's address are not held back.
        expect((await failedLogin(proxy.url, CLIENT_B, 'x4@proxy.dev')).status).toBe(401);
        const claimingA = { 'x-forwarded-for': CLIENT_A, forwarded: `for=${CLIENT_A}` };
        expect((await failedLogin(h().url, DIRECT, 'x5@proxy.dev', claimingA)).status).toBe(401);
      });
    },
    {
      logger: log.logger,
      settings: {
        server: { trustedProxies: [PROXY_SOURCE], forwardedHeader },
        register: { throttle: { registrationsPerAddress: 2, windowInSeconds: 600 } },
        login: { throttle: { freeFailuresPerAddress: 2 } },
      },
    },
  );
}

behindNginx(
  'behind nginx, X-Forwarded-For',
  'x-forwarded-for',
  [
    'proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
    'proxy_set_header X-Forwarded-Proto https;',
    'proxy_set_header X-Forwarded-Host $http_host;',
  ],
  { 'x-forwarded-for': CLIENT_B, 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' },
);

behindNginx(
  'behind nginx, Forwarded',
  'forwarded',
  // The element nginx adds, after any the client sent (a client's own X-Forwarded-* pass through untouched).
  ['proxy_set_header Forwarded $forwarded_chain;'],
  {
    forwarded: `for=${CLIENT_B};proto=https;host=evil.example`,
    'x-forwarded-for': CLIENT_B,
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'evil.example',
  },
  [
    'map $http_forwarded $forwarded_chain {',
    '  "" "for=$remote_addr;proto=https;host=\\"$http_host\\"";',
    '  default "$http_forwarded, for=$remote_addr;proto=https;host=\\"$http_host\\"";',
    '}',
  ],
);
