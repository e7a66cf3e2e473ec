// How the explorer reaches a browser (issue 46, "fast and small"): assets precompressed at build and served with
// Content-Encoding and Vary, no source maps, the diagram library in its own chunk loaded only where a diagram is
// shown, and the app's own 404 view. No database behaviour is involved: PGlite only. The sign-in page's load time
// on an emulated fast 3G link is a row of `npm run bench` (bench/scenarios/explorer.ts), not a test.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, recordRequests } from '../helpers/browser.js';
import { backendsUnderTest, type Harness, startHarness } from '../helpers/harness.js';
import { buildExplorer, expectAccessible, namedUser, signedInPage } from './helpers.js';

const DIST = join(import.meta.dirname, '../../explorer/dist');
const KB = 1024;

describe('Explorer delivery', () => {
  let h: Harness & { stop(): Promise<void> };
  let browser: Browser;

  beforeAll(async () => {
    buildExplorer();
    h = await startHarness(backendsUnderTest().includes('pglite') ? 'pglite' : 'postgres');
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await h?.stop();
  });

  /** The initial script and stylesheet named by index.html. */
  const entry = () => {
    const index = readFileSync(join(DIST, 'index.html'), 'utf8');
    return {
      script: /src="\/explorer\/(assets\/[^"]+\.js)"/.exec(index)![1]!,
      style: /href="\/explorer\/(assets\/[^"]+\.css)"/.exec(index)![1]!,
    };
  };

  it('serves Brotli or gzip by Accept-Encoding with Vary, from files made at build; no source maps', async () => {
    const files = readdirSync(join(DIST, 'assets'));
    expect(files.filter((name) => name.endsWith('.map'))).toEqual([]);
    for (const name of files.filter((file) => file.endsWith('.js')))
      expect(readFileSync(join(DIST, 'assets', name), 'utf8')).not.toContain('sourceMappingURL');
    const { script } = entry();
    const plain = readFileSync(join(DIST, script));
    for (const [accept, encoding, suffix] of [
      ['br, gzip', 'br', '.br'],
      ['gzip', 'gzip', '.gz'],
      ['identity', null, ''],
    ] as const) {
      const answer = await fetch(`${h.url}/explorer/${script}`, { headers: { 'accept-encoding': accept } });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-encoding')).toBe(encoding);
      expect(answer.headers.get('vary')).toMatch(/accept-encoding/i);
      expect(answer.headers.get('content-type')).toMatch(/javascript/);
      expect(answer.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      // fetch decodes the body: the bytes are the script's, whatever the encoding on the wire.
      expect(Buffer.from(await answer.arrayBuffer()).equals(plain)).toBe(true);
      expect(Number(answer.headers.get('content-length'))).toBe(statSync(join(DIST, script + suffix)).size);
    }
    const page = await fetch(`${h.url}/explorer/`, { headers: { 'accept-encoding': 'br' } });
    expect(page.headers.get('content-encoding')).toBe('br');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect((await fetch(`${h.url}/explorer/${script}.map`)).status).toBe(404);
  });

  it('keeps the initial script small: the diagram library is a chunk of its own, loaded only with a diagram', async () => {
    const { script, style } = entry();
    const size = (path: string, suffix: string) => statSync(join(DIST, path + suffix)).size;
    const assets = readdirSync(join(DIST, 'assets')).filter((name) => /\.js$/.test(name));
    const diagram = assets.find((name) => readFileSync(join(DIST, 'assets', name), 'utf8').includes('cytoscape'))!;
    expect(`assets/${diagram}`).not.toBe(script);
    const figures = {
      initialScript: { raw: size(script, ''), br: size(script, '.br'), gzip: size(script, '.gz') },
      stylesheet: { raw: size(style, ''), br: size(style, '.br'), gzip: size(style, '.gz') },
      diagramChunk: {
        raw: size(`assets/${diagram}`, ''),
        br: size(`assets/${diagram}`, '.br'),
        gzip: size(`assets/${diagram}`, '.gz'),
      },
    };
    console.log(`[explorer sizes] ${JSON.stringify(figures)}`);
    expect(figures.initialScript.gzip).toBeLessThanOrEqual(60 * KB);

    // The sign-in and Browse load no diagram; an element view does.
    const ada = await namedUser(h, 'sizes@delivery.test', 'Sizes');
    const { page, context } = await signedInPage(browser, h.url, null);
    const requested = recordRequests(page);
    await page.goto(`${h.url}/explorer/`);
    await page.getByRole('form', { name: 'Log in' }).waitFor();
    await page.evaluate(
      ([key, value]) => (globalThis as any).localStorage.setItem(key, value),
      ['trellis-explorer-token', ada.token],
    );
    await page.goto(`${h.url}/explorer/#/`);
    await page.getByRole('heading', { name: 'Browse' }).waitFor();
    expect(requested.filter((url) => url.includes(diagram))).toEqual([]);
    const id = (await h.request('POST', '/', { token: ada.token, body: { type: 'Note', data: { name: 'N' } } })).headers
      .get('location')!
      .slice(1);
    await page.goto(`${h.url}/explorer/#/${id}`);
    await page.locator('.diagram-canvas').waitFor();
    expect(requested.filter((url) => url.includes(diagram))).toHaveLength(1);
    await context.close();
  });

  it("shows the explorer's own 404 view for unknown routes and paths", async () => {
    const { page, context } = await signedInPage(browser, h.url, null);
    await page.goto(`${h.url}/explorer/#/does-not-exist`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await expectAccessible(page, 'not found');
    const answer = await page.goto(`${h.url}/explorer/nope`);
    expect(answer!.status()).toBe(404);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await page.getByRole('link', { name: 'Go to Browse' }).click();
    await page.getByRole('form', { name: 'Log in' }).waitFor();
    await context.close();
  });
});
