// Browser tests drive a real Chromium (Debian's package, found or installed by scripts/test.ts) through
// playwright-core, which never downloads a browser of its own.

import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';

// Without the background-networking flags Chromium keeps trying Google's hosts, which this sandbox refuses; as
// root it needs --no-sandbox.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A headless Chromium; fails with what to do when there is none. */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = process.env.TRELLIS_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(executablePath))
    throw new Error(
      `Chromium not found at ${executablePath}: run the tests with npm test (it installs Debian's chromium as root) ` +
        'or set TRELLIS_CHROMIUM to a Chromium executable',
    );
  return chromium.launch({ executablePath, headless: true, args: FLAGS });
}

/**
 * Every URL the page requests from now on, so that a test can check that nothing is loaded from outside the
 * service (no CDN at run time).
 */
export function recordRequests(page: Page): string[] {
  const urls: string[] = [];
  page.on('request', (request) => urls.push(request.url()));
  return urls;
}

/** The requested URLs that are not on `origin` (data: and blob: URLs are the page's own). */
export function foreignRequests(urls: string[], origin: string): string[] {
  return urls.filter((url) => !url.startsWith(`${origin}/`) && !/^(data|blob):/.test(url));
}
