// Trellis Explorer in a real browser (Debian's Chromium through playwright-core) against the real app on a socket:
// serving, sign in, creating and linking elements, the diagram, editing with a validation error, sharing and
// revoking, uploads over the resumable protocol with a forced interruption, search, screenshots and axe-core.
// One user journey, in order: each step builds on the graph the previous ones made. PGlite only: the explorer is a
// client of the API, whose backends the other suites cover.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import axe from 'axe-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foreignRequests, launchBrowser, recordRequests } from '../helpers/browser.js';
import { backendsUnderTest, type Harness, startHarness, userWithToken } from '../helpers/harness.js';

const KiB = 1024;
const settings = {
  // Small chunks, so that a file of a few hundred KiB takes several PATCH requests.
  file: { uploadMinChunkSizeInBytes: 16 * KiB, uploadMaxChunkSizeInBytes: 64 * KiB },
  // Pages of at most 5, so that a handful of nodes makes a second page.
  pageSize: { min: 5, default: 5, max: 5 },
};
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
/** Set to a folder to keep the screenshots (the README's comes from there). */
const SCREENSHOTS = process.env.TRELLIS_EXPLORER_SCREENSHOTS;

/** Polls until the assertion holds (vitest's default of one second is short for a browser). */
const eventually = <T>(value: () => T | Promise<T>, timeout = 15_000) => expect.poll(value, { timeout, interval: 100 });

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('Trellis Explorer in Chromium', () => {
  let h: Harness & { stop(): Promise<void> };
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let requested: string[];
  const consoleErrors: string[] = [];
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    // The browser tests need the built explorer; this builds it only when it is missing or older than its sources.
    execFileSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../../scripts/build-explorer.ts')], {
      stdio: 'inherit',
    });
    const backend = backendsUnderTest().includes('pglite') ? 'pglite' : 'postgres';
    h = await startHarness(backend, { settings });
    browser = await launchBrowser();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    requested = recordRequests(page);
    page.on('console', (message) => {
      // A refused request (a 4xx the test provokes, an aborted PATCH) is logged by Chromium itself.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
        consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
  });

  afterAll(async () => {
    await browser?.close();
    await h?.stop();
  });

  /** Fails on any axe-core finding on the page as it is. */
  async function expectAccessible(view: string): Promise<void> {
    // Evaluated over the DevTools protocol, which the page's Content-Security-Policy does not restrict.
    await page.evaluate(axe.source);
    const results: { violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] } =
      await page.evaluate(() => (globalThis as any).axe.run());
    const serious = results.violations.map(
      (v) => `${view}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
    );
    expect(serious).toEqual([]);
  }

  /** Distinct colours in a PNG, decoded by the browser itself. */
  async function distinctColours(png: Buffer): Promise<number> {
    return page.evaluate(async (base64: string) => {
      const g = globalThis as any;
      // Decoded without fetch: the page's policy allows no data: connections.
      const bytes = Uint8Array.from(g.atob(base64) as string, (c) => c.charCodeAt(0));
      const image = await g.createImageBitmap(new g.Blob([bytes], { type: 'image/png' }));
      const canvas = new g.OffscreenCanvas(image.width, image.height);
      const context2d = canvas.getContext('2d');
      context2d.drawImage(image, 0, 0);
      const { data } = context2d.getImageData(0, 0, image.width, image.height);
      const colours = new Set<number>();
      for (let i = 0; i < data.length; i += 16) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
      return colours.size;
    }, png.toString('base64'));
  }

  /** A screenshot of the view, checked to show more than a blank page. */
  async function screenshot(name: string): Promise<void> {
    const png = await page.screenshot({ fullPage: false });
    expect(await distinctColours(png), `${name} is not blank`).toBeGreaterThan(20);
    if (SCREENSHOTS) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      writeFileSync(join(SCREENSHOTS, `${name}.png`), png);
    }
  }

  const api = (method: string, path: string, token: string, body?: unknown) =>
    h.request(method, path, { token, ...(body === undefined ? {} : { body }) });
  const token = () => page.evaluate(() => (globalThis as any).localStorage.getItem('trellis-explorer-token'));
  const idInHash = () => UUID.exec(new URL(page.url()).hash)?.[0] ?? '';

  it('is served under /explorer: index.html with a strict policy, assets cached for good, unknown paths a 404', async () => {
    for (const path of ['/explorer', '/explorer/']) {
      const res = await h.request('GET', path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.text).toContain('<main id="main"');
    }
    const index = (await h.request('GET', '/explorer/')).text;
    const script = /src="(\/explorer\/assets\/[^"]+\.js)"/.exec(index)![1]!;
    const asset = await h.request('GET', script);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await h.request('HEAD', '/explorer')).status).toBe(200);
    // A missing asset is the API's problem; any other unknown path is the app's page (its own "not found" view).
    const missing = await h.request('GET', '/explorer/assets/missing.js');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ status: 404, type: expect.stringMatching(/\/error\/404\/not-found$/) });
    expect(missing.headers.get('cache-control')).toBe('no-cache, private');
    const page404 = await h.request('GET', '/explorer/nothing-here');
    expect(page404.status).toBe(404);
    expect(page404.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page404.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(page404.text).toContain('<main id="main"');
  });

  it('signs in: register, log out (the token is deleted), log in again, and who am I', async () => {
    await page.goto(`${h.url}/explorer/`);
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    await expectAccessible('sign in');
    await screenshot('sign-in');

    const register = page.getByRole('form', { name: 'Register' });
    await register.getByLabel('Email').fill('ada@explorer.test');
    await register.getByLabel('Name (optional)').fill('Ada');
    await register.getByLabel('Password').fill('correct horse battery');
    await register.getByRole('button', { name: 'Register and log in' }).click();
    await page.getByRole('heading', { name: 'Browse' }).waitFor();
    await eventually(() => page.locator('#who').textContent()).toContain('ada@explorer.test');
    const first = await token();
    expect(first).toMatch(/^secret-token:/);
    expect((await api('GET', '/me', first)).json.data.name).toBe('Ada');

    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('form', { name: 'Log in' }).waitFor();
    expect(await token()).toBeNull();
    expect((await api('GET', '/me', first)).status).toBe(401);

    const login = page.getByRole('form', { name: 'Log in' });
    await login.getByLabel('Email').fill('ada@explorer.test');
    await login.getByLabel('Password').fill('wrong password');
    await login.getByRole('button', { name: 'Log in' }).click();
    await eventually(() => login.getByRole('alert').textContent()).toBe('The email or the password is not right.');
    await login.getByLabel('Password').fill('correct horse battery');
    await login.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Browse' }).waitFor();
    const me = await api('GET', '/me', await token());
    expect(me.status).toBe(200);
    ids.ada = me.json.id;

    await page.getByRole('link', { name: 'Account' }).click();
    await eventually(() => page.locator('#my-id').textContent()).toBe(ids.ada);
  });

  it('creates nodes, a child and a relation, and shows them on the diagram; a click on a node opens and expands it', async () => {
    const createNode = async (type: string, name: string) => {
      await page.getByRole('link', { name: 'Browse' }).click();
      const form = page.getByRole('form', { name: 'New node' });
      await form.getByLabel('Type').fill(type);
      await form.getByLabel('Properties (JSON object)').fill(JSON.stringify({ name }));
      await form.getByRole('button', { name: 'Create node' }).click();
      await page.getByRole('heading', { name }).waitFor();
      return idInHash();
    };
    ids.apollo = await createNode('Project', 'Apollo');
    const child = page.getByRole('form', { name: 'New child' });
    await child.getByLabel('Type').fill('Note');
    await child.getByLabel('Properties of the child').fill('{"name": "Launch plan"}');
    await child.getByRole('button', { name: 'Create child' }).click();
    await page.getByRole('heading', { name: 'Launch plan' }).waitFor();
    ids.plan = idInHash();
    expect(ids.plan).not.toBe(ids.apollo);

    ids.artemis = await createNode('Project', 'Artemis');
    const relation = page.getByRole('form', { name: 'New relation' });
    await relation.getByLabel('Relation type').fill('FOLLOWS');
    await relation.getByLabel('Other element (search by name)').fill(ids.apollo);
    await relation.getByText('Chosen: Apollo').waitFor();
    await relation.getByRole('button', { name: 'Create relation' }).click();
    const related = page.locator('[data-collection="related"]');
    await related.getByRole('link', { name: 'Apollo' }).waitFor();

    // The service has it: Artemis -FOLLOWS-> Apollo, and the plan is Apollo's child.
    const tokenNow = await token();
    const parents = await api('GET', `/${ids.apollo}/parents`, tokenNow);
    const follows = parents.json.relations.find((r: any) => r.type === 'FOLLOWS');
    expect(follows).toMatchObject({ start: ids.artemis, end: ids.apollo });
    ids.follows = follows.id;
    const children = await api('GET', `/${ids.apollo}/children`, tokenNow);
    expect(children.json.nodes.map((n: any) => n.id)).toEqual([ids.plan]);

    // The diagram holds Artemis, Apollo and the labelled relation; the plan is not yet a neighbour.
    const diagramText = page.locator('.diagram-text');
    await eventually(() => diagramText.locator(`li[data-id="${ids.follows}"]`).textContent()).toBe(
      'Artemis —FOLLOWS→ Apollo',
    );
    expect(await diagramText.locator(`li[data-id="${ids.plan}"]`).count()).toBe(0);
    const canvas = page.locator('.diagram-canvas');
    expect(await distinctColours(await canvas.screenshot())).toBeGreaterThan(8);

    // A click on Apollo's node on the canvas opens Apollo and adds its neighbours (the plan) to the picture.
    // Where Apollo's node is, once every collection has loaded and the layout has settled.
    await eventually(() => page.getByText('Loading…').count()).toBe(0);
    await canvas.scrollIntoViewIfNeeded();
    const pointOf = () =>
      page.evaluate((id: string) => {
        const g = globalThis as any;
        const container = g.document.querySelector('.diagram-canvas');
        const position = container._cyreg.cy.getElementById(id).renderedPosition();
        const box = container.getBoundingClientRect();
        return { x: Math.round(box.left + position.x), y: Math.round(box.top + position.y) };
      }, ids.apollo);
    let point = await pointOf();
    await eventually(async () => {
      const before = point;
      point = await pointOf();
      return point.x === before.x && point.y === before.y;
    }).toBe(true);
    await page.mouse.click(point.x, point.y);
    await page.getByRole('heading', { name: 'Apollo' }).waitFor();
    expect(idInHash()).toBe(ids.apollo);
    await diagramText.locator(`li[data-id="${ids.plan}"]`).waitFor({ state: 'attached' });
    expect(await diagramText.locator(`li[data-id="${ids.artemis}"]`).count()).toBe(1);
    await expectAccessible('element');
    await screenshot('element');

    // A deep link opens the element directly.
    await page.goto(`${h.url}/explorer#/${ids.plan}`);
    await page.getByRole('heading', { name: 'Launch plan' }).waitFor();
  });

  it('edits properties: invalid JSON is flagged, a refused change shows its problem details, a valid one is stored', async () => {
    await page.goto(`${h.url}/explorer#/${ids.apollo}`);
    await page.getByRole('heading', { name: 'Apollo' }).waitFor();
    const form = page.getByRole('form', { name: 'Properties' });
    const editor = form.getByLabel('Properties (JSON object)');
    await editor.fill('{"name": "Apollo",');
    expect(await editor.getAttribute('aria-invalid')).toBe('true');
    expect(await form.locator('.json-status').textContent()).toMatch(/^Not valid/);

    await editor.fill('{"name": "Apollo", "created": "yesterday"}');
    await form.getByRole('button', { name: 'Save properties' }).click();
    const alert = form.getByRole('alert');
    // In plain words, without the problem's type address.
    await eventually(() => alert.textContent()).toContain('The service could not accept this.');
    expect(await alert.getAttribute('data-status')).toBe('400');
    expect(await alert.textContent()).toContain("The property 'created' is reserved and cannot be set.");
    expect(await alert.textContent()).not.toContain('/error/');
    expect((await api('GET', `/${ids.apollo}`, await token())).json.data).not.toHaveProperty('phase');

    await editor.fill('{"name": "Apollo", "phase": 2, "crew": ["Armstrong", "Aldrin"]}');
    await form.getByRole('button', { name: 'Save properties' }).click();
    await eventually(async () => (await api('GET', `/${ids.apollo}`, await token())).json.data.phase).toBe(2);
    expect((await api('GET', `/${ids.apollo}`, await token())).json.data.crew).toEqual(['Armstrong', 'Aldrin']);
  });

  it('shares an element with another user, who signs in with a pasted token and sees it, and revokes the grant', async () => {
    const grace = await userWithToken(h, 'grace@explorer.test');
    const other = await context.browser()!.newContext();
    const gracePage = await other.newPage();
    const graceRequests = recordRequests(gracePage);
    await gracePage.goto(`${h.url}/explorer/`);
    const paste = gracePage.getByRole('form', { name: 'Use a token' });
    await paste.getByLabel('Token').fill(grace.token);
    await paste.getByRole('button', { name: 'Use token' }).click();
    await gracePage.getByRole('heading', { name: 'Browse' }).waitFor();
    await gracePage.goto(`${h.url}/explorer#/${ids.apollo}`);
    await gracePage.getByRole('alert').waitFor();
    expect(await gracePage.getByRole('alert').textContent()).toContain('not shared with you');

    await page.goto(`${h.url}/explorer#/${ids.apollo}`);
    const share = page.getByRole('form', { name: 'Share' });
    await share.getByLabel('E-mail or name').fill('grace@explorer.test');
    await share.getByRole('button', { name: 'Add person' }).click();
    await share.getByRole('list', { name: 'People to share with' }).getByRole('listitem').waitFor();
    expect(await share.getByLabel('Access', { exact: true }).inputValue()).toBe('HAS_READ_ACCESS');
    await share.getByRole('button', { name: 'Share', exact: true }).click();
    const revoke = page.getByRole('button', { name: /^Revoke access of .* \(Can view\)$/ });
    await revoke.waitFor();
    expect((await api('GET', `/${ids.apollo}`, grace.token)).status).toBe(200);
    await gracePage.reload();
    await gracePage.getByRole('heading', { name: 'Apollo' }).waitFor();

    await revoke.click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await revoke.waitFor({ state: 'detached' });
    expect((await api('GET', `/${ids.apollo}`, grace.token)).status).toBe(404);
    expect(foreignRequests(graceRequests, h.url)).toEqual([]);
    await other.close();
  });

  it('uploads a file with a dropped connection, resumes from the stored offset; the bytes and digest are right', async () => {
    await page.goto(`${h.url}/explorer#/${ids.plan}`);
    await page.getByRole('heading', { name: 'Launch plan' }).waitFor();
    const lines = Array.from({ length: 12_000 }, (_, i) => `${i},${Math.sin(i).toFixed(6)},stage ${i % 7}`);
    const bytes = Buffer.from(`t,value,stage\n${lines.join('\n')}\n`);
    expect(bytes.length).toBeGreaterThan(4 * 64 * KiB);

    // The second PATCH and every one after it fail as if the connection dropped, until the test lets them through.
    let patches = 0;
    let dropping = true;
    const offsets: string[] = [];
    await page.route('**/upload/*', async (route) => {
      if (route.request().method() === 'PATCH' && ++patches >= 2 && dropping) return route.abort('connectionreset');
      return route.continue();
    });
    page.on('response', (response) => {
      if (response.request().method() === 'HEAD' && response.url().includes('/upload/'))
        offsets.push(response.headers()['upload-offset'] ?? '');
    });
    await page
      .locator('input[type=file]')
      .setInputFiles({ name: 'telemetry.csv', mimeType: 'text/csv', buffer: bytes });
    const state = page.locator('.upload-state');
    await eventually(() => state.getAttribute('data-state'), 20_000).toBe('interrupted');
    expect(Number(await page.locator('progress').getAttribute('value'))).toBeLessThan(100);

    dropping = false;
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('[data-file="sha256"]').waitFor();
    await page.unroute('**/upload/*');
    // Resumed, not restarted: the client asked for the offset, which held the first chunk.
    expect(offsets.length).toBeGreaterThan(0);
    expect(Number(offsets.at(-1))).toBeGreaterThanOrEqual(64 * KiB);

    const element = await api('GET', `/${ids.plan}`, await token());
    expect(element.json.file).toMatchObject({
      contentLength: bytes.length,
      extension: 'csv',
      hash: { sha256: sha256(bytes) },
    });
    expect(await page.locator('[data-file="sha256"]').textContent()).toBe(sha256(bytes));
    // Saved under the name it was uploaded with (the service keeps only the extension).
    const [saved] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download' }).click(),
    ]);
    expect(saved.suggestedFilename()).toBe('telemetry.csv');
    const download = await fetch(`${h.url}/${ids.plan}/file`, {
      headers: { authorization: `Bearer ${await token()}` },
    });
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
    // The text preview shows the file's first lines.
    expect(await page.locator('.text-preview').textContent()).toMatch(/^t,value,stage\n0,0\.000000,stage 0\n/);
  });

  it('uploads an image dropped on the drop zone, pauses and resumes it, shows a preview, and cancels another upload', async () => {
    await page.goto(`${h.url}/explorer#/${ids.artemis}`);
    await page.getByRole('heading', { name: 'Artemis' }).waitFor();
    // Every PATCH is held back a little, so that the test can pause between two of them.
    await page.route('**/upload/*', async (route) => {
      if (route.request().method() === 'PATCH') await new Promise((resolve) => setTimeout(resolve, 500));
      // A request the page aborted meanwhile (Pause, Cancel) can no longer be continued.
      return route.continue().catch(() => {});
    });
    const dropped: string = await page.evaluate(async () => {
      const g = globalThis as any;
      // A noisy image: it does not compress, so it takes several chunks.
      const canvas = new g.OffscreenCanvas(320, 320);
      const context2d = canvas.getContext('2d');
      const pixels = context2d.createImageData(320, 320);
      let seed = 12345;
      for (let i = 0; i < pixels.data.length; i += 1) {
        seed = (seed * 1103515245 + 12345) >>> 0;
        pixels.data[i] = i % 4 === 3 ? 255 : seed >>> 24;
      }
      context2d.putImageData(pixels, 0, 0);
      const blob = await canvas.convertToBlob({ type: 'image/png' });
      const transfer = new g.DataTransfer();
      transfer.items.add(new g.File([blob], 'mission.png', { type: 'image/png' }));
      const zone = g.document.querySelector('.drop-zone');
      zone.dispatchEvent(new g.DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
      const bytes = new Uint8Array(await blob.arrayBuffer());
      let binary = '';
      for (const byte of bytes) binary += String.fromCharCode(byte);
      return g.btoa(binary);
    });
    const png = Buffer.from(dropped, 'base64');
    expect(png.length).toBeGreaterThan(64 * KiB); // two PATCH requests at least
    const state = page.locator('.upload-state');
    await eventually(() => state.getAttribute('data-state')).toBe('uploading');
    await page.getByRole('button', { name: 'Pause' }).click();
    await eventually(() => state.getAttribute('data-state')).toBe('paused');
    expect((await api('GET', `/${ids.artemis}`, await token())).json.file).toBeUndefined();
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.locator('[data-file="sha256"]').waitFor({ timeout: 20_000 });
    const element = await api('GET', `/${ids.artemis}`, await token());
    expect(element.json.file).toMatchObject({
      contentLength: png.length,
      mimeType: 'image/png',
      hash: { sha256: sha256(png) },
    });
    const preview = page.getByRole('img', { name: /Preview of the file/ });
    await eventually(() => preview.evaluate((img: any) => img.naturalWidth)).toBe(320);

    // Cancel: the upload is deleted on the service, and the element keeps the file it had.
    let uploadPath = '';
    page.on('response', (response) => {
      const location = response.headers().location ?? '';
      if (location.startsWith('/upload/')) uploadPath = location;
    });
    await page
      .locator('input[type=file]')
      .setInputFiles({ name: 'other.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(300 * KiB, 7) });
    await eventually(() => state.getAttribute('data-state')).toBe('uploading');
    await eventually(() => uploadPath).not.toBe('');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await eventually(() => state.getAttribute('data-state')).toBe('cancelled');
    expect((await h.request('HEAD', uploadPath, { token: await token() })).status).toBe(404);
    expect((await api('GET', `/${ids.artemis}`, await token())).json.file.hash.sha256).toBe(sha256(png));
    await page.unroute('**/upload/*');
  });

  it('searches: a pipeline with examples, results as a list and on the diagram, and the debug timeline', async () => {
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByRole('heading', { name: 'Search', exact: true }).waitFor();
    await page.getByText('Advanced: the query pipeline (JSON)').click();
    const editor = page.getByLabel('Search request (JSON: debug and steps)');
    await page.getByRole('button', { name: 'Cypher path step' }).click();
    expect(JSON.parse(await editor.inputValue()).steps.map((s: any) => s.type)).toEqual([
      'searchengine-query-dsl-mixin',
      'cypher-path-subset',
    ]);

    await editor.fill(
      JSON.stringify({
        debug: true,
        steps: [{ type: 'searchengine-query-dsl-mixin', query: { match: { name: { query: 'Apollo' } } } }],
      }),
    );
    await page.getByRole('button', { name: 'Run search' }).click();
    const results = page.locator('.advanced-results');
    await results.getByRole('link', { name: 'Apollo' }).waitFor();
    expect(await results.locator('li').count()).toBe(1);
    const steps = page.locator('.steps > li');
    expect(await steps.count()).toBe(2);
    expect(await steps.nth(0).locator('.step-name').textContent()).toBe('1. searchengine-query-dsl-mixin');
    expect(await steps.nth(1).locator('.step-name').textContent()).toContain('element-hydration');

    await editor.fill(
      JSON.stringify({
        debug: true,
        steps: [{ type: 'cypher-path-subset', query: 'MATCH path=((a:Project)-[:FOLLOWS]->(b:Project)) RETURN path' }],
      }),
    );
    await page.getByRole('button', { name: 'Run search' }).click();
    await results.getByRole('link', { name: 'Artemis' }).waitFor();
    const diagramText = page.locator('.diagram-text');
    await eventually(() => diagramText.locator(`li[data-id="${ids.follows}"]`).textContent()).toBe(
      'Artemis —FOLLOWS→ Apollo',
    );
    expect(await distinctColours(await page.locator('.diagram-canvas').screenshot())).toBeGreaterThan(8);

    // A malformed query is answered with its problem details beside the editor.
    await editor.fill(JSON.stringify({ steps: [{ type: 'cypher-path-subset', query: 'CREATE (n)' }] }));
    await page.getByRole('button', { name: 'Run search' }).click();
    const refused = page.getByRole('form', { name: 'Pipeline' }).getByRole('alert');
    await eventually(() => refused.getAttribute('data-status')).toBe('400');
    // A failed search leaves no earlier results under its error.
    expect(await results.locator('li').count()).toBe(0);
    await expectAccessible('search');
    await screenshot('search');
  });

  it('browses the index page by page, deletes after a confirmation, and works from the keyboard', async () => {
    for (let i = 1; i <= 4; i += 1)
      await api('POST', '/', await token(), { type: 'Memo', data: { name: `Memo ${i}` } });
    await page.getByRole('link', { name: 'Browse' }).click();
    const index = page.locator('[data-collection="index"]');
    // Which nodes the first page holds depends on their ids: any of them will do.
    await index.locator('li[data-id]').first().waitFor();
    // Two projects, four memos and the session's token (a user owns its tokens; Browse does not list them).
    const total = (await api('GET', '/', await token())).json.totalNodes;
    expect(total).toBe(7);
    expect(await index.locator('.pager span').textContent()).toBe('Page 1 of 2 · 7 in all');
    const firstPage = await index.locator('li[data-id]').count();
    await index.getByRole('button', { name: 'Next page' }).click();
    await eventually(() => index.locator('.pager span').textContent()).toBe('Page 2 of 2 · 7 in all');
    expect(firstPage + (await index.locator('li[data-id]').count())).toBe(6);
    expect(await index.textContent()).not.toContain('Token');
    expect(await index.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await expectAccessible('browse');
    await screenshot('browse');

    // Delete: Cancel keeps the element, Delete removes it (and its file) and shows the element it was in.
    await page.goto(`${h.url}/explorer#/${ids.plan}`);
    await page.getByRole('button', { name: 'Delete element' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('Delete Launch plan?');
    expect(await dialog.getByRole('list').first().textContent()).toMatch(/its file \(\d+(\.\d)? KB\)/);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await api('GET', `/${ids.plan}`, await token())).status).toBe(200);
    await page.getByRole('button', { name: 'Delete element' }).click();
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Apollo' }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/${ids.apollo}`);
    expect((await api('GET', `/${ids.plan}`, await token())).status).toBe(404);

    // Keyboard: the first Tab on a fresh page reaches the navigation.
    await page.goto(`${h.url}/explorer#/`);
    await page.reload();
    await page.getByRole('heading', { name: 'Browse' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement.textContent)).toBe('Browse');

    // A token that stops working (deleted here through the API) is forgotten, and the page offers the sign-in.
    expect((await api('DELETE', '/token', await token())).status).toBe(204);
    await page.reload();
    await page.getByRole('form', { name: 'Log in' }).waitFor();
    expect(await page.getByText('Your sign-in has ended').count()).toBe(1);
    expect(await token()).toBeNull();
  });

  it('loaded nothing from another origin, and nothing failed on the page', () => {
    expect(foreignRequests(requested, h.url)).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
