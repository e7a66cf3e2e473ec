// A JSON POST sent from a chosen local address (loopback has all of 127/8): how the tests play several clients.
import { request as httpRequest } from 'node:http';

export interface FromAnswer {
  status: number;
  retryAfter: string | undefined;
  location: string | undefined;
  json: any;
}

/** POSTs `body` as JSON to `path` of the service at `url`, from the local address `from`, with extra headers. */
export function postFrom(
  url: string,
  path: string,
  from: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<FromAnswer> {
  const { hostname, port } = new URL(url);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: hostname,
        port,
        path,
        method: 'POST',
        localAddress: from,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            retryAfter: res.headers['retry-after'] as string | undefined,
            location: res.headers.location,
            json: text ? JSON.parse(text) : undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
