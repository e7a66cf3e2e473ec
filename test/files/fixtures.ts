// Real file bytes for the file tests, built on the fly, and a raw HTTP client for bodies fetch cannot send
// (chunked, cut off half-way), checked against the OpenAPI document like the harness's requests.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { deflateSync } from 'node:zlib';
import { checkExchange } from '../helpers/openapi-check.js';

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A valid 2x2 RGB PNG (signature, IHDR, IDAT, IEND with correct CRCs). */
export function tinyPng(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(2, 0);
  ihdr.writeUInt32BE(2, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  const rows = Buffer.from([0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255]); // filter byte + 2 pixels, twice
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** The start of a PDF document: enough for content detection. */
export function pdfHeader(): Buffer {
  return Buffer.concat([
    Buffer.from('%PDF-1.7\n'),
    Buffer.from([0x25, 0xe2, 0xe3, 0xcf, 0xd3, 0x0a]),
    Buffer.from('1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n'),
  ]);
}

export const utf8Text = () => Buffer.from('Grüße aus Köln! 🌳 Trellis stores text as bytes.\nSecond line.\n', 'utf8');

/** Deterministic pseudo-random bytes (not valid UTF-8 with overwhelming probability). */
export function noise(size: number, seed = 1): Buffer {
  const out = Buffer.alloc(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();
export const reprDigest = (bytes: Buffer) => `sha-256=:${sha256(bytes).toString('base64')}:`;

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * Sends a request with node:http. `chunks` are written one by one (chunked transfer unless a content-length
 * header is given).
 */
export async function rawRequest(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  chunks: Buffer[],
): Promise<RawResponse> {
  const response = await new Promise<RawResponse>((resolve, reject) => {
    const req = http.request(url + path, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
  checkExchange(url, {
    method,
    path,
    status: response.status,
    headers: response.headers,
    text: response.body.toString(),
  });
  return response;
}

/**
 * A large file generated on the fly: block `i` is one fixed block of noise stamped with its index, so no two blocks
 * are equal and nothing large is ever held in memory. The returned buffer is reused: copy it if you keep it.
 */
export function stampedBlocks(blockSize: number, seed: number) {
  const block = noise(blockSize, seed);
  const at = (i: number): Buffer => {
    block.writeUInt32BE(i, 0);
    return block;
  };
  const digest = (count: number): Buffer => {
    const hash = createHash('sha256');
    for (let i = 0; i < count; i++) hash.update(at(i));
    return hash.digest();
  };
  return { at, digest };
}

/** Samples this process's RSS while `work` runs; returns the peak. */
export async function peakRss<T>(work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  try {
    const result = await work();
    return { result, peak: Math.max(peak, process.memoryUsage.rss()) };
  } finally {
    clearInterval(timer);
  }
}
