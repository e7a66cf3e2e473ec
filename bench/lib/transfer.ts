// A streaming HTTP client for the file scenarios, in its own process:
//   node --import tsx bench/lib/transfer.ts '<json>'
// json: {method, url, headers, file?}: uploads `file` as the body (streamed), or downloads and discards the
// response body. Prints one line "BENCHJSON {status, bytes, seconds, body}" (body: the first bytes of a small or
// failed response, for diagnostics).
import { createReadStream, statSync } from 'node:fs';
import { request } from 'node:http';

interface Job {
  method: string;
  url: string;
  headers: Record<string, string>;
  file?: string;
}

const job = JSON.parse(process.argv[2]!) as Job;
const headers: Record<string, string | number> = { ...job.headers };
if (job.file) headers['content-length'] = statSync(job.file).size;

const started = process.hrtime.bigint();
const result = await new Promise<{ status: number; bytes: number; body: string }>((resolve, reject) => {
  let responded = false;
  const req = request(job.url, { method: job.method, headers }, (res) => {
    responded = true;
    let bytes = 0;
    let head = '';
    res.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (head.length < 500) head += chunk.subarray(0, 500 - head.length).toString('latin1');
    });
    res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, body: head }));
    res.on('error', reject);
  });
  // A server that answers before reading the whole body (an error) makes the rest of the upload fail: the
  // response is what counts then.
  req.on('error', (error) => {
    if (!responded) reject(error);
  });
  if (job.file) createReadStream(job.file, { highWaterMark: 1 << 20 }).pipe(req);
  else req.end();
});
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const sent = job.file ? statSync(job.file).size : 0;
process.stdout.write(`BENCHJSON ${JSON.stringify({ ...result, sent, seconds })}\n`);
