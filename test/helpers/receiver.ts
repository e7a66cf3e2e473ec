// A webhook receiver on a loopback socket: it records every request (headers and body) and answers each as the
// test's script says (a status, headers, a delay, or a reset of the connection).
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Hit {
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Milliseconds before answering. */
  delayMs?: number;
  /** Destroy the connection instead of answering. */
  reset?: boolean;
}

export interface Receiver {
  url: string;
  hits: Hit[];
  /** The answer to the next requests, in order; after them 200. */
  script: Answer[];
  /** Resolves once `n` requests arrived (or throws after `timeoutMs`). */
  until(n: number, timeoutMs?: number): Promise<Hit[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const hits: Hit[] = [];
  const script: Answer[] = [];
  const waiters: (() => void)[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {}
      hits.push({ headers: req.headers, body, json });
      for (const wake of waiters.splice(0)) wake();
      const answer = script.shift() ?? {};
      const reply = () => {
        if (answer.reset) return req.socket.destroy();
        res.writeHead(answer.status ?? 200, answer.headers ?? {});
        res.end(answer.body ?? 'ok');
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    hits,
    script,
    async until(n, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (hits.length < n) {
        if (Date.now() > deadline) throw new Error(`the receiver got ${hits.length} of ${n} requests`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return hits;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Resolves with what `probe` finds once it finds something (not null), or throws after `timeoutMs`. */
export async function eventually<T>(probe: () => Promise<T | null>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== null) return found;
    if (Date.now() > deadline) throw new Error('not reached in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
