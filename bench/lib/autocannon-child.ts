// The autocannon fallback of bench/lib/load.ts, in its own process so that the load generator never shares an
// event loop with the orchestrator:  node --import tsx bench/lib/autocannon-child.ts <options.json>
// Prints one line "BENCHJSON {LoadResult}".
import { readFileSync } from 'node:fs';
import type { HttpRequest, LoadOptions, LoadResult } from './load.js';

interface AutocannonResult {
  requests: { total: number };
  duration: number;
  latency: { p50: number; p90: number; p99: number; max: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>;

const options = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as LoadOptions;
// autocannon ships no type declarations; a non-literal specifier keeps TypeScript from looking for them.
const specifier = 'autocannon';
const autocannon = ((await import(specifier)) as { default: Autocannon }).default;

let next = Math.floor(Math.random() * options.requests.length);
const result = await autocannon({
  url: options.baseUrl,
  connections: options.connections,
  duration: options.seconds,
  timeout: 10,
  requests: [
    {
      // One request template whose method, path, headers and body rotate through the list.
      setupRequest: (request: Record<string, unknown>) => {
        const r: HttpRequest = options.requests[next++ % options.requests.length]!;
        return { ...request, method: r.method, path: r.path, headers: r.headers ?? {}, body: r.body };
      },
    },
  ],
});

const out: LoadResult = {
  tool: 'autocannon',
  requests: result.requests.total,
  seconds: result.duration,
  rps: result.requests.total / result.duration,
  p50: result.latency.p50,
  p90: result.latency.p90,
  p99: result.latency.p99,
  max: result.latency.max,
  socketErrors: result.errors + result.timeouts,
  badStatus: result.non2xx,
};
process.stdout.write(`BENCHJSON ${JSON.stringify(out)}\n`);
