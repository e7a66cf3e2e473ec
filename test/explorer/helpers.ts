// Shared by the explorer's browser tests: a signed-in page, axe-core, and the service's API beside the browser.

import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import axe from 'axe-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import type { ServiceClient } from '../helpers/harness.js';

export const TOKEN_KEY = 'trellis-explorer-token';

/** Builds the explorer when it is missing or older than its sources. */
export function buildExplorer(): void {
  execFileSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../../scripts/build-explorer.ts')], {
    stdio: 'inherit',
  });
}

/** One Chromium for a file's tests, the explorer built first; call the getter once beforeAll has run. */
export function sharedBrowser(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    buildExplorer();
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => browser!;
}

/** A fresh user per call, with a unique e-mail at `domain` (the suites share one service). */
export function uniqueUsers(service: () => ServiceClient, domain: string) {
  let n = 0;
  return (name: string) => {
    n += 1;
    return namedUser(service(), `${name.toLowerCase()}${n}@${domain}`, `${name} ${n}`);
  };
}

/** Polls until the assertion holds (vitest's default of one second is short for a browser). */
export const eventually = <T>(value: () => T | Promise<T>, timeout = 15_000) =>
  expect.poll(value, { timeout, interval: 100 });

/** A page in its own context, signed in with `token` (kept as the explorer keeps it), errors collected. */
export async function signedInPage(
  browser: Browser,
  url: string,
  token: string | null,
  viewport = { width: 1280, height: 900 },
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(`${url}/explorer/`);
  if (token !== null)
    await page.evaluate(([key, value]) => (globalThis as any).localStorage.setItem(key, value), [TOKEN_KEY, token]);
  return { context, page, errors };
}

/** Opens an element's view and waits for its heading. */
export async function openElement(page: Page, url: string, id: string, name: string): Promise<void> {
  await page.goto(`${url}/explorer/#/${id}`);
  await page.getByRole('heading', { name, level: 1 }).waitFor();
  await eventually(() => page.getByText('Loading…').count()).toBe(0);
}

/** Tries to leave an element with an unsaved edit through Browse, is asked, and stays. */
export async function leaveAndStay(page: Page): Promise<void> {
  let asked = '';
  page.once('dialog', (dialog) => {
    asked = dialog.message();
    void dialog.dismiss();
  });
  await page.getByRole('link', { name: 'Browse' }).click();
  await eventually(() => asked).toContain('unsaved changes');
}

/** Fails on any axe-core violation on the page as it is. */
export async function expectAccessible(page: Page, view: string): Promise<void> {
  // Evaluated over the DevTools protocol, which the page's Content-Security-Policy does not restrict.
  await page.evaluate(axe.source);
  const results: { violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] } =
    await page.evaluate(() => (globalThis as any).axe.run());
  const found = results.violations.map(
    (v) => `${view}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
  expect(found).toEqual([]);
}

/** A registered user with a name and a token. */
export async function namedUser(h: ServiceClient, email: string, name: string) {
  const password = 'correct horse battery staple';
  const registered = await h.request('POST', '/register', {
    body: { type: 'User', uniqueUserIdentifier: email, password, data: { name } },
  });
  expect(registered.status).toBe(201);
  const token = await h.request('POST', '/token', { body: { type: 'Token', uniqueUserIdentifier: email, password } });
  expect(token.status).toBe(201);
  return { id: registered.headers.get('location')!.slice(1), token: token.json.token as string, email, password, name };
}

/** Creates an element through the API and returns its id. */
export async function create(h: ServiceClient, token: string, body: unknown, parent?: string): Promise<string> {
  const answer = await h.request('POST', parent ? `/${parent}` : '/', { token, body });
  expect(answer.status).toBe(201);
  return answer.headers.get('location')!.split('/')[1]!;
}
