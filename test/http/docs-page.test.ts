// GET /docs in a real browser: the interactive documentation loads from the service alone (nothing from a CDN), takes
// a pasted token and sends an authenticated request to the running service from the page.

import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { foreignRequests, launchBrowser, recordRequests } from '../helpers/browser.js';
import { describeBackends, userWithToken } from '../helpers/harness.js';

describeBackends('Interactive documentation', (h) => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('loads /docs from the service, takes a token and runs GET /me from the page', async () => {
    const ada = await userWithToken(h(), 'ada@docs.dev');
    // What the server received, seen on its socket.
    const seen: string[] = [];
    const onRequest = (request: { method?: string; url?: string; headers: Record<string, unknown> }) =>
      seen.push(`${request.method} ${request.url} ${request.headers.authorization ?? '-'}`);
    h().app.server.on('request', onRequest);
    const page = await browser.newPage();
    try {
      const requested = recordRequests(page);
      await page.goto(`${h().url}/docs`);
      await page.locator('.swagger-ui .info .title', { hasText: 'Trellis' }).waitFor();

      // Authorize: paste the token into the bearer scheme's field.
      await page.locator('button.authorize').first().click();
      await page.locator('.auth-container input').first().fill(ada.token);
      await page.locator('.auth-btn-wrapper button.authorize').click();
      await page.locator('.auth-btn-wrapper button.btn-done').click();

      // Open GET /me and execute it.
      const operation = page.locator('.opblock', {
        has: page.locator('.opblock-summary-operation-id', { hasText: /^getMe$/ }),
      });
      await operation.locator('.opblock-summary').click();
      await operation.locator('button.execute').click();
      const status = operation.locator('.live-responses-table .response .response-col_status').first();
      await expect.poll(async () => (await status.textContent())?.trim()).toBe('200');
      const body = await operation.locator('.live-responses-table .response-col_description pre').first().textContent();
      expect(JSON.parse(body ?? '')).toMatchObject({ type: 'User', id: ada.id });

      expect(seen).toContain(`GET /me Bearer ${ada.token}`);
      expect(requested.length).toBeGreaterThan(2);
      expect(foreignRequests(requested, new URL(h().url).origin)).toEqual([]);
    } finally {
      h().app.server.off('request', onRequest);
      await page.close();
    }
  });
});
