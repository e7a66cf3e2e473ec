// HTTP load generation in a separate process: wrk (Debian package `wrk`, installed with apt-get when missing and
// running as root) or, failing that, autocannon in a child process. Both rotate through a list of requests and
// report requests/s and latency percentiles.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type LoadTool = 'wrk' | 'autocannon';

export interface HttpRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadOptions {
  baseUrl: string;
  requests: HttpRequest[];
  connections: number;
  seconds: number;
}

export interface LoadResult {
  tool: LoadTool;
  requests: number;
  seconds: number;
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Socket errors and timeouts. */
  socketErrors: number;
  /** Responses with a status >= 400 (wrk) or outside 2xx (autocannon). */
  badStatus: number;
}

const hasWrk = () => spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;

/** The tool to use: wrk when present or installable, else autocannon. */
export async function ensureLoadTool(log: (msg: string) => void, forced?: LoadTool): Promise<LoadTool> {
  if (forced === 'autocannon') return 'autocannon';
  if (hasWrk()) return 'wrk';
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (root && (existsSync('/usr/bin/apt-get') || existsSync('/bin/apt-get'))) {
    log('wrk not found; installing the Debian package (apt-get install -y wrk)...');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = () => spawnSync('apt-get', ['install', '-y', '-q', 'wrk'], { stdio: ['ignore', 2, 2], env });
    if (install().status !== 0) {
      // A fresh machine may have no package lists yet.
      spawnSync('apt-get', ['update', '-q'], { stdio: ['ignore', 2, 2], env });
      install();
    }
    if (hasWrk()) return 'wrk';
    log('could not install wrk');
  }
  if (forced === 'wrk') throw new Error('wrk is not available and could not be installed');
  log('falling back to autocannon (wrk is not available)');
  return 'autocannon';
}

export async function runLoad(tool: LoadTool, options: LoadOptions, workDir: string): Promise<LoadResult> {
  return tool === 'wrk' ? runWrk(options, workDir) : runAutocannon(options, workDir);
}

/** A Lua string literal (wrk embeds LuaJIT: no \u escapes, so anything outside printable ASCII goes as \ddd). */
function lua(value: string): string {
  let out = '"';
  for (const byte of Buffer.from(value, 'utf8')) {
    if (byte === 0x22) out += '\\"';
    else if (byte === 0x5c) out += '\\\\';
    else if (byte >= 0x20 && byte < 0x7f) out += String.fromCharCode(byte);
    else out += `\\${byte}`;
  }
  return `${out}"`;
}

function wrkScript(requests: HttpRequest[]): string {
  const entries = requests.map((r) => {
    const headers = Object.entries(r.headers ?? {})
      .map(([k, v]) => `[${lua(k)}]=${lua(v)}`)
      .join(',');
    return `{${lua(r.method)},${lua(r.path)},{${headers}},${r.body === undefined ? 'nil' : lua(r.body)}}`;
  });
  // Requests are formatted once in init(); request() only rotates. done() prints the numbers as one JSON line.
  return `local raw = {
${entries.join(',\n')}
}
local reqs = {}
local n = 0
local i = 0
init = function(args)
  for k, r in ipairs(raw) do reqs[k] = wrk.format(r[1], r[2], r[3], r[4]) end
  n = #reqs
  i = math.random(n) - 1
end
request = function()
  i = i % n + 1
  return reqs[i]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCHJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;
}

let scriptSerial = 0;

async function runWrk(options: LoadOptions, workDir: string): Promise<LoadResult> {
  const script = join(workDir, `wrk-${++scriptSerial}.lua`);
  await writeFile(script, wrkScript(options.requests));
  const args = [
    '-t1',
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    '--timeout',
    '10s',
    '-s',
    script,
    options.baseUrl,
  ];
  const { stdout, stderr, code } = await capture('wrk', args);
  const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
  if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}): ${stderr.trim() || stdout.trim()}`);
  const r = JSON.parse(line.slice('BENCHJSON '.length)) as Record<string, number>;
  const seconds = r.duration_us! / 1e6;
  return {
    tool: 'wrk',
    requests: r.requests!,
    seconds,
    rps: r.requests! / seconds,
    p50: r.p50! / 1000,
    p90: r.p90! / 1000,
    p99: r.p99! / 1000,
    max: r.max! / 1000,
    socketErrors: r.connect! + r.read! + r.write! + r.timeout!,
    badStatus: r.status!,
  };
}

async function runAutocannon(options: LoadOptions, workDir: string): Promise<LoadResult> {
  const config = join(workDir, `autocannon-${++scriptSerial}.json`);
  await writeFile(config, JSON.stringify(options));
  const child = fileURLToPath(new URL('./autocannon-child.ts', import.meta.url));
  const { stdout, stderr, code } = await capture(process.execPath, ['--import', 'tsx', child, config]);
  const line = stdout.split('\n').find((l) => l.startsWith('BENCHJSON '));
  if (code !== 0 || !line) throw new Error(`autocannon failed (exit ${code}): ${stderr.trim()}`);
  return JSON.parse(line.slice('BENCHJSON '.length)) as LoadResult;
}

export function capture(
  cmd: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}
