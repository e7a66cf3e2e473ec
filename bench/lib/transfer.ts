// A streaming HTTP client for the file scenarios, in its own process:
//   node --import tsx bench/lib/transfer.ts '<json>'
// json: {steps: [{method, url, headers, file?, start?, end?}]}, run one after the other on one keep-alive
// connection. A step with `file` uploads that file (or its byte range [start, end)) as the body, streamed; any
// other step sends no body. Response bodies are read and discarded. In a url, "{location}" is replaced by the
// Location header of the latest response that had one (resumable uploads: the upload URL of the first answer).
// Prints one line "BENCHJSON {steps: [{status, bytes, sent, seconds, body, location}], seconds}"; `body` holds the
// first bytes of each response, for diagnostics. A step that fails (status >= 400) ends the sequence.
import { createReadStream, statSync } from 'node:fs';
import { Agent, request } from 'node:http';

export interface Step {
  method: string;
  url: string;
  headers: Record<string, string>;
  file?: string;
  start?: number;
  end?: number;
}

interface StepResult {
  status: number;
  bytes: number;
  sent: number;
  seconds: number;
  body: string;
  location: string | null;
}

const job = JSON.parse(process.argv[2]!) as { steps: Step[] };
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function run(step: Step, location: string | null): Promise<StepResult> {
  const headers: Record<string, string | number> = { ...step.headers };
  let sent = 0;
  if (step.file) {
    const start = step.start ?? 0;
    const end = step.end ?? statSync(step.file).size;
    sent = end - start;
    headers['content-length'] = sent;
  } else if (step.method !== 'GET' && step.method !== 'HEAD') headers['content-length'] = 0;
  const url = location ? step.url.replace('{location}', location) : step.url;
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    let responded = false;
    const req = request(url, { method: step.method, headers, agent }, (res) => {
      responded = true;
      let bytes = 0;
      let head = '';
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (head.length < 500) head += chunk.subarray(0, 500 - head.length).toString('latin1');
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          bytes,
          sent,
          seconds: Number(process.hrtime.bigint() - started) / 1e9,
          body: head,
          location: typeof res.headers.location === 'string' ? res.headers.location : null,
        }),
      );
      res.on('error', reject);
    });
    // A server that answers before reading the whole body (an error) makes the rest of the upload fail: the
    // response is what counts then.
    req.on('error', (error) => {
      if (!responded) reject(error);
    });
    if (step.file) {
      const end = step.end === undefined ? undefined : step.end - 1; // createReadStream's end is inclusive
      createReadStream(step.file, { start: step.start ?? 0, end, highWaterMark: 1 << 20 }).pipe(req);
    } else req.end();
  });
}

const steps: StepResult[] = [];
let location: string | null = null;
for (const step of job.steps) {
  const result = await run(step, location);
  steps.push(result);
  location = result.location ?? location;
  if (result.status >= 400) break;
}
agent.destroy();
process.stdout.write(`BENCHJSON ${JSON.stringify({ steps, seconds: steps.reduce((s, r) => s + r.seconds, 0) })}\n`);
