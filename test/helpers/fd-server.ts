// A service process for the descriptor-exhaustion tests: starts the real server from the environment (settings in
// TRELLIS_TEST_SETTINGS, the object store's credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), prints its
// URL, then on stdin `exhaust` opens descriptors until the process has none left (EMFILE) and `release` closes
// them again. Started under `prlimit --nofile` so that exhausting takes a few thousand opens, not a million.
import { closeSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { validateSettings } from '../../src/config/load.js';
import { startServer } from '../../src/server.js';

const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } = process.env;
const server = await startServer({
  settings: validateSettings(JSON.parse(process.env.TRELLIS_TEST_SETTINGS ?? '{}')),
  runtime: {
    port: 0,
    host: '127.0.0.1',
    dataDir: process.env.DATA_DIR!,
    databaseUrl: process.env.DATABASE_URL ?? null,
    anonymousUserId: null,
    logLevel: 'silent',
    configPath: null,
    s3Credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : null,
  },
});
console.log(JSON.stringify({ url: server.url }));

const held: number[] = [];
/** Opens descriptors until there are none left; true if it got any. */
function grab(): boolean {
  const before = held.length;
  for (;;) {
    try {
      held.push(openSync('/dev/null', 'r'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EMFILE') throw error;
      return held.length > before;
    }
  }
}
// While exhausted, descriptors that something else closes (a finished download's file, a socket) are taken at once,
// so that the requests under test find none.
let topUp: NodeJS.Timeout | null = null;
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'exhaust') {
    grab();
    topUp = setInterval(grab, 2);
    // A descriptor the previous request closes asynchronously (its file stream) may be freed just after the first
    // grab; waiting a little before reporting lets the top-up take it, so the request under test cannot.
    await new Promise((resolve) => setTimeout(resolve, 250));
    grab();
    console.log(JSON.stringify({ exhausted: held.length }));
  } else if (line === 'release') {
    if (topUp) clearInterval(topUp);
    while (held.length > 0) closeSync(held.pop()!);
    console.log(JSON.stringify({ released: true }));
  }
}
await server.close();
