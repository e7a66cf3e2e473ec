// server.trustedProxies is checked once, at start: `trellis serve` with an entry that is no address, CIDR range or
// proxy-addr name stops before it listens, with exit 78 and one line naming the key (the rules are in
// test/unit/config/load.test.ts; the proxy itself in test/http/reverse-proxy.test.ts).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort, runCli } from '../helpers/process.js';

describe('server.trustedProxies at start', () => {
  it('trellis serve refuses a bad entry with exit 78, naming the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trellis-proxies-'));
    try {
      const path = join(dir, 'trellis.yaml');
      await writeFile(path, 'server:\n  trustedProxies: [10.0.0.0/8, "fd00::/129"]\n');
      const env = { DATA_DIR: dir, PORT: String(await freePort()), TRELLIS_CONFIG: path };
      const bad = await runCli(['serve'], env);
      expect(bad.code).toBe(78);
      expect(bad.stderr.trim()).toBe(
        "trellis: invalid configuration: server.trustedProxies: 'fd00::/129' is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal (invalid range on address: fd00::/129)",
      );
      await writeFile(path, 'server:\n  trustedProxies: [10.0.0.0/8, "fd00::/8", loopback]\n');
      const good = await runCli(['config:check'], { TRELLIS_CONFIG: path });
      expect(good.code).toBe(0);
      expect(JSON.parse(good.stdout.slice(0, good.stdout.lastIndexOf('}') + 1)).server).toMatchObject({
        trustedProxies: ['10.0.0.0/8', 'fd00::/8', 'loopback'],
        forwardedHeader: 'x-forwarded-for',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
